// The operator suite's cases (internal to the conformance kit).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ember/Graph.h"
#include "ember/Tensor.h"

namespace ember::conformance {

/// How a case input is filled with seeded random data.
enum class Fill {
  Signed,    ///< floats in [-1, 1); ints in [-10, 10)
  Wide,      ///< floats in [-4, 4); ints in [-100, 100)
  Positive,  ///< floats in [0.5, 2); ints in [1, 10)
  NonZero,   ///< floats in +-[0.5, 2); ints in +-[1, 10)
  SmallInt,  ///< integer values in [-2, 2] (ties and equality happen)
  Bool,      ///< 0 or 1
  Raw,       ///< quantized kinds: raw integers over the kind's whole range
};

/// Builds one case's Function deterministically: the same seed gives the same
/// graph and the same input data, so a case can be rebuilt for each backend.
class CaseBuilder {
 public:
  CaseBuilder(Function& function, uint64_t seed) : function_(function), state_(seed) {}

  /// A model input with random data.
  NodeValue input(const Type& type, Fill fill = Fill::Signed);
  /// A model input with given data (e.g. valid gather indices).
  NodeValue input(Tensor value);
  /// A constant (weights, biases, tables) with random data.
  NodeValue weight(const Type& type, Fill fill = Fill::Signed);
  NodeValue weight(Tensor value);
  /// The node under test; its results become the function outputs.
  Expected<Node*> node(OpKind kind, std::vector<NodeValue> inputs, Attributes attrs = {});

  Tensor random(const Type& type, Fill fill);
  /// Uniform integer in [lo, hi].
  int64_t uniformInt(int64_t lo, int64_t hi);

  const std::vector<std::pair<std::string, Tensor>>& inputs() const { return inputs_; }

 private:
  double uniform();  ///< [0, 1)

  Function& function_;
  uint64_t state_;
  std::vector<std::pair<std::string, Tensor>> inputs_;
};

struct CaseSpec {
  OpKind op;
  std::string name;
  /// Adds the case's nodes; the last node created by CaseBuilder::node is the one under test.
  std::function<Expected<Node*>(CaseBuilder&)> build;
};

/// Every case of the operator suite.
std::vector<CaseSpec> allCases();
/// The cases of the registered vendor ops' examples (VendorCases.cpp).
std::vector<CaseSpec> vendorOpCases();

}  // namespace ember::conformance
