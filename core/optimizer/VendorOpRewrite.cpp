// vendor-op-rewrite: applies the graph patterns of the vendor ops that the
// backend being compiled for registered (ember/VendorOp.h), then removes the
// nodes the rewrites left dead and runs the verifier. It runs after lowering,
// only for that backend: another backend never sees its vendor ops.
#include <unordered_set>

#include "PassUtils.h"
#include "ember/Pass.h"
#include "ember/VendorOp.h"

namespace ember {
namespace {

/// The compiler's side of VendorRewriter: nodes are created with the host's
/// registry and type rules, and the use lists follow every change.
class GraphRewriter final : public VendorRewriter {
 public:
  GraphRewriter(Function& function, std::string backend)
      : function_(function), backend_(std::move(backend)) {}

  Function& function() override { return function_; }

  size_t numUses(NodeValue value) override {
    if (!usesValid_) {
      uses_ = function_.computeUses();
      usesValid_ = true;
    }
    size_t count = 0;
    if (auto it = uses_.find(value.node); it != uses_.end())
      for (const Use& use : it->second) count += use.user->input(use.operand).resNo == value.resNo;
    for (const auto& [name, output] : function_.outputs()) count += output == value;
    return count;
  }

  bool isFunctionOutput(NodeValue value) override {
    for (const auto& [name, output] : function_.outputs())
      if (output == value) return true;
    return false;
  }

  Expected<Node*> createVendorOp(std::string_view op, std::string nodeName, std::vector<NodeValue> inputs,
                                 Attributes attrs) override {
    const std::string owner = VendorOpRegistry::global().ownerOf(op);
    if (owner != backend_)
      return makeError(
          "node '", nodeName, "': vendor op '", op, "' ",
          owner.empty() ? std::string("is not registered") : "belongs to backend '" + owner + "'",
          ", not to '", backend_, "'");
    Attributes all;
    all.set(std::string(kVendorOpAttr), std::string(op));
    for (const auto& [name, value] : attrs.entries()) all.set(name, value);
    usesValid_ = false;
    return function_.create(OpKind::VendorOp, std::move(nodeName), std::move(inputs), std::move(all));
  }

  void replaceAllUsesWith(NodeValue from, NodeValue to) override {
    function_.replaceAllUsesWith(from, to);
    replaced_.push_back(from.node);
    usesValid_ = false;
  }

  /// Whether none of `node`'s results is used (a node a rewrite replaced).
  bool isDead(Node* node) {
    for (unsigned r = 0; r < node->numResults(); ++r)
      if (numUses(NodeValue(node, r))) return false;
    return true;
  }

  const std::vector<Node*>& replaced() const { return replaced_; }

 private:
  Function& function_;
  std::string backend_;
  std::unordered_map<const Node*, std::vector<Use>> uses_;
  bool usesValid_ = false;
  std::vector<Node*> replaced_;
};

class VendorOpRewrite : public FunctionPass {
 public:
  explicit VendorOpRewrite(std::string backend) : backend_(std::move(backend)) {}
  std::string name() const override { return "vendor-op-rewrite"; }
  // What the backend registered is part of its contract, like lowering.
  bool isRequired() const override { return true; }

  Expected<bool> run(Function& function) override {
    std::vector<const VendorOpDef*> defs = VendorOpRegistry::global().ofBackend(backend_);
    if (defs.empty()) return false;
    GraphRewriter rewriter(function, backend_);
    bool changed = false;
    // Every compute node of the graph as it was is offered once, in
    // topological order; nodes a rewrite already replaced are skipped.
    for (Node* root : function.topologicalOrder()) {
      if (root->info().category == OpCategory::Storage || rewriter.isDead(root)) continue;
      bool rewritten = false;
      for (const VendorOpDef* def : defs) {
        for (const VendorPattern& pattern : def->patterns) {
          auto matched = pattern.matchAndRewrite(rewriter, *root);
          if (!matched)
            return matched.error().withContext("vendor op '" + def->name + "', pattern '" + pattern.name +
                                               "' at node '" + root->name() + "'");
          rewritten = *matched;
          if (rewritten) break;
        }
        if (rewritten) break;
      }
      changed |= rewritten;
    }
    optimizer::eraseIfDead(function, rewriter.replaced());
    if (Error e = function.verify())
      return e.withContext("after the vendor-op rewrite for '" + backend_ + "'");
    return changed;
  }

 private:
  std::string backend_;
};

}  // namespace

std::unique_ptr<FunctionPass> createVendorOpRewritePass(std::string backendName) {
  return std::make_unique<VendorOpRewrite>(std::move(backendName));
}

}  // namespace ember
