// The typed dataflow graph: Module > Function > Node.
//
// Every node kind comes from Ops.def. A node's result types are computed by
// its type rule when it is created, so a Function built through create() is
// always well typed; verify() re-checks everything after each pass.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ember/Attributes.h"
#include "ember/Error.h"
#include "ember/Tensor.h"
#include "ember/Type.h"

namespace ember {

enum class OpKind : uint16_t {
#define EMBER_OP(Name, ...) Name,
#include "ember/Ops.def"
};
inline constexpr size_t kNumOpKinds = 0
#define EMBER_OP(Name, ...) +1
#include "ember/Ops.def"
    ;

enum class OpCategory : uint8_t { Storage, Primitive, HighLevel, IROnly };

enum OpTrait : unsigned {
  None = 0,
  DataParallel = 1u << 0,
  Commutative = 1u << 1,
  /// The result is input 0's bytes reinterpreted with the result type (same
  /// size, offset 0): IRGen makes it a view, so it computes nothing and never
  /// needs a backend's kernel (Reshape).
  View = 1u << 2,
  /// A float function of one value per element (a binary op: of a tensor and
  /// a one-element constant), so the int8 quantizer may replace it by a
  /// 256-entry Lookup of its values (docs/quantization.md).
  Tabulable = 1u << 3,
};

enum class AttrKind : uint8_t { Int, Float, String, Ints, Floats };

struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool optional = false;
};

/// Everything Ops.def says about one op kind, parsed once.
struct OpInfo {
  OpKind kind;
  std::string name;
  OpCategory category;
  std::vector<std::string> operandNames;
  bool variadic = false;  ///< last operand repeats (one or more)
  unsigned numResults;
  unsigned traits;
  std::vector<AttrSpec> attributes;

  bool has(OpTrait t) const { return (traits & t) != 0; }
};

const OpInfo& opInfo(OpKind kind);
std::string_view opName(OpKind kind);
std::optional<OpKind> opKindFromName(std::string_view name);

class Node;
class Function;

/// One result of one node.
struct NodeValue {
  Node* node = nullptr;
  unsigned resNo = 0;

  NodeValue() = default;
  NodeValue(Node* n, unsigned r = 0) : node(n), resNo(r) {}
  const Type& type() const;
  explicit operator bool() const { return node != nullptr; }
  bool operator==(const NodeValue& o) const { return node == o.node && resNo == o.resNo; }
  bool operator!=(const NodeValue& o) const { return !(*this == o); }
};

/// A graph node. Storage nodes (Placeholder, Constant) have no inputs; a
/// Constant owns its payload tensor.
class Node {
 public:
  OpKind kind() const { return kind_; }
  const OpInfo& info() const { return opInfo(kind_); }
  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }

  size_t numInputs() const { return inputs_.size(); }
  NodeValue input(size_t i) const { return inputs_[i]; }
  const std::vector<NodeValue>& inputs() const { return inputs_; }
  void setInput(size_t i, NodeValue v) { inputs_[i] = v; }

  size_t numResults() const { return resultTypes_.size(); }
  const Type& resultType(size_t i = 0) const { return resultTypes_[i]; }
  const std::vector<Type>& resultTypes() const { return resultTypes_; }
  NodeValue result(unsigned i = 0) { return NodeValue(this, i); }

  const Attributes& attrs() const { return attrs_; }
  /// The attributes as the op's struct generated from Ops.def (ember/OpAttrs.h):
  /// node.attrs<ConvAttrs>().strides.
  template <class OpAttrStruct>
  OpAttrStruct attrs() const {
    return OpAttrStruct::from(attrs_);
  }

  bool isConstant() const { return kind_ == OpKind::Constant; }
  bool isPlaceholder() const { return kind_ == OpKind::Placeholder; }
  /// The payload of a Constant node (asserts otherwise).
  const Tensor& payload() const;
  /// The same, shared: a copy of the graph (partitions, the IR) holds the
  /// payload without copying its bytes.
  const std::shared_ptr<const Tensor>& sharedPayload() const;

  /// "%conv1 = Conv(%x, %w, %b) {strides=[1,1], ...} : f32<1x112x112x64>".
  std::string str() const;

 private:
  friend class Function;
  Node(OpKind kind, std::string name, std::vector<NodeValue> inputs, std::vector<Type> resultTypes,
       Attributes attrs)
      : kind_(kind),
        name_(std::move(name)),
        inputs_(std::move(inputs)),
        resultTypes_(std::move(resultTypes)),
        attrs_(std::move(attrs)) {}

  OpKind kind_;
  std::string name_;
  std::vector<NodeValue> inputs_;
  std::vector<Type> resultTypes_;
  Attributes attrs_;
  std::shared_ptr<const Tensor> payload_;
};

/// A use of a NodeValue: the consuming node and its operand index.
struct Use {
  Node* user;
  unsigned operand;
};

/// A function: nodes in insertion order, its input placeholders and its named
/// outputs.
class Function {
 public:
  explicit Function(std::string name) : name_(std::move(name)) {}
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  const std::string& name() const { return name_; }

  /// Computes the result types with the op's type rule and creates the node.
  /// Fails with a message naming the node and op when the inputs or
  /// attributes are invalid.
  Expected<Node*> create(OpKind kind, std::string name, std::vector<NodeValue> inputs, Attributes attrs = {});
  /// A model input.
  Node* createPlaceholder(const std::string& name, Type type);
  Node* createConstant(const std::string& name, Tensor value);
  /// Shares `value` instead of copying it (the importer's initializers).
  Node* createConstant(const std::string& name, std::shared_ptr<const Tensor> value);

  void addOutput(std::string name, NodeValue value) { outputs_.push_back({std::move(name), value}); }
  const std::vector<Node*>& inputs() const { return inputs_; }
  const std::vector<std::pair<std::string, NodeValue>>& outputs() const { return outputs_; }
  std::vector<std::pair<std::string, NodeValue>>& outputs() { return outputs_; }
  Node* findInput(std::string_view name) const;

  /// All nodes in insertion order (placeholders and constants included).
  std::vector<Node*> nodes() const;
  size_t numNodes() const { return nodes_.size(); }
  /// Nodes in a deterministic topological order (inputs before users).
  std::vector<Node*> topologicalOrder() const;
  /// Map from each node to the uses of its results.
  std::unordered_map<const Node*, std::vector<Use>> computeUses() const;

  /// Rewires every use of `from` (node operands and function outputs) to `to`.
  void replaceAllUsesWith(NodeValue from, NodeValue to);
  /// Removes a node that has no uses.
  void erase(Node* node);
  /// A name not yet used in this function, derived from `base`.
  std::string uniqueName(std::string_view base);

  /// Checks every node's operands, attributes and types and the function's
  /// structure (acyclic, operands belong to this function, outputs exist).
  Error verify() const;
  /// Text form: one node per line, in topological order.
  std::string str() const;
  /// Graphviz DOT form.
  std::string dot() const;

 private:
  Node* insert(std::unique_ptr<Node> node);

  std::string name_;
  std::list<std::unique_ptr<Node>> nodes_;
  std::vector<Node*> inputs_;
  std::vector<std::pair<std::string, NodeValue>> outputs_;
  std::unordered_map<std::string, unsigned> nameCounts_;
};

/// A module: the functions of one model.
class Module {
 public:
  Function& createFunction(std::string name);
  std::vector<Function*> functions() const;
  Function* function(std::string_view name) const;

 private:
  std::vector<std::unique_ptr<Function>> functions_;
};

/// The checks that follow from an op's declaration alone: operand count and
/// declared attributes (present, right kind, none unknown).
Error checkOperandsAndAttributes(const OpInfo& info, size_t numOperands, const Attributes& attrs);

/// Type rule of one op: computes result types from input types and
/// attributes, or fails with a message (without node context; the caller adds
/// it). Implemented per op in core/graph/TypeRules.cpp.
Expected<std::vector<Type>> inferResultTypes(OpKind kind, std::span<const Type> inputTypes,
                                             const Attributes& attrs);

}  // namespace ember
