// Parsing of Einsum equations, shared by Einsum's type rule and its lowering.
// Internal to the core (not part of the SDK).
#pragma once

#include <string>
#include <vector>

#include "ember/Error.h"
#include "ember/Type.h"

namespace ember::einsum {

/// A parsed equation with "..." expanded into one letter per broadcast dim
/// (upper-case letters from 'Z' downwards, which ONNX equations may also use).
/// Each operand's labels have that operand's rank; `output` lists the result's
/// labels in order, and `sizes` maps every label to its extent.
struct Equation {
  std::vector<std::string> operands;
  std::string output;
  std::vector<int64_t> sizes = std::vector<int64_t>(128, -1);  ///< by label (ASCII)

  int64_t size(char label) const { return sizes[size_t(uint8_t(label))]; }
};

/// Parses `equation` for operands of `dims`. Fails with a one-line message
/// naming the equation when it is malformed, when a label's extents differ
/// between operands, or when a label repeats within one operand (a diagonal,
/// which Ember declines).
Expected<Equation> parse(const std::string& equation, const std::vector<Dims>& dims);

}  // namespace ember::einsum
