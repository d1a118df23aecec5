// Vendor ops: custom operators a backend plugin registers without touching
// Ops.def (docs/backend-guide.md, "Fused and vendor ops").
//
// Ops.def has one generic kind, OpKind::VendorOp. A VendorOp node or
// instruction names its registered op in the string attribute `vendor_op`
// ("acme.ConvBiasRelu"); its other attributes and its operands are the ones the
// registered VendorOpDef declares. The registry checks them (the generic
// verifier), computes result types with the def's type rule, runs the def's
// reference kernel (the reference backend, constant folding) and holds the
// def's graph patterns, which the vendor-op rewrite pass applies when the
// def's backend compiles a function.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/Attributes.h"
#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/Pass.h"
#include "ember/Tensor.h"

namespace ember {

/// The attribute of a VendorOp node or instruction that names its registered op.
inline constexpr std::string_view kVendorOpAttr = "vendor_op";

/// Result type from operand types and attributes (the op's own attributes,
/// plus `vendor_op`). A vendor op has exactly one result. The rule decides
/// which operand types the op accepts: the reference kernel must implement
/// every type the rule accepts.
using VendorTypeRule = std::function<Expected<Type>(std::span<const Type> inputs, const Attributes& attrs)>;

/// Reference semantics: reads `inputs` (operand order) and writes `output`,
/// whose type is the type rule's and whose storage the caller owns (it never
/// aliases an input).
using VendorKernel = std::function<Error(const Attributes& attrs, std::span<const ConstTensorRef> inputs,
                                         const TensorRef& output)>;

class VendorRewriter;

/// A graph pattern, MLIR style: given a candidate `root` node (every compute
/// node is offered, in topological order), either returns false without
/// touching the graph, or rewrites the matched subgraph through `rewriter`
/// and returns true. It must decide from the graph's structure (op kinds,
/// which value feeds which operand, single use, constants), never from shapes
/// that happen to be equal.
using VendorPatternFn = std::function<Expected<bool>(VendorRewriter& rewriter, Node& root)>;

struct VendorPattern {
  std::string name;  ///< for errors and docs, e.g. "conv-relu"
  VendorPatternFn matchAndRewrite;
};

/// A conformance case of a vendor op: `ember conformance` builds the op on
/// seeded random operands of these types (constant operands as weights) and
/// compares the backend's result with the reference kernel's.
struct VendorOpExample {
  std::string name;  ///< e.g. "3x3/pad1"
  std::vector<Type> operandTypes;
  std::vector<bool> constantOperands;  ///< one per operand; empty: none constant
  Attributes attrs;                    ///< the op's own attributes
};

/// One registered op.
struct VendorOpDef {
  std::string name;                       ///< namespaced: "acme.ConvBiasRelu"
  std::vector<std::string> operandNames;  ///< fixed count, at least one
  std::vector<AttrSpec> attributes;       ///< besides `vendor_op`
  VendorTypeRule typeRule;
  VendorKernel referenceKernel;
  std::vector<VendorPattern> patterns;    ///< rewrites that create this op (may be empty)
  std::vector<VendorOpExample> examples;  ///< its conformance cases (may be empty)
};

/// What a pattern rewrites the graph with. The compiler implements it, so
/// that nodes are created by the compiler's own registry and type rules (a
/// plugin's static copy of the core does not know the registered ops).
class VendorRewriter {
 public:
  virtual ~VendorRewriter() = default;
  virtual Function& function() = 0;
  /// Uses of `value` by node operands plus function outputs.
  virtual size_t numUses(NodeValue value) = 0;
  bool hasSingleUse(NodeValue value) { return numUses(value) == 1; }
  /// Whether `value` is a function output.
  virtual bool isFunctionOutput(NodeValue value) = 0;
  /// Creates a VendorOp node of the registered op `op` (which must belong to
  /// the backend being compiled for): `attrs` are the op's own attributes.
  virtual Expected<Node*> createVendorOp(std::string_view op, std::string nodeName,
                                         std::vector<NodeValue> inputs, Attributes attrs) = 0;
  /// Rewires every use of `from` to `to` (the old nodes die in DCE).
  virtual void replaceAllUsesWith(NodeValue from, NodeValue to) = 0;
};

/// The registered vendor ops of every loaded backend. Filled when a plugin
/// is registered (BackendRegistry::add reads EmberBackendPlugin::vendorOps).
class VendorOpRegistry {
 public:
  static VendorOpRegistry& global();

  /// Registers `backend`'s ops. Fails, registering none, when a name is not
  /// namespaced ("ns.Name"), appears twice in `defs`, is registered by another
  /// backend, or a def lacks its type rule, kernel or operands.
  Error add(const std::string& backend, std::vector<VendorOpDef> defs);
  /// The registered op `name`, or null.
  const VendorOpDef* find(std::string_view name) const;
  /// The backend that registered `name` ("" when none).
  std::string ownerOf(std::string_view name) const;
  /// The ops `backend` registered, in registration order.
  std::vector<const VendorOpDef*> ofBackend(std::string_view backend) const;
  /// Every registered op, in registration order.
  std::vector<const VendorOpDef*> all() const;
  /// Every registered name, for messages ("none" when empty).
  std::string namesList() const;

 private:
  struct Entry {
    std::string backend;
    VendorOpDef def;
  };
  std::vector<std::unique_ptr<Entry>> entries_;
};

/// The `vendor_op` attribute ("" when absent or not a string).
std::string vendorOpName(const Attributes& attrs);
/// The registered def of a VendorOp node or attribute set, or an error
/// naming the op ("vendor op 'acme.X' is not registered (registered: ...)").
Expected<const VendorOpDef*> lookupVendorOp(const Attributes& attrs);

/// Verifier hooks for OpKind::VendorOp (called by the generic operand and
/// attribute check, the type-rule dispatch and the kernel dispatch).
Error checkVendorOpOperandsAndAttributes(size_t numOperands, const Attributes& attrs);
Expected<std::vector<Type>> inferVendorOpResultTypes(std::span<const Type> inputTypes,
                                                     const Attributes& attrs);
/// The graph pass "vendor-op-rewrite": applies the patterns of the vendor ops
/// `backendName` registered (nothing when it registered none), erases what
/// they left dead and verifies the function. The compile pipeline runs it
/// after lowering for the target backend (and for each partition's backend).
std::unique_ptr<FunctionPass> createVendorOpRewritePass(std::string backendName);

/// Runs a VendorOp through its def's reference kernel, after checking the
/// operand and result types against the def's type rule.
Error runVendorOpKernel(const Attributes& attrs, std::span<const ConstTensorRef> inputs,
                        std::span<const TensorRef> outputs);

}  // namespace ember
