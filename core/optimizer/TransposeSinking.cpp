// Transpose sinking and cancelling.
//
// The importer wraps every NHWC op in Transposes (NCHW -> NHWC before it,
// back after it), so chains like Conv -> T -> Relu -> T -> Conv appear. This
// pass moves Transposes down through ops that commute with them, until they
// meet another Transpose and cancel:
//   (a) Transpose(Transpose(x, p1), p2) -> Transpose(x, p1 o p2), or x;
//   (b) DataParallel ops whose operands are Transposes with one perm or
//       Constants (transposed eagerly);
//   (c) Concat of Transposes with one perm (axis remapped);
//   (d) BatchNorm (axis), reductions and ArgMax/ArgMin (axes), Pad, Slice and
//       Tile (per-axis attributes);
//   (e) finally, a Transpose that only moves size-1 dims becomes a Reshape,
//       and Reshape chains collapse.
// A rewrite removes at least one Transpose whose single user is the op and
// adds one below it, so the number of Transposes never grows. Every rewrite
// is exact: results stay bit-identical.
#include <algorithm>
#include <optional>

#include "PassUtils.h"
#include "ember/OpAttrs.h"
#include "ember/Pass.h"

namespace ember {
namespace {

using optimizer::inversePermutation;
using optimizer::isIdentityPermutation;

constexpr int kMaxRounds = 100;

/// Copy of `attrs` with `name` set to `value` (order kept).
Attributes withAttr(const Attributes& attrs, const std::string& name, AttrValue value) {
  Attributes result;
  bool replaced = false;
  for (const auto& [key, old] : attrs.entries()) {
    if (key == name) {
      result.set(key, value);
      replaced = true;
    } else {
      result.set(key, old);
    }
  }
  if (!replaced) result.set(name, std::move(value));
  return result;
}

int64_t normalizeAxis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

class Sinker {
 public:
  explicit Sinker(Function& function) : function_(function) { refresh(); }

  /// One sweep in topological order; returns whether anything changed.
  bool sweep(bool finalPhase) {
    bool changed = false;
    // Rewrites erase only the visited node and its (earlier) inputs, so the
    // rest of `order` stays valid.
    const std::vector<Node*> order = function_.topologicalOrder();
    for (Node* node : order) {
      bool rewritten = finalPhase ? rewriteReshapes(node) : sink(node);
      if (rewritten) {
        changed = true;
        refresh();
      }
    }
    return changed;
  }

 private:
  void refresh() {
    uses_ = function_.computeUses();
    outputs_ = optimizer::outputNodes(function_);
  }

  /// Whether `value`'s node is a Transpose whose only user is `user`.
  bool isTransposeOnlyUsedBy(NodeValue value, const Node* user) const {
    if (value.node->kind() != OpKind::Transpose || outputs_.count(value.node)) return false;
    auto it = uses_.find(value.node);
    if (it == uses_.end()) return false;
    return std::all_of(it->second.begin(), it->second.end(), [&](const Use& u) { return u.user == user; });
  }

  static std::vector<int64_t> permOf(const Node* transpose) {
    return transpose->attrs<TransposeAttrs>().perm;
  }

  /// Replaces `node` by `kind(inputs, attrs)` followed by Transpose(outPerm)
  /// (omitted when identity). Gives up, leaving the graph unchanged, when the
  /// new nodes do not reproduce `node`'s result type.
  bool rebuild(Node* node, std::vector<NodeValue> inputs, Attributes attrs,
               const std::vector<int64_t>& outPerm, std::vector<Node*> created = {}) {
    const std::string name = node->name();
    Expected<Node*> inner = function_.create(node->kind(), name, std::move(inputs), std::move(attrs));
    if (!inner) return abandon(created);
    created.push_back(*inner);
    NodeValue result = (*inner)->result();
    if (!isIdentityPermutation(outPerm)) {
      Expected<Node*> transpose =
          function_.create(OpKind::Transpose, name + ".transpose", {result}, Attributes{{"perm", outPerm}});
      if (!transpose) return abandon(created);
      created.push_back(*transpose);
      result = (*transpose)->result();
    }
    if (node->numResults() != 1 || result.type() != node->resultType()) return abandon(created);
    optimizer::replaceNode(function_, node, {result});
    (*inner)->setName(function_.uniqueName(name));  // the original is gone; keep its name for reports
    return true;
  }

  bool abandon(const std::vector<Node*>& created) {
    optimizer::eraseIfDead(function_, std::vector<Node*>(created.rbegin(), created.rend()));
    return false;
  }

  bool sink(Node* node) {
    switch (node->kind()) {
      case OpKind::Transpose:
        return combineTransposes(node);
      case OpKind::Concat:
        return sinkThroughConcat(node);
      case OpKind::BatchNorm:
        return sinkThroughBatchNorm(node);
      case OpKind::ReduceSum:
      case OpKind::ReduceProd:
      case OpKind::ReduceMean:
      case OpKind::ReduceSumSquare:
        return sinkThroughReduce(node, /*orderSensitive=*/true);
      case OpKind::ReduceMax:
      case OpKind::ReduceMin:
        return sinkThroughReduce(node, /*orderSensitive=*/false);
      case OpKind::ArgMax:
      case OpKind::ArgMin:
        return sinkThroughArgReduce(node);
      case OpKind::Pad:
        return sinkThroughPerAxisAttrs(node, {{"pads", node->attrs<PadAttrs>().pads}}, /*beginEnd=*/true);
      case OpKind::Slice: {
        const SliceAttrs slice = node->attrs<SliceAttrs>();
        return sinkThroughPerAxisAttrs(
            node, {{"starts", slice.starts}, {"ends", slice.ends}, {"steps", slice.steps}}, false);
      }
      case OpKind::Tile:
        return sinkThroughPerAxisAttrs(node, {{"repeats", node->attrs<TileAttrs>().repeats}}, false);
      default:
        if (node->info().has(DataParallel) && node->numResults() == 1) return sinkThroughElementwise(node);
        return false;
    }
  }

  // (a) Transpose(Transpose(x, p1), p2) = Transpose(x, c) with c[j] = p1[p2[j]].
  bool combineTransposes(Node* node) {
    NodeValue input = node->input(0);
    const auto& perm = permOf(node);
    if (isIdentityPermutation(perm)) {
      optimizer::replaceNode(function_, node, {input});
      return true;
    }
    if (input.node->kind() != OpKind::Transpose) return false;
    const auto& inner = permOf(input.node);
    std::vector<int64_t> composed(perm.size());
    for (size_t j = 0; j < perm.size(); ++j) composed[j] = inner[size_t(perm[j])];
    NodeValue source = input.node->input(0);
    if (isIdentityPermutation(composed)) {
      optimizer::replaceNode(function_, node, {source});
      return true;
    }
    std::vector<int64_t> identity(composed.size());
    for (size_t i = 0; i < identity.size(); ++i) identity[i] = int64_t(i);
    return rebuild(node, {source}, Attributes{{"perm", composed}}, identity);
  }

  // (b) op(T(x1, p), T(x2, p), C) -> T(op(x1, x2, C'), p) with C' = T(C, p^-1).
  // At least one operand must be a Transpose used only by `op` (it goes
  // away); every other operand must be expressible as T(v, p) without a new
  // Transpose, so the count of Transposes never grows.
  bool sinkThroughElementwise(Node* node) {
    const size_t rank = node->resultType().rank();
    std::optional<std::vector<int64_t>> perm;
    for (const NodeValue& input : node->inputs())
      if (isTransposeOnlyUsedBy(input, node) && input.type().rank() == rank) {
        perm = permOf(input.node);
        break;
      }
    if (!perm) return false;
    const std::vector<int64_t> inverse = inversePermutation(*perm);
    std::vector<NodeValue> inputs;
    for (const NodeValue& input : node->inputs()) {
      NodeValue source = untransposed(input, *perm, inverse, rank);
      if (!source) return false;
      inputs.push_back(source);
    }
    // Materialise the eagerly transposed constants only once the rewrite is certain.
    std::vector<Node*> created;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const NodeValue original = node->input(i);
      if (inputs[i] != original || !original.node->isConstant() || original.type().numElements() == 1)
        continue;
      Node* constant = function_.createConstant(original.node->name() + ".transposed",
                                                optimizer::permuteTensor(original.node->payload(), inverse));
      created.push_back(constant);
      inputs[i] = constant->result();
    }
    return rebuild(node, std::move(inputs), node->attrs(), *perm, std::move(created));
  }

  /// A value v with T(v, perm) equal to `input` that needs no new Transpose,
  /// or an empty value. A multi-element Constant is returned as itself and
  /// transposed by the caller.
  NodeValue untransposed(NodeValue input, const std::vector<int64_t>& perm,
                         const std::vector<int64_t>& inverse, size_t rank) const {
    if (input.node->kind() == OpKind::Transpose && permOf(input.node) == perm) return input.node->input(0);
    if (input.node->isConstant()) {
      // A lower-rank constant broadcasts along trailing axes, which the
      // permutation would scramble; only a single element is layout-free.
      if (input.type().numElements() == 1 || input.type().rank() == rank) return input;
      return {};
    }
    if (input.type().rank() != rank) return {};
    // Reuse an existing Transpose(input, perm^-1), such as the one the
    // importer put in front of the next NHWC op on a residual path.
    auto it = uses_.find(input.node);
    if (it == uses_.end()) return {};
    for (const Use& use : it->second) {
      Node* user = use.user;
      if (user->kind() == OpKind::Transpose && user->input(0) == input && permOf(user) == inverse)
        return user->result();
    }
    return {};
  }

  /// The common perm of `node`'s inputs when they are all Transposes used only by it.
  std::optional<std::vector<int64_t>> commonInputPerm(const Node* node) const {
    std::optional<std::vector<int64_t>> perm;
    for (const NodeValue& input : node->inputs()) {
      if (!isTransposeOnlyUsedBy(input, node)) return std::nullopt;
      if (perm && permOf(input.node) != *perm) return std::nullopt;
      perm = permOf(input.node);
    }
    return perm;
  }

  // (c) Concat(T(x1, p), T(x2, p), axis) -> T(Concat(x1, x2, p[axis]), p).
  bool sinkThroughConcat(Node* node) {
    auto perm = commonInputPerm(node);
    if (!perm) return false;
    const int64_t axis = normalizeAxis(node->attrs<ConcatAttrs>().axis, perm->size());
    if (axis < 0 || axis >= int64_t(perm->size())) return false;
    std::vector<NodeValue> inputs;
    for (const NodeValue& input : node->inputs()) inputs.push_back(input.node->input(0));
    return rebuild(node, inputs, withAttr(node->attrs(), "axis", (*perm)[size_t(axis)]), *perm);
  }

  /// The perm of `node`'s first operand when it is a Transpose used only by `node`.
  std::optional<std::vector<int64_t>> firstInputPerm(const Node* node) const {
    if (node->numInputs() == 0 || !isTransposeOnlyUsedBy(node->input(0), node)) return std::nullopt;
    return permOf(node->input(0).node);
  }

  std::vector<NodeValue> inputsWithUntransposedFirst(const Node* node) const {
    std::vector<NodeValue> inputs = node->inputs();
    inputs[0] = inputs[0].node->input(0);
    return inputs;
  }

  // (d) BatchNorm(T(x, p), ..., axis) -> T(BatchNorm(x, ..., p[axis]), p).
  bool sinkThroughBatchNorm(Node* node) {
    auto perm = firstInputPerm(node);
    if (!perm) return false;
    const int64_t axis = normalizeAxis(node->attrs<BatchNormAttrs>().axis, perm->size());
    if (axis < 0 || axis >= int64_t(perm->size())) return false;
    return rebuild(node, inputsWithUntransposedFirst(node),
                   withAttr(node->attrs(), "axis", (*perm)[size_t(axis)]), *perm);
  }

  /// The perm that restores the output order of a keepdims=0 reduction of
  /// T(x, perm) over `reduced` (axes of the transposed value), computed on x.
  static std::vector<int64_t> keptAxesPerm(const std::vector<int64_t>& perm,
                                           const std::vector<bool>& reduced) {
    std::vector<int64_t> keptSource;  // x axes that survive, in output order
    for (size_t j = 0; j < perm.size(); ++j)
      if (!reduced[j]) keptSource.push_back(perm[j]);
    std::vector<int64_t> sorted = keptSource;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> result;
    result.reserve(keptSource.size());
    for (int64_t axis : keptSource)
      result.push_back(int64_t(std::lower_bound(sorted.begin(), sorted.end(), axis) - sorted.begin()));
    return result;
  }

  // (d) Reduce(T(x, p), axes) -> T'(Reduce(x, p[axes])). A sum-like
  // reduction must see its elements in the same order to round identically,
  // so it sinks only when p keeps the reduced axes in order.
  bool sinkThroughReduce(Node* node, bool orderSensitive) {
    auto perm = firstInputPerm(node);
    if (!perm) return false;
    const size_t rank = perm->size();
    std::vector<bool> reduced(rank, false);
    std::vector<int64_t> sourceAxes;
    // Every reduction of sink() has ReduceSum's attributes (one generated struct).
    const ReduceSumAttrs reduce = node->attrs<ReduceSumAttrs>();
    for (int64_t axis : reduce.axes) {
      axis = normalizeAxis(axis, rank);
      if (axis < 0 || axis >= int64_t(rank)) return false;
      reduced[size_t(axis)] = true;
    }
    for (size_t j = 0; j < rank; ++j)
      if (reduced[j]) sourceAxes.push_back((*perm)[j]);
    if (orderSensitive && !std::is_sorted(sourceAxes.begin(), sourceAxes.end())) return false;
    std::sort(sourceAxes.begin(), sourceAxes.end());
    const bool keepDims = reduce.keepdims != 0;
    return rebuild(node, inputsWithUntransposedFirst(node), withAttr(node->attrs(), "axes", sourceAxes),
                   keepDims ? *perm : keptAxesPerm(*perm, reduced));
  }

  bool sinkThroughArgReduce(Node* node) {
    auto perm = firstInputPerm(node);
    if (!perm) return false;
    const size_t rank = perm->size();
    const ArgMaxAttrs arg = node->attrs<ArgMaxAttrs>();  // ArgMinAttrs is the same struct
    const int64_t axis = normalizeAxis(arg.axis, rank);
    if (axis < 0 || axis >= int64_t(rank)) return false;
    std::vector<bool> reduced(rank, false);
    reduced[size_t(axis)] = true;
    const bool keepDims = arg.keepdims != 0;
    return rebuild(node, inputsWithUntransposedFirst(node),
                   withAttr(node->attrs(), "axis", (*perm)[size_t(axis)]),
                   keepDims ? *perm : keptAxesPerm(*perm, reduced));
  }

  /// An attribute with one value per axis (or two: Pad's begin and end halves).
  using PerAxisAttr = std::pair<std::string, std::vector<int64_t>>;

  // (d) Pad/Slice/Tile: attributes with one value per axis move with the axes
  // (Pad's begin and end halves each).
  bool sinkThroughPerAxisAttrs(Node* node, const std::vector<PerAxisAttr>& perAxis, bool beginEnd) {
    auto perm = firstInputPerm(node);
    if (!perm) return false;
    const size_t rank = perm->size();
    Attributes attrs = node->attrs();
    for (const auto& [name, values] : perAxis) {
      const size_t halves = beginEnd ? 2 : 1;
      if (values.size() != halves * rank) return false;
      std::vector<int64_t> remapped(values.size());
      for (size_t h = 0; h < halves; ++h)
        for (size_t i = 0; i < rank; ++i) remapped[h * rank + size_t((*perm)[i])] = values[h * rank + i];
      attrs = withAttr(attrs, name, remapped);
    }
    return rebuild(node, inputsWithUntransposedFirst(node), attrs, *perm);
  }

  // (e) A Transpose that keeps the non-unit dims in order is a Reshape;
  // Reshape(Reshape(x)) is one Reshape; a Reshape to the same dims is x.
  // Equal dims say nothing about a Transpose: only an identity perm keeps the
  // element order (a 1x8x8x8 NCHW->NHWC transpose has equal dims).
  bool rewriteReshapes(Node* node) {
    if (node->kind() != OpKind::Transpose && node->kind() != OpKind::Reshape) return false;
    NodeValue input = node->input(0);
    const Dims& outDims = node->resultType().dims;
    const bool keepsElementOrder =
        node->kind() == OpKind::Reshape ? input.type().dims == outDims : isIdentityPermutation(permOf(node));
    if (keepsElementOrder) {
      optimizer::replaceNode(function_, node, {input});
      return true;
    }
    if (node->kind() == OpKind::Transpose) {
      const auto& perm = permOf(node);
      int64_t last = -1;
      for (int64_t axis : perm) {
        if (input.type().dims[size_t(axis)] == 1) continue;
        if (axis < last) return false;
        last = axis;
      }
    } else if (input.node->kind() == OpKind::Reshape) {
      input = input.node->input(0);
    } else {
      return false;
    }
    return rebuildAsReshape(node, input, outDims);
  }

  bool rebuildAsReshape(Node* node, NodeValue input, const Dims& dims) {
    const std::string name = node->name();
    Expected<Node*> reshape = function_.create(OpKind::Reshape, name, {input}, Attributes{{"shape", dims}});
    if (!reshape) return false;
    if ((*reshape)->resultType() != node->resultType()) return abandon({*reshape});
    optimizer::replaceNode(function_, node, {(*reshape)->result()});
    (*reshape)->setName(function_.uniqueName(name));
    return true;
  }

  Function& function_;
  std::unordered_map<const Node*, std::vector<Use>> uses_;
  std::unordered_set<const Node*> outputs_;
};

class TransposeSinking : public FunctionPass {
 public:
  std::string name() const override { return "transpose-sinking"; }

  Expected<bool> run(Function& function) override {
    Sinker sinker(function);
    bool changed = false;
    for (bool finalPhase : {false, true})
      for (int round = 0; round < kMaxRounds && sinker.sweep(finalPhase); ++round) changed = true;
    return changed;
  }
};

}  // namespace

std::unique_ptr<FunctionPass> createTransposeSinkingPass() { return std::make_unique<TransposeSinking>(); }

}  // namespace ember
