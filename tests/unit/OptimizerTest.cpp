// Tests of the graph passes and the lowering (core/optimizer).
//
// Every rewrite is checked twice: structurally (the expected nodes appear or
// vanish) and numerically, by running the graph before and after with a tiny
// test-local evaluator over the reference kernels. Lowerings are compared
// with naive computations written here, not with Ember's own code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <unordered_map>

#include "ember/Backend.h"
#include "ember/Graph.h"
#include "ember/Kernels.h"
#include "ember/Pass.h"

namespace ember {
namespace {

// ---- Test infrastructure ----------------------------------------------------

using TensorMap = std::map<std::string, Tensor>;

/// Runs `function` node by node with runKernel. High-level nodes are not
/// primitives, so callers lower them first.
Expected<TensorMap> evaluate(const Function& function, const TensorMap& inputs) {
  std::unordered_map<const Node*, std::vector<Tensor>> values;
  for (Node* node : function.topologicalOrder()) {
    if (node->isPlaceholder()) {
      auto it = inputs.find(node->name());
      if (it == inputs.end()) return makeError("no input '", node->name(), "'");
      values[node] = {it->second};
      continue;
    }
    if (node->isConstant()) {
      values[node] = {node->payload()};
      continue;
    }
    if (node->info().category != OpCategory::Primitive)
      return makeError("node '", node->name(), "' (", opName(node->kind()), ") is not a primitive");
    std::vector<ConstTensorRef> in;
    for (const NodeValue& input : node->inputs()) in.push_back(values.at(input.node)[input.resNo].ref());
    std::vector<Tensor> results;
    for (const Type& type : node->resultTypes()) results.emplace_back(type);
    std::vector<TensorRef> out;
    for (Tensor& t : results) out.push_back(t.ref());
    if (Error e = runKernel(node->kind(), node->attrs(), in, out)) return e.withContext(node->name());
    values[node] = std::move(results);
  }
  TensorMap outputs;
  for (const auto& [name, value] : function.outputs())
    outputs.emplace(name, values.at(value.node)[value.resNo]);
  return outputs;
}

/// Deterministic values in [lo, hi).
Tensor randomTensor(Dims dims, uint32_t seed, double lo = -2.0, double hi = 2.0) {
  Tensor t(Type(ElemKind::F32, std::move(dims)));
  uint32_t state = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.type().numElements(); ++i) {
    state = state * 1664525u + 1013904223u;
    t.setElementFromDouble(i, lo + (hi - lo) * double(state >> 8) / double(1u << 24));
  }
  return t;
}

void expectBitwiseEqual(const TensorMap& a, const TensorMap& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, tensor] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_TRUE(tensor.bitwiseEqual(b.at(name))) << "output " << name << " changed";
  }
}

void expectNear(const Tensor& actual, const Tensor& expected, double tolerance, const std::string& what) {
  ASSERT_EQ(actual.type().dims, expected.type().dims) << what;
  for (int64_t i = 0; i < actual.type().numElements(); ++i) {
    double a = actual.elementAsDouble(i), e = expected.elementAsDouble(i);
    ASSERT_NEAR(a, e, tolerance * std::max(1.0, std::abs(e))) << what << " element " << i;
  }
}

void expectNear(const TensorMap& a, const TensorMap& b, double tolerance) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, tensor] : a) expectNear(tensor, b.at(name), tolerance, name);
}

size_t countKind(const Function& f, OpKind kind) {
  size_t n = 0;
  for (Node* node : f.nodes()) n += node->kind() == kind;
  return n;
}

size_t countCategory(const Function& f, OpCategory category) {
  size_t n = 0;
  for (Node* node : f.nodes()) n += node->info().category == category;
  return n;
}

Node* make(Function& f, OpKind kind, const std::string& name, std::vector<NodeValue> inputs,
           Attributes attrs = {}) {
  Expected<Node*> node = f.create(kind, name, std::move(inputs), std::move(attrs));
  EXPECT_TRUE(node.hasValue()) << node.error().message();
  return node.hasValue() ? *node : nullptr;
}

Node* transpose(Function& f, const std::string& name, NodeValue x, std::vector<int64_t> perm) {
  return make(f, OpKind::Transpose, name, {x}, Attributes{{"perm", std::move(perm)}});
}

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

Attributes convAttrs() {
  return Attributes{{"strides", std::vector<int64_t>{1, 1}},
                    {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                    {"dilations", std::vector<int64_t>{1, 1}},
                    {"group", int64_t(1)}};
}

class LowerEverything : public Backend {
 public:
  std::string name() const override { return "test-lower-all"; }
  bool supports(const NodeInfo&) const override { return true; }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction&) const override {
    return makeError("test backend does not compile");
  }
};

class KeepGemm : public LowerEverything {
 public:
  bool shouldLower(const Node& node) const override { return node.kind() != OpKind::Gemm; }
};

Error runPasses(Function& f, std::vector<std::unique_ptr<FunctionPass>> passes) {
  PassManager pm(PassManagerOptions{.verifyEachPass = true, .printAfter = ""});
  for (auto& pass : passes) pm.add(std::move(pass));
  return pm.run(f);
}

template <typename... P>
std::vector<std::unique_ptr<FunctionPass>> passes(P... p) {
  std::vector<std::unique_ptr<FunctionPass>> v;
  (v.push_back(std::move(p)), ...);
  return v;
}

/// Lowers everything, then evaluates.
TensorMap lowerAndEvaluate(Function& f, const TensorMap& inputs) {
  LowerEverything backend;
  Error e = runPasses(f, passes(createLoweringPass(backend)));
  EXPECT_FALSE(e) << e.message();
  Expected<TensorMap> out = evaluate(f, inputs);
  EXPECT_TRUE(out.hasValue()) << out.error().message();
  return out.hasValue() ? out.take() : TensorMap{};
}

/// Builds the same graph twice, runs `pipeline` on one, lets `inspect` check
/// its structure, then lowers both and compares their outputs (bit-identical
/// when `tolerance` is 0).
void checkPreserved(const std::function<void(Function&)>& build, const TensorMap& inputs,
                    std::vector<std::unique_ptr<FunctionPass>> pipeline,
                    const std::function<void(const Function&)>& inspect, double tolerance = 0.0) {
  Function reference("reference");
  build(reference);
  ASSERT_FALSE(reference.verify()) << reference.verify().message();
  Function optimized("optimized");
  build(optimized);
  Error e = runPasses(optimized, std::move(pipeline));
  ASSERT_FALSE(e) << e.message();
  inspect(optimized);
  TensorMap expected = lowerAndEvaluate(reference, inputs);
  TensorMap actual = lowerAndEvaluate(optimized, inputs);
  if (tolerance == 0.0)
    expectBitwiseEqual(actual, expected);
  else
    expectNear(actual, expected, tolerance);
}

Tensor constantValues(Dims dims, std::vector<double> values) {
  return Tensor::fromValues<double>(ElemKind::F32, std::move(dims), values);
}

Node* conv(Function& f, const std::string& name, NodeValue x, int64_t inChannels, int64_t outChannels,
           uint32_t seed) {
  Node* w = f.createConstant(name + ".w", randomTensor({outChannels, 3, 3, inChannels}, seed, -0.5, 0.5));
  Node* b = f.createConstant(name + ".b", randomTensor({outChannels}, seed + 1));
  return make(f, OpKind::Conv, name, {x, w, b}, convAttrs());
}

// ---- DCE ------------------------------------------------------------------------

TEST(DeadCodeElimination, RemovesUnusedNodesAndKeepsPlaceholders) {
  Function f("f");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 3}));
  f.createPlaceholder("unused_input", Type(ElemKind::F32, {4}));
  Node* relu = make(f, OpKind::Relu, "relu", {x});
  Node* dead = make(f, OpKind::Sigmoid, "dead", {x});
  make(f, OpKind::Exp, "dead_user", {dead});
  f.createConstant("unused_const", randomTensor({3}, 1));
  f.addOutput("y", relu);

  auto dce = createDeadCodeEliminationPass();
  EXPECT_EQ(dce->name(), "dce");
  Expected<bool> changed = dce->run(f);
  ASSERT_TRUE(changed.hasValue());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(f.numNodes(), 3u);  // x, unused_input, relu
  EXPECT_EQ(countKind(f, OpKind::Placeholder), 2u);
  EXPECT_EQ(countKind(f, OpKind::Sigmoid), 0u);
  EXPECT_EQ(countKind(f, OpKind::Constant), 0u);
  EXPECT_FALSE(f.verify());
  changed = dce->run(f);
  ASSERT_TRUE(changed.hasValue());
  EXPECT_FALSE(*changed);
}

// ---- CSE ------------------------------------------------------------------------

TEST(CommonSubexpressionElimination, MergesEqualNodesAndConstantsByContent) {
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 3}));
    Node* c1 = f.createConstant("c1", constantValues({3}, {1, 2, 3}));
    Node* c2 = f.createConstant("c2", constantValues({3}, {1, 2, 3}));        // same content as c1
    Node* c3 = f.createConstant("c3", constantValues({3}, {1, 2, 4}));        // different content
    Node* c4 = f.createConstant("c4", constantValues({1, 1, 3}, {1, 2, 3}));  // same bytes, other type
    Node* r1 = make(f, OpKind::Relu, "r1", {make(f, OpKind::Add, "a1", {x, c1})});
    Node* r2 = make(f, OpKind::Relu, "r2", {make(f, OpKind::Add, "a2", {x, c2})});
    f.addOutput("product", make(f, OpKind::Mul, "product", {r1, r2}));
    f.addOutput("other", make(f, OpKind::Add, "a3", {x, c3}));
    f.addOutput("rank3", make(f, OpKind::Add, "a4", {x, c4}));
  };
  TensorMap inputs = {{"x", randomTensor({2, 3}, 7)}};
  checkPreserved(build, inputs,
                 passes(createCommonSubexpressionEliminationPass(), createDeadCodeEliminationPass()),
                 [](const Function& f) {
                   EXPECT_EQ(countKind(f, OpKind::Constant), 3u);
                   EXPECT_EQ(countKind(f, OpKind::Add), 3u);
                   EXPECT_EQ(countKind(f, OpKind::Relu), 1u);
                 });
}

TEST(CommonSubexpressionElimination, NeverMergesPlaceholders) {
  Function f("f");
  Node* a = f.createPlaceholder("a", Type(ElemKind::F32, {2}));
  Node* b = f.createPlaceholder("b", Type(ElemKind::F32, {2}));
  f.addOutput("y", make(f, OpKind::Sub, "y", {a, b}));
  auto cse = createCommonSubexpressionEliminationPass();
  EXPECT_EQ(cse->name(), "cse");
  Expected<bool> changed = cse->run(f);
  ASSERT_TRUE(changed.hasValue());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(countKind(f, OpKind::Placeholder), 2u);
}

// ---- Constant folding ---------------------------------------------------------------

TEST(ConstantFolding, FoldsConstantChains) {
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 3}));
    Node* c1 = f.createConstant("c1", constantValues({3}, {1, 4, 9}));
    Node* c2 = f.createConstant("c2", constantValues({3}, {0.5, 0.25, 2}));
    Node* root = make(f, OpKind::Sqrt, "root", {c1});
    Node* scaled = make(f, OpKind::Mul, "scaled", {root, c2});
    f.addOutput("y", make(f, OpKind::Add, "y", {x, scaled}));
  };
  checkPreserved(build, {{"x", randomTensor({2, 3}, 3)}},
                 passes(createConstantFoldingPass(), createDeadCodeEliminationPass()), [](const Function& f) {
                   EXPECT_EQ(countKind(f, OpKind::Sqrt), 0u);
                   EXPECT_EQ(countKind(f, OpKind::Mul), 0u);
                   EXPECT_EQ(countKind(f, OpKind::Constant), 1u);
                   EXPECT_EQ(f.numNodes(), 3u);
                 });
}

TEST(ConstantFolding, ReportsKernelErrorsWithTheNodeName) {
  Function f("f");
  Node* data = f.createConstant("data", constantValues({4}, {1, 2, 3, 4}));
  Tensor index(Type(ElemKind::I64, {1}));
  index.setElementFromDouble(0, 7);
  Node* indices = f.createConstant("indices", std::move(index));
  f.addOutput("y", make(f, OpKind::Gather, "bad_gather", {data, indices}, Attributes{{"axis", int64_t(0)}}));
  Expected<bool> result = createConstantFoldingPass()->run(f);
  ASSERT_FALSE(result.hasValue());
  EXPECT_NE(result.error().message().find("bad_gather"), std::string::npos) << result.error().message();
}

TEST(ConstantFolding, SkipsHugeResults) {
  Function f("f");
  Node* one = f.createConstant("one", constantValues({}, {1}));
  f.addOutput("y", make(f, OpKind::Broadcast, "huge", {one},
                        Attributes{{"shape", std::vector<int64_t>{64, 1024, 1024}}}));
  Expected<bool> result = createConstantFoldingPass()->run(f);
  ASSERT_TRUE(result.hasValue());
  EXPECT_FALSE(*result);
  EXPECT_EQ(countKind(f, OpKind::Broadcast), 1u);
}

// ---- Transpose sinking --------------------------------------------------------------

std::vector<std::unique_ptr<FunctionPass>> sinking() {
  return passes(createTransposeSinkingPass(), createDeadCodeEliminationPass());
}

TEST(TransposeSinking, CancelsImporterTransposesAroundRelu) {
  // NCHW model input; the importer wraps each Conv in transposes.
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 3, 5, 5}));
    Node* c1 = conv(f, "conv1", transpose(f, "t0", x, kToNhwc), 3, 4, 1);
    Node* relu = make(f, OpKind::Relu, "relu", {transpose(f, "t1", c1, kToNchw)});
    Node* c2 = conv(f, "conv2", transpose(f, "t2", relu, kToNhwc), 4, 2, 5);
    f.addOutput("y", transpose(f, "t3", c2, kToNchw));
  };
  checkPreserved(build, {{"x", randomTensor({1, 3, 5, 5}, 11)}}, sinking(), [](const Function& f) {
    EXPECT_EQ(countKind(f, OpKind::Transpose), 2u);  // model input and output only
    for (Node* node : f.nodes())
      if (node->kind() == OpKind::Relu) {
        EXPECT_EQ(node->input(0).node->kind(), OpKind::Conv);
      }
  });
}

TEST(TransposeSinking, ReportsNoChangeAtItsFixedPoint) {
  Function f("f");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 3, 5, 5}));
  Node* relu = make(f, OpKind::Relu, "relu", {transpose(f, "t0", x, kToNhwc)});
  Node* sigmoid = make(f, OpKind::Sigmoid, "sigmoid", {relu});
  f.addOutput("y", transpose(f, "t1", sigmoid, kToNchw));
  auto pass = createTransposeSinkingPass();
  EXPECT_EQ(pass->name(), "transpose-sinking");
  Expected<bool> changed = pass->run(f);
  ASSERT_TRUE(changed.hasValue());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(countKind(f, OpKind::Transpose), 0u) << f.str();
  EXPECT_FALSE(f.verify());
  changed = pass->run(f);
  ASSERT_TRUE(changed.hasValue());
  EXPECT_FALSE(*changed);
}

TEST(TransposeSinking, SinksThroughBinaryOpsWithTransposesAndConstants) {
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 4, 4, 3}));
    Node* a = transpose(f, "ta", conv(f, "conv_a", x, 3, 2, 1), kToNchw);
    Node* b = transpose(f, "tb", conv(f, "conv_b", x, 3, 2, 3), kToNchw);
    Node* sum = make(f, OpKind::Add, "sum", {a, b});
    Node* perChannel = f.createConstant("per_channel", constantValues({1, 2, 1, 1}, {0.5, -2}));
    Node* scaled = make(f, OpKind::Mul, "scaled", {sum, perChannel});
    Node* bias =
        make(f, OpKind::Add, "bias", {scaled, f.createConstant("scalar", constantValues({}, {0.25}))});
    Node* clipped = make(f, OpKind::Clip, "clip", {bias}, Attributes{{"min", 0.0}, {"max", 6.0}});
    f.addOutput("y", conv(f, "conv_c", transpose(f, "back", clipped, kToNhwc), 2, 2, 9));
  };
  checkPreserved(build, {{"x", randomTensor({1, 4, 4, 3}, 2)}}, sinking(),
                 [](const Function& f) { EXPECT_EQ(countKind(f, OpKind::Transpose), 0u); });
}

TEST(TransposeSinking, ResolvesResidualPathsFromAnNchwInput) {
  // Add(T(conv(T(x))), x): the skip operand x is untransposed through the
  // Transpose the importer already put in front of the first Conv.
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 4, 5, 5}));
    NodeValue current = x;
    for (int block = 0; block < 3; ++block) {
      std::string name = "block" + std::to_string(block);
      Node* c = conv(f, name + ".conv", transpose(f, name + ".in", current, kToNhwc), 4, 4, uint32_t(block));
      Node* sum = make(f, OpKind::Add, name + ".add", {transpose(f, name + ".out", c, kToNchw), current});
      current = make(f, OpKind::Relu, name + ".relu", {sum});
    }
    f.addOutput("y", current);
  };
  checkPreserved(build, {{"x", randomTensor({1, 4, 5, 5}, 5)}},
                 passes(createTransposeSinkingPass(), createCommonSubexpressionEliminationPass(),
                        createDeadCodeEliminationPass()),
                 [](const Function& f) { EXPECT_EQ(countKind(f, OpKind::Transpose), 2u) << f.str(); });
}

TEST(TransposeSinking, KeepsTransposeBeforeLowerRankConstant) {
  // A [W] constant broadcasts along the last NCHW axis; sinking would change that.
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 3, 4, 2}));
    Node* t = transpose(f, "t", x, kToNchw);  // [1,2,3,4]
    f.addOutput("y",
                make(f, OpKind::Add, "add", {t, f.createConstant("row", constantValues({4}, {1, 2, 3, 4}))}));
  };
  checkPreserved(build, {{"x", randomTensor({1, 3, 4, 2}, 4)}}, sinking(),
                 [](const Function& f) { EXPECT_EQ(countKind(f, OpKind::Transpose), 1u); });
}

TEST(TransposeSinking, DoesNotSinkSharedTranspose) {
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 3, 4, 2}));
    Node* t = transpose(f, "t", x, kToNchw);
    f.addOutput("t", t);
    f.addOutput("relu", make(f, OpKind::Relu, "relu", {t}));
  };
  checkPreserved(build, {{"x", randomTensor({1, 3, 4, 2}, 4)}}, sinking(),
                 [](const Function& f) { EXPECT_EQ(countKind(f, OpKind::Transpose), 1u); });
}

TEST(TransposeSinking, SinksThroughConcatPadAndBatchNorm) {
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 4, 4, 3}));
    Node* a = transpose(f, "ta", conv(f, "conv_a", x, 3, 2, 1), kToNchw);
    Node* b = transpose(f, "tb", conv(f, "conv_b", x, 3, 3, 2), kToNchw);
    Node* cat = make(f, OpKind::Concat, "cat", {a, b}, Attributes{{"axis", int64_t(1)}});  // channels
    Node* bn = make(
        f, OpKind::BatchNorm, "bn",
        {cat, f.createConstant("s", randomTensor({5}, 3)), f.createConstant("o", randomTensor({5}, 4)),
         f.createConstant("m", randomTensor({5}, 5)), f.createConstant("v", randomTensor({5}, 6, 0.5, 2))},
        Attributes{{"epsilon", 1e-5}, {"axis", int64_t(1)}});
    Node* pad = make(f, OpKind::Pad, "pad", {bn},
                     Attributes{{"pads", std::vector<int64_t>{0, 0, 1, 2, 0, 0, 2, 1}},
                                {"mode", std::string("constant")},
                                {"value", 0.5}});
    f.addOutput("y", conv(f, "conv_c", transpose(f, "back", pad, kToNhwc), 5, 2, 9));
  };
  checkPreserved(build, {{"x", randomTensor({1, 4, 4, 3}, 2)}}, sinking(), [](const Function& f) {
    EXPECT_EQ(countKind(f, OpKind::Transpose), 0u);
    for (Node* node : f.nodes()) {
      if (node->kind() == OpKind::Concat) {
        EXPECT_EQ(node->attrs().getInt("axis"), 3);
      }
      if (node->kind() == OpKind::BatchNorm) {
        EXPECT_EQ(node->attrs().getInt("axis"), 3);
      }
      if (node->kind() == OpKind::Pad) {
        EXPECT_EQ(node->attrs().getInts("pads"), (std::vector<int64_t>{0, 1, 2, 0, 0, 2, 1, 0}));
      }
    }
  });
}

TEST(TransposeSinking, SinksThroughReductions) {
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 3, 4, 5}));
    Node* t = transpose(f, "t", x, kToNchw);  // [2,5,3,4]
    // Global average pool in NCHW: no transpose is needed on the NHWC data.
    f.addOutput("mean", make(f, OpKind::ReduceMean, "mean", {t},
                             Attributes{{"axes", std::vector<int64_t>{2, 3}}, {"keepdims", int64_t(0)}}));
    Node* t2 = transpose(f, "t2", x, kToNchw);
    f.addOutput("max", make(f, OpKind::ReduceMax, "max", {t2},
                            Attributes{{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(1)}}));
  };
  checkPreserved(build, {{"x", randomTensor({2, 3, 4, 5}, 8)}}, sinking(), [](const Function& f) {
    // The mean needs no transpose; the keepdims max needs one that only
    // moves its size-1 axis, which becomes a Reshape.
    EXPECT_EQ(countKind(f, OpKind::Transpose), 0u);
    for (Node* node : f.nodes()) {
      if (node->kind() == OpKind::Reshape) {
        EXPECT_EQ(node->input(0).node->kind(), OpKind::ReduceMax);
      }
    }
  });
}

TEST(TransposeSinking, KeepsSumOrderWhenReducedAxesWouldBeReordered) {
  // Summing in another order could round differently, so this one stays.
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 3, 4, 5}));
    Node* t = transpose(f, "t", x, {0, 2, 1, 3});
    f.addOutput("sum", make(f, OpKind::ReduceSum, "sum", {t},
                            Attributes{{"axes", std::vector<int64_t>{1, 2}}, {"keepdims", int64_t(0)}}));
  };
  checkPreserved(build, {{"x", randomTensor({2, 3, 4, 5}, 8)}}, sinking(),
                 [](const Function& f) { EXPECT_EQ(countKind(f, OpKind::Transpose), 1u); });
}

TEST(TransposeSinking, ComposesTransposes) {
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2, 3, 4}));
    Node* t1 = transpose(f, "t1", x, {1, 0, 2});
    f.addOutput("y", transpose(f, "t2", t1, {0, 2, 1}));
  };
  checkPreserved(build, {{"x", randomTensor({2, 3, 4}, 8)}}, sinking(), [](const Function& f) {
    ASSERT_EQ(countKind(f, OpKind::Transpose), 1u);
    for (Node* node : f.nodes())
      if (node->kind() == OpKind::Transpose) {
        EXPECT_EQ(node->attrs().getInts("perm"), (std::vector<int64_t>{1, 2, 0}));
      }
  });
}

TEST(TransposeSinking, TurnsUnitDimTransposeIntoReshape) {
  // Global pooling output [N,1,1,C] to NCHW and then flattened, as in CNN heads.
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 1, 1, 8}));
    Node* t = transpose(f, "t", x, kToNchw);
    f.addOutput("y",
                make(f, OpKind::Reshape, "flatten", {t}, Attributes{{"shape", std::vector<int64_t>{1, 8}}}));
  };
  checkPreserved(build, {{"x", randomTensor({1, 1, 1, 8}, 8)}}, sinking(), [](const Function& f) {
    EXPECT_EQ(countKind(f, OpKind::Transpose), 0u);
    EXPECT_EQ(countKind(f, OpKind::Reshape), 1u);
  });
}

// Shapes are not layouts: NCHW -> NHWC of a 1x8x8x8 tensor keeps the dims but
// moves every element. Only the permutation may decide that a Transpose is a
// no-op (the bug that gave wrong numbers on 1x1 convs at C = H = W).
TEST(TransposeSinking, KeepsTransposeWhoseDimsHappenToMatch) {
  for (const Dims& dims : {Dims{1, 8, 8, 8}, Dims{1, 3, 3, 3}, Dims{2, 4, 4, 4}}) {
    auto build = [&](Function& f) {
      Node* x = f.createPlaceholder("x", Type(ElemKind::F32, dims));
      f.addOutput("y", make(f, OpKind::Relu, "relu", {transpose(f, "t", x, kToNhwc)}));
    };
    checkPreserved(build, {{"x", randomTensor(dims, 81)}}, sinking(),
                   [](const Function& f) { EXPECT_EQ(countKind(f, OpKind::Transpose), 1u); });
  }
}

TEST(TransposeSinking, KeepsEqualDimTransposeBetweenReshapes) {
  // Reshape -> Transpose(perm swaps two equal axes) -> Reshape: the final
  // phase may merge the Reshapes only around an identity permutation.
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {16, 4}));
    Node* r = make(f, OpKind::Reshape, "r", {x}, Attributes{{"shape", std::vector<int64_t>{4, 4, 4}}});
    Node* t = transpose(f, "t", r, {0, 2, 1});
    f.addOutput("y",
                make(f, OpKind::Reshape, "back", {t}, Attributes{{"shape", std::vector<int64_t>{16, 4}}}));
  };
  checkPreserved(build, {{"x", randomTensor({16, 4}, 82)}}, sinking(),
                 [](const Function& f) { EXPECT_EQ(countKind(f, OpKind::Transpose), 1u); });
}

// ---- Pass gate (disabled passes, opt-bisect limit) ------------------------------

TEST(PassManager, GateSkipsDisabledPassesAndStopsAtTheLimit) {
  Function f("gated");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2}));
  f.addOutput("y", make(f, OpKind::Relu, "relu", {x}));
  PassGate gate({"cse"}, 2);
  PassManager pm(PassManagerOptions{.verifyEachPass = true, .printAfter = "", .gate = &gate});
  addGraphOptimizationPasses(pm);
  ASSERT_FALSE(pm.run(f));
  // constant-folding, dce, transpose-sinking, ...: the first two optional ones ran.
  EXPECT_EQ(gate.ran(), (std::vector<std::string>{"constant-folding", "dce"}));

  PassGate noCse({"cse"}, -1);
  PassManager all(PassManagerOptions{.verifyEachPass = true, .printAfter = "", .gate = &noCse});
  addGraphOptimizationPasses(all);
  ASSERT_FALSE(all.run(f));
  EXPECT_EQ(std::count(noCse.ran().begin(), noCse.ran().end(), "cse"), 0);
  EXPECT_EQ(noCse.ran().size(), all.passNames().size() - 1);
}

TEST(PassManager, GateNeverSkipsTheLowering) {
  Function f("lowered");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2}));
  f.addOutput("y", make(f, OpKind::Softplus, "softplus", {x}));
  PassGate gate({}, 0);
  LowerEverything backend;
  PassManager pm(PassManagerOptions{.verifyEachPass = true, .printAfter = "", .gate = &gate});
  pm.add(createLoweringPass(backend));
  ASSERT_FALSE(pm.run(f));
  EXPECT_EQ(countKind(f, OpKind::Softplus), 0u);
  EXPECT_TRUE(gate.ran().empty());
}

// ---- BatchNorm folding ----------------------------------------------------------------

void buildConvBatchNorm(Function& f, bool extraConvUser) {
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 5, 5, 3}));
  Node* c = conv(f, "conv", x, 3, 4, 1);
  Node* bn =
      make(f, OpKind::BatchNorm, "bn",
           {c, f.createConstant("s", randomTensor({4}, 3)), f.createConstant("o", randomTensor({4}, 4)),
            f.createConstant("m", randomTensor({4}, 5)), f.createConstant("v", randomTensor({4}, 6, 0.5, 2))},
           Attributes{{"epsilon", 1e-3}, {"axis", int64_t(3)}});
  f.addOutput("y", bn);
  if (extraConvUser) f.addOutput("conv", c);
}

TEST(BatchNormFolding, FoldsIntoConv) {
  checkPreserved([](Function& f) { buildConvBatchNorm(f, false); }, {{"x", randomTensor({1, 5, 5, 3}, 2)}},
                 passes(createBatchNormFoldingPass(), createDeadCodeEliminationPass()),
                 [](const Function& f) {
                   EXPECT_EQ(countKind(f, OpKind::BatchNorm), 0u);
                   EXPECT_EQ(countKind(f, OpKind::Conv), 1u);
                   EXPECT_EQ(countKind(f, OpKind::Constant), 2u);
                 },
                 1e-5);
}

TEST(BatchNormFolding, KeepsConvWithOtherUsers) {
  checkPreserved([](Function& f) { buildConvBatchNorm(f, true); }, {{"x", randomTensor({1, 5, 5, 3}, 2)}},
                 passes(createBatchNormFoldingPass()),
                 [](const Function& f) { EXPECT_EQ(countKind(f, OpKind::BatchNorm), 1u); });
}

// ---- Lowering -----------------------------------------------------------------------

/// Lowers a one-node graph (every operand a placeholder "in<i>") and checks
/// the result against `expected`.
void checkLowering(OpKind kind, std::vector<Tensor> operands, Attributes attrs, const Tensor& expected,
                   double tolerance = 1e-5) {
  Function f("f");
  TensorMap inputs;
  std::vector<NodeValue> values;
  for (size_t i = 0; i < operands.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    values.push_back(f.createPlaceholder(name, operands[i].type()));
    inputs.emplace(name, operands[i]);
  }
  Node* node = make(f, kind, "op", values, std::move(attrs));
  ASSERT_NE(node, nullptr);
  f.addOutput("y", node);
  TensorMap out = lowerAndEvaluate(f, inputs);
  EXPECT_EQ(countCategory(f, OpCategory::HighLevel), 0u);
  for (Node* n : f.nodes())
    if (!n->isPlaceholder() && !n->isConstant()) {
      EXPECT_EQ(n->name().rfind("op.", 0), 0u) << "new node '" << n->name() << "' does not name its source";
    }
  ASSERT_TRUE(out.count("y"));
  expectNear(out.at("y"), expected, tolerance, std::string(opName(kind)));
}

Tensor mapElements(const Tensor& x, const std::function<double(double)>& f) {
  Tensor y(x.type());
  for (int64_t i = 0; i < x.type().numElements(); ++i) y.setElementFromDouble(i, f(x.elementAsDouble(i)));
  return y;
}

TEST(Lowering, Activations) {
  Tensor x = randomTensor({2, 3, 4}, 21, -4, 4);
  checkLowering(OpKind::LeakyRelu, {x}, {{"alpha", 0.1}},
                mapElements(x, [](double v) { return v < 0 ? 0.1 * v : v; }));
  checkLowering(OpKind::Elu, {x}, {{"alpha", 0.7}},
                mapElements(x, [](double v) { return v < 0 ? 0.7 * (std::exp(v) - 1) : v; }));
  checkLowering(OpKind::Selu, {x}, {{"alpha", 1.67}, {"gamma", 1.05}},
                mapElements(x, [](double v) { return 1.05 * (v <= 0 ? 1.67 * (std::exp(v) - 1) : v); }));
  checkLowering(OpKind::Softplus, {x}, {}, mapElements(x, [](double v) { return std::log1p(std::exp(v)); }));
  checkLowering(OpKind::HardSigmoid, {x}, {{"alpha", 0.2}, {"beta", 0.5}},
                mapElements(x, [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); }));
  checkLowering(OpKind::HardSwish, {x}, {},
                mapElements(x, [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }));
  checkLowering(OpKind::Gelu, {x}, {{"approximate", std::string("none")}},
                mapElements(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }));
  checkLowering(OpKind::Gelu, {x}, {{"approximate", std::string("tanh")}}, mapElements(x, [](double v) {
                  return 0.5 * v *
                         (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
                }));
  Tensor slope = constantValues({4}, {0.1, -0.5, 2, 0});
  Tensor expected = x;
  for (int64_t i = 0; i < x.type().numElements(); ++i) {
    double v = x.elementAsDouble(i);
    expected.setElementFromDouble(i, v < 0 ? v * slope.elementAsDouble(i % 4) : v);
  }
  checkLowering(OpKind::PRelu, {x, slope}, {}, expected);
}

TEST(Lowering, SoftmaxAndLogSoftmax) {
  Tensor x = randomTensor({2, 3, 4}, 5, -10, 10);
  Tensor softmax(x.type()), logSoftmax(x.type());
  for (int64_t outer = 0; outer < 2; ++outer)
    for (int64_t inner = 0; inner < 4; ++inner) {  // softmax over axis 1
      auto at = [&](int64_t k) { return outer * 12 + k * 4 + inner; };
      double sum = 0;
      for (int64_t k = 0; k < 3; ++k) sum += std::exp(x.elementAsDouble(at(k)));
      for (int64_t k = 0; k < 3; ++k) {
        softmax.setElementFromDouble(at(k), std::exp(x.elementAsDouble(at(k))) / sum);
        logSoftmax.setElementFromDouble(at(k), x.elementAsDouble(at(k)) - std::log(sum));
      }
    }
  checkLowering(OpKind::Softmax, {x}, {{"axis", int64_t(1)}}, softmax);
  checkLowering(OpKind::LogSoftmax, {x}, {{"axis", int64_t(-2)}}, logSoftmax);
}

TEST(Lowering, Reductions) {
  Tensor x = randomTensor({2, 3, 4, 5}, 9);
  Tensor mean(Type(ElemKind::F32, {2, 5}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 5; ++c) {
      double sum = 0;
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t w = 0; w < 4; ++w) sum += x.elementAsDouble(((n * 3 + h) * 4 + w) * 5 + c);
      mean.setElementFromDouble(n * 5 + c, sum / 12);
    }
  checkLowering(OpKind::ReduceMean, {x}, {{"axes", std::vector<int64_t>{1, 2}}, {"keepdims", int64_t(0)}},
                mean);

  Tensor m = randomTensor({3, 4}, 10);
  Tensor sumSquare(Type(ElemKind::F32, {1, 4}));
  for (int64_t j = 0; j < 4; ++j) {
    double s = 0;
    for (int64_t i = 0; i < 3; ++i) s += m.elementAsDouble(i * 4 + j) * m.elementAsDouble(i * 4 + j);
    sumSquare.setElementFromDouble(j, s);
  }
  checkLowering(OpKind::ReduceSumSquare, {m}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t(1)}},
                sumSquare);
}

TEST(Lowering, Gemm) {
  Tensor a = randomTensor({4, 3}, 1);  // transposed: op(a) is [3, 4]
  Tensor b = randomTensor({4, 5}, 2);
  Tensor c = randomTensor({5}, 3);
  Tensor expected(Type(ElemKind::F32, {3, 5}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < 4; ++k) acc += a.elementAsDouble(k * 3 + i) * b.elementAsDouble(k * 5 + j);
      expected.setElementFromDouble(i * 5 + j, 0.5 * acc + 2.0 * c.elementAsDouble(j));
    }
  checkLowering(OpKind::Gemm, {a, b, c},
                {{"alpha", 0.5}, {"beta", 2.0}, {"trans_a", int64_t(1)}, {"trans_b", int64_t(0)}}, expected);
}

TEST(Lowering, Normalizations) {
  const double eps = 1e-3;
  // BatchNorm, NHWC, channel axis 3.
  Tensor x = randomTensor({2, 3, 3, 4}, 1);
  Tensor scale = randomTensor({4}, 2), bias = randomTensor({4}, 3), mean = randomTensor({4}, 4),
         var = randomTensor({4}, 5, 0.1, 2);
  Tensor bn(x.type());
  for (int64_t i = 0; i < x.type().numElements(); ++i) {
    int64_t c = i % 4;
    bn.setElementFromDouble(i, (x.elementAsDouble(i) - mean.elementAsDouble(c)) /
                                       std::sqrt(var.elementAsDouble(c) + eps) * scale.elementAsDouble(c) +
                                   bias.elementAsDouble(c));
  }
  checkLowering(OpKind::BatchNorm, {x, scale, bias, mean, var}, {{"epsilon", eps}, {"axis", int64_t(3)}}, bn);

  // InstanceNorm: per (n, c) over H and W.
  Tensor in(x.type());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 4; ++c) {
      double sum = 0, sq = 0;
      for (int64_t p = 0; p < 9; ++p) sum += x.elementAsDouble((n * 9 + p) * 4 + c);
      double mu = sum / 9;
      for (int64_t p = 0; p < 9; ++p) sq += std::pow(x.elementAsDouble((n * 9 + p) * 4 + c) - mu, 2);
      double sigma = std::sqrt(sq / 9 + eps);
      for (int64_t p = 0; p < 9; ++p) {
        int64_t i = (n * 9 + p) * 4 + c;
        in.setElementFromDouble(
            i, (x.elementAsDouble(i) - mu) / sigma * scale.elementAsDouble(c) + bias.elementAsDouble(c));
      }
    }
  checkLowering(OpKind::InstanceNorm, {x, scale, bias}, {{"epsilon", eps}, {"axis", int64_t(3)}}, in);

  // LayerNorm over dims [1, 3) of [2, 3, 4].
  Tensor y = randomTensor({2, 3, 4}, 6);
  Tensor lnScale = randomTensor({3, 4}, 7), lnBias = randomTensor({4}, 8);
  Tensor ln(y.type());
  for (int64_t n = 0; n < 2; ++n) {
    double sum = 0, sq = 0;
    for (int64_t k = 0; k < 12; ++k) sum += y.elementAsDouble(n * 12 + k);
    double mu = sum / 12;
    for (int64_t k = 0; k < 12; ++k) sq += std::pow(y.elementAsDouble(n * 12 + k) - mu, 2);
    double sigma = std::sqrt(sq / 12 + eps);
    for (int64_t k = 0; k < 12; ++k)
      ln.setElementFromDouble(n * 12 + k,
                              (y.elementAsDouble(n * 12 + k) - mu) / sigma * lnScale.elementAsDouble(k) +
                                  lnBias.elementAsDouble(k % 4));
  }
  checkLowering(OpKind::LayerNorm, {y, lnScale, lnBias}, {{"epsilon", eps}, {"axis", int64_t(1)}}, ln);
}

TEST(Lowering, KeepsWhatTheBackendImplements) {
  Function f("f");
  Node* a = f.createPlaceholder("a", Type(ElemKind::F32, {2, 3}));
  Node* b = f.createPlaceholder("b", Type(ElemKind::F32, {3, 4}));
  Node* c = f.createPlaceholder("c", Type(ElemKind::F32, {4}));
  Node* gemm = make(f, OpKind::Gemm, "gemm", {a, b, c},
                    {{"alpha", 1.0}, {"beta", 1.0}, {"trans_a", int64_t(0)}, {"trans_b", int64_t(0)}});
  f.addOutput("y", make(f, OpKind::Softmax, "softmax", {gemm}, {{"axis", int64_t(1)}}));
  KeepGemm backend;
  ASSERT_FALSE(runPasses(f, passes(createLoweringPass(backend))));
  EXPECT_EQ(countKind(f, OpKind::Gemm), 1u);
  EXPECT_EQ(countKind(f, OpKind::Softmax), 0u);
  EXPECT_EQ(countKind(f, OpKind::Exp), 1u);
}

// ---- Pass manager and pipeline ---------------------------------------------------------

class BreakNamesPass : public FunctionPass {
 public:
  std::string name() const override { return "broken"; }
  Expected<bool> run(Function& f) override {
    std::vector<Node*> nodes = f.nodes();
    nodes.back()->setName(nodes.front()->name());  // duplicate name: the verifier rejects it
    return true;
  }
};

TEST(PassManager, VerifiesAndNamesTheFailingPass) {
  Function f("f");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2}));
  f.addOutput("y", make(f, OpKind::Relu, "relu", {x}));
  PassManager pm(PassManagerOptions{.verifyEachPass = true, .printAfter = ""});
  pm.add(createDeadCodeEliminationPass());
  pm.add(std::make_unique<BreakNamesPass>());
  Error e = pm.run(f);
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message().rfind("after pass 'broken': ", 0), 0u) << e.message();
}

TEST(PassManager, PrintsAfterTheNamedPass) {
  Function f("f");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {2}));
  f.addOutput("y", make(f, OpKind::Relu, "relu", {x}));
  PassManager pm(PassManagerOptions{.verifyEachPass = false, .printAfter = "cse"});
  pm.add(createDeadCodeEliminationPass());
  pm.add(createCommonSubexpressionEliminationPass());
  testing::internal::CaptureStderr();
  ASSERT_FALSE(pm.run(f));
  std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed.find("// after dce"), std::string::npos);
  EXPECT_NE(printed.find("// after cse\n"), std::string::npos);
  EXPECT_NE(printed.find("relu"), std::string::npos);
}

TEST(Pipeline, OptimizesAnImportedConvBatchNormReluChain) {
  // What the importer produces for NCHW Conv -> BatchNorm -> Relu -> Conv.
  auto build = [](Function& f) {
    Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {1, 3, 6, 6}));
    Node* c1 = conv(f, "conv1", transpose(f, "t0", x, kToNhwc), 3, 4, 1);
    Node* t1 = transpose(f, "t1", c1, kToNchw);
    Node* bn = make(
        f, OpKind::BatchNorm, "bn",
        {t1, f.createConstant("s", randomTensor({4}, 3)), f.createConstant("o", randomTensor({4}, 4)),
         f.createConstant("m", randomTensor({4}, 5)), f.createConstant("v", randomTensor({4}, 6, 0.5, 2))},
        Attributes{{"epsilon", 1e-5}, {"axis", int64_t(1)}});
    Node* relu = make(f, OpKind::Relu, "relu", {bn});
    Node* c2 = conv(f, "conv2", transpose(f, "t2", relu, kToNhwc), 4, 2, 5);
    // Softmax over channels stays high level until lowering.
    f.addOutput(
        "y", make(f, OpKind::Softmax, "softmax", {transpose(f, "t3", c2, kToNchw)}, {{"axis", int64_t(1)}}));
  };
  Function reference("reference");
  build(reference);
  TensorMap inputs = {{"x", randomTensor({1, 3, 6, 6}, 12)}};
  TensorMap expected = lowerAndEvaluate(reference, inputs);

  Function f("f");
  build(f);
  PassManager pm(PassManagerOptions{.verifyEachPass = true, .printAfter = ""});
  addGraphOptimizationPasses(pm);
  LowerEverything backend;
  pm.add(createLoweringPass(backend));
  pm.add(createConstantFoldingPass());
  pm.add(createCommonSubexpressionEliminationPass());
  pm.add(createDeadCodeEliminationPass());
  Error e = pm.run(f);
  ASSERT_FALSE(e) << e.message();
  EXPECT_EQ(countKind(f, OpKind::BatchNorm), 0u);
  EXPECT_EQ(countCategory(f, OpCategory::HighLevel), 0u);
  EXPECT_EQ(countKind(f, OpKind::Transpose), 2u) << f.str();
  EXPECT_EQ(countKind(f, OpKind::Conv), 2u);
  Expected<TensorMap> actual = evaluate(f, inputs);
  ASSERT_TRUE(actual.hasValue()) << actual.error().message();
  expectNear(*actual, expected, 1e-5);
}

// ---- Einsum lowering against a naive evaluator ------------------------------------

/// Sums the product of the operands over every assignment of the labels of an
/// explicit equation ("ij,jk->ik", letters only), written apart from the
/// lowering's own parser.
Tensor naiveEinsum(const std::string& equation, const std::vector<Tensor>& operands) {
  const size_t arrow = equation.find("->");
  std::vector<std::string> terms(1);
  for (char c : equation.substr(0, arrow)) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back() += c;
  }
  const std::string output = equation.substr(arrow + 2);
  std::map<char, int64_t> extent;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) extent[terms[i][d]] = operands[i].type().dims[d];
  Dims outDims;
  for (char c : output) outDims.push_back(extent[c]);
  Tensor result(Type(operands[0].type().kind, outDims));
  for (int64_t i = 0; i < result.type().numElements(); ++i) result.setElementFromDouble(i, 0);
  std::vector<char> labels;
  for (const auto& [label, n] : extent) labels.push_back(label);
  std::map<char, int64_t> at;
  for (char label : labels) at[label] = 0;
  auto offset = [&](const std::string& term, const Dims& dims) {
    int64_t o = 0;
    for (size_t d = 0; d < term.size(); ++d) o = o * dims[d] + at[term[d]];
    return o;
  };
  for (;;) {
    double product = 1;
    for (size_t i = 0; i < terms.size(); ++i)
      product *= operands[i].elementAsDouble(offset(terms[i], operands[i].type().dims));
    const int64_t o = offset(output, outDims);
    result.setElementFromDouble(o, result.elementAsDouble(o) + product);
    size_t k = labels.size();
    while (k > 0 && ++at[labels[k - 1]] == extent[labels[k - 1]]) at[labels[--k]] = 0;
    if (k == 0) break;
  }
  return result;
}

TEST(Lowering, EinsumMatchesNaiveSummation) {
  struct Case {
    std::string equation, explicitEquation;
    std::vector<Dims> dims;
  };
  const Case cases[] = {
      {"ij,jk->ik", "ij,jk->ik", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"i,i", "i,i->", {{7}, {7}}},
      {"ij->ji", "ij->ji", {{3, 5}}},
      {"ij->i", "ij->i", {{3, 5}}},
      {"ij", "ij->ij", {{3, 5}}},
      {"ji", "ji->ij", {{3, 5}}},
      {"bhwc,hkc->bhwk", "bhwc,hkc->bhwk", {{2, 3, 4, 5}, {3, 6, 5}}},
      {"...ij,...jk->...ik", "aij,ajk->aik", {{2, 3, 4}, {2, 4, 3}}},
      {"abc,cd,de->abe", "abc,cd,de->abe", {{2, 3, 4}, {4, 5}, {5, 2}}},
      {"ij,kl->ijkl", "ij,kl->ijkl", {{2, 3}, {2, 2}}},
      {"bn,anm,bm->ba", "bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},
  };
  uint32_t seed = 300;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.equation);
    std::vector<Tensor> operands;
    for (const Dims& d : c.dims) operands.push_back(randomTensor(d, seed++));
    checkLowering(OpKind::Einsum, operands, {{"equation", c.equation}},
                  naiveEinsum(c.explicitEquation, operands), 1e-4);
  }
}

TEST(Lowering, EinsumDeclinesDiagonalsWithTheEquation) {
  Function f("f");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {3, 3}));
  Expected<Node*> node =
      f.create(OpKind::Einsum, "e", {x->result()}, Attributes{{"equation", std::string("ii->i")}});
  ASSERT_FALSE(node.hasValue());
  EXPECT_EQ(node.error().message().find("equation 'ii->i' repeats label 'i' in input 0 (a diagonal)") !=
                std::string::npos,
            true)
      << node.error().message();
}

}  // namespace
}  // namespace ember
