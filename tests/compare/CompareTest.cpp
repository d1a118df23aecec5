// ember compare and pass bisection, checked against bugs planted on purpose:
// the toy example backend with an off-by-one in its f32 Sub kernel (the
// plugin toy_off_by_one, BrokenToyKernels.cpp) must be pinned on the Sub node
// of data/chain.onnx, and a rewrite that swaps the operands of Sub, injected
// with CompileOptions::extraGraphPasses, must be named by the bisection.
// Every expectation follows from the planted bug, not from Ember's output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "../common/RunTool.h"
#include "backends/BuiltinBackends.h"
#include "ember/Compare.h"
#include "ember/Importer.h"
#include "ember/Pass.h"

namespace {

using namespace ember;
namespace fs = std::filesystem;

const std::string kData = COMPARE_DATA_DIR;
const std::string kChain = kData + "/chain.onnx";
constexpr const char* kBrokenToy = "toy_off_by_one";

// ---- helpers ----------------------------------------------------------------

std::function<Expected<Function*>(Module&)> importer(const std::string& path) {
  return [path](Module& module) { return importOnnxFile(path, module); };
}

/// x and y of chain.onnx: fixed values, all distinct, so any wrong element shows.
std::map<std::string, Tensor> chainInputs() {
  std::map<std::string, Tensor> inputs;
  for (const char* name : {"x", "y"}) {
    Tensor t(Type(ElemKind::F32, {4, 6}));
    for (int64_t i = 0; i < 24; ++i)
      t.as<float>()[i] = float(std::sin(double(i) * (name[0] == 'x' ? 1.3 : 0.7)));
    inputs.emplace(name, std::move(t));
  }
  return inputs;
}

class CompareTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registerBuiltinBackends();
    Error e = BackendRegistry::global().loadDirectory(COMPARE_PLUGIN_DIR);
    ASSERT_FALSE(e) << e.message();
  }
};

using Result = ember::test::ToolRun;

std::string readFile(const fs::path& path) { return ember::test::readWholeFile(path); }

/// Runs the built `ember` with `args`, capturing stdout and stderr.
Result ember(const std::vector<std::string>& args) {
  fs::path dir = fs::temp_directory_path() / ("compare_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return ember::test::runTool(EMBER_TOOL_PATH, args, dir);
}

/// A failure: the given status and exactly one line on stderr containing `text`.
void expectOneLineError(const Result& r, int status, const std::string& text) {
  EXPECT_EQ(r.status, status) << r.out << r.err;
  EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
}

// ---- TensorDiff -------------------------------------------------------------

Tensor f32(Dims dims, std::vector<float> values) {
  return Tensor::fromValues<float>(ElemKind::F32, std::move(dims), values);
}

TEST(TensorDiffTest, AbsoluteAndRelativeErrorOfTheWorstElement) {
  // Expected max magnitude 4; the worst error is 0.5 at [1, 0].
  TensorDiff d = diffTensors(f32({2, 2}, {1, -4, 2.5, 3}), f32({2, 2}, {1, -4, 2, 3.25}), Tolerance{});
  EXPECT_TRUE(d.typeMismatch.empty());
  EXPECT_DOUBLE_EQ(d.maxAbsError, 0.5);
  EXPECT_DOUBLE_EQ(d.maxMagnitude, 4.0);
  EXPECT_DOUBLE_EQ(d.maxRelError, 0.125);
  EXPECT_EQ(d.worstIndex, 2);
  EXPECT_EQ(TensorDiff::coordinates(d.worstIndex, {2, 2}), "[1, 0]");
  EXPECT_DOUBLE_EQ(d.expectedAtWorst, 2.0);
  EXPECT_DOUBLE_EQ(d.gotAtWorst, 2.5);
  EXPECT_EQ(d.numBeyondTolerance, 2);
  EXPECT_FALSE(d.withinTolerance);
  // rtol is relative to the max magnitude: 0.5 <= 0.125 * 4.
  EXPECT_TRUE(diffTensors(f32({2, 2}, {1, -4, 2.5, 3}), f32({2, 2}, {1, -4, 2, 3.25}), Tolerance{0.125, 0})
                  .withinTolerance);
  EXPECT_FALSE(diffTensors(f32({2, 2}, {1, -4, 2.5, 3}), f32({2, 2}, {1, -4, 2, 3.25}), Tolerance{0.12, 0})
                   .withinTolerance);
}

TEST(TensorDiffTest, ShapeOrKindMismatchIsNotCompared) {
  TensorDiff d = diffTensors(f32({3, 2}, {0, 0, 0, 0, 0, 0}), f32({2, 3}, {0, 0, 0, 0, 0, 0}), Tolerance{});
  EXPECT_EQ(d.typeMismatch, "f32<3x2> vs f32<2x3>");
  EXPECT_FALSE(d.withinTolerance);
  Tensor ints = Tensor::fromValues<int>(ElemKind::I32, {2}, std::vector<int>{1, 2});
  EXPECT_FALSE(diffTensors(ints, f32({2}, {1, 2}), Tolerance{}).typeMismatch.empty());
}

TEST(TensorDiffTest, IntegersAreExactUnlessAtolAllows) {
  Tensor a = Tensor::fromValues<int>(ElemKind::I32, {3}, std::vector<int>{1000, 2, 3});
  Tensor b = Tensor::fromValues<int>(ElemKind::I32, {3}, std::vector<int>{1000, 2, 4});
  // rtol does not apply to integers: 1 <= 1e-2 * 1000 would pass for floats.
  EXPECT_FALSE(diffTensors(a, b, Tolerance{1e-2, 0}).withinTolerance);
  EXPECT_TRUE(diffTensors(a, b, Tolerance{0, 1}).withinTolerance);
}

TEST(TensorDiffTest, HalfPrecisionHasItsOwnFloor) {
  // 1.0 and 1.001 differ by 1e-3 relative: too much for f32's 1e-4, within
  // f16's 1e-3 floor (both values are exact in f16: 1.001 rounds to 1.0009765625).
  auto f16 = [](float v) { return Tensor::fromValues<float>(ElemKind::F16, {1}, std::vector<float>{v}); };
  EXPECT_TRUE(diffTensors(f16(1.001f), f16(1.0f), Tolerance{}).withinTolerance);
  EXPECT_FALSE(diffTensors(f32({1}, {1.001f}), f32({1}, {1.0f}), Tolerance{}).withinTolerance);
}

TEST(TensorDiffTest, NaNMatchesNaNOnly) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(diffTensors(f32({2}, {nan, 1}), f32({2}, {nan, 1}), Tolerance{}).withinTolerance);
  TensorDiff d = diffTensors(f32({2}, {nan, 1}), f32({2}, {0, 1}), Tolerance{});
  EXPECT_FALSE(d.withinTolerance);
  EXPECT_TRUE(std::isinf(d.maxAbsError));
  EXPECT_EQ(d.worstIndex, 0);
}

// ---- per-node comparison: the broken toy kernel ----------------------------

TEST_F(CompareTest, NamesTheNodeRunningTheBrokenKernel) {
  auto comparison = compareModels(sideForBackend(importer(kChain), kBrokenToy),
                                  sideForBackend(importer(kChain), "reference"), chainInputs(), Tolerance{});
  ASSERT_TRUE(comparison) << comparison.error().message();
  ASSERT_EQ(comparison->outputs.size(), 1u);
  EXPECT_TRUE(comparison->outputs[0].diverged());
  EXPECT_TRUE(comparison->intermediatesNote.empty()) << comparison->intermediatesNote;
  EXPECT_TRUE(comparison->notCompared.empty());

  // chain.onnx: scale, shift, act, then the Sub 'diff', then square, squash.
  std::vector<std::string> order;
  for (const ValueComparison& node : comparison->nodes) order.push_back(node.node);
  EXPECT_EQ(order, (std::vector<std::string>{"scale", "shift", "act", "diff", "square", "squash"}));
  auto first = comparison->firstDivergentNode();
  ASSERT_TRUE(first);
  const ValueComparison& culprit = comparison->nodes[*first];
  EXPECT_EQ(culprit.node, "diff");
  EXPECT_EQ(culprit.op, "Sub");
  for (size_t i = 0; i < *first; ++i)
    EXPECT_FALSE(comparison->nodes[i].diverged()) << comparison->nodes[i].node;
  // The off-by-one touches the last element only.
  EXPECT_EQ(culprit.diff.worstIndex, 23);
  EXPECT_EQ(culprit.diff.numBeyondTolerance, 1);
  EXPECT_EQ(culprit.type.str(), "f32<4x6>");
  EXPECT_NE(culprit.diff.gotAtWorst, culprit.diff.expectedAtWorst);
  EXPECT_NEAR(culprit.diff.maxAbsError, std::fabs(culprit.diff.gotAtWorst - culprit.diff.expectedAtWorst),
              1e-6);
  // Everything after it diverges too, through the wrong element.
  for (size_t i = *first; i < comparison->nodes.size(); ++i) EXPECT_TRUE(comparison->nodes[i].diverged());
}

TEST_F(CompareTest, ShippedKernelsAgreeWithTheReference) {
  // The same comparison with the oracle on both sides agrees: nothing is
  // flagged without a bug.
  auto comparison = compareModels(sideForBackend(importer(kChain), "reference"),
                                  sideForBackend(importer(kChain), "reference"), chainInputs(), Tolerance{});
  ASSERT_TRUE(comparison) << comparison.error().message();
  EXPECT_TRUE(comparison->agree());
  EXPECT_EQ(comparison->nodes.size(), 6u);
}

TEST_F(CompareTest, CommandLineNamesTheNodeAndExitsOne) {
  Result r = ember({"compare", kChain, "--backend", kBrokenToy, "--backend-path", COMPARE_PLUGIN_DIR,
                    "--random-inputs", "--seed", "3", "--all"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  size_t first = r.out.find("first divergent node:");
  ASSERT_NE(first, std::string::npos) << r.out;
  // The row after the header names the node, its op, shape and kind.
  std::istringstream rows(r.out.substr(first));
  std::string line, header, row;
  std::getline(rows, line);
  std::getline(rows, header);
  std::getline(rows, row);
  std::istringstream words(row);
  std::string node, op, shape, kind;
  words >> node >> op >> shape >> kind;
  EXPECT_EQ(node, "diff");
  EXPECT_EQ(op, "Sub");
  EXPECT_EQ(shape, "4x6");
  EXPECT_EQ(kind, "f32");
  EXPECT_NE(r.out.find("6 of 6 nodes compared, 3 diverged"), std::string::npos) << r.out;
}

TEST_F(CompareTest, CommandLineReportJson) {
  fs::path report = fs::temp_directory_path() / ("compare_report_" + std::to_string(::getpid()) + ".json");
  Result r = ember({"compare", kChain, "--backend", kBrokenToy, "--backend-path", COMPARE_PLUGIN_DIR,
                    "--random-inputs", "--report-json", report.string()});
  EXPECT_EQ(r.status, 1) << r.err;
  std::string json = readFile(report);
  EXPECT_NE(json.find("\"agree\": false"), std::string::npos) << json;
  size_t first = json.find("\"first_divergent_node\"");
  ASSERT_NE(first, std::string::npos) << json;
  EXPECT_EQ(json.find("\"name\": \"diff\"", first), json.find("\"name\"", first)) << json;
  fs::remove(report);
}

TEST_F(CompareTest, CommandLineAgreementExitsZero) {
  Result r = ember({"compare", kChain, "--random-inputs"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("6 of 6 nodes compared, 0 diverged"), std::string::npos) << r.out;
  // A second model is matched node by node; the broken toy against it
  // diverges at the same node.
  Result model = ember({"compare", kChain, "--random-inputs", "--against", kChain});
  EXPECT_EQ(model.status, 0) << model.out << model.err;
  EXPECT_NE(model.out.find("6 of 6 nodes compared, 0 diverged"), std::string::npos) << model.out;
  Result broken = ember({"compare", kChain, "--random-inputs", "--backend", kBrokenToy, "--backend-path",
                         COMPARE_PLUGIN_DIR, "--against", kChain, "--outputs-only"});
  EXPECT_EQ(broken.status, 1) << broken.out << broken.err;
  EXPECT_NE(broken.out.find("outputs: 1 of 1 diverged"), std::string::npos) << broken.out;
  EXPECT_NE(broken.out.find("0 of 0 nodes compared"), std::string::npos) << broken.out;
}

// ---- pass bisection ---------------------------------------------------------

/// A wrong rewrite: a - b becomes b - a.
class SwapSubOperands : public FunctionPass {
 public:
  std::string name() const override { return "swap-sub-operands"; }
  Expected<bool> run(Function& function) override {
    bool changed = false;
    for (Node* node : function.nodes()) {
      if (node->kind() != OpKind::Sub) continue;
      NodeValue lhs = node->input(0);
      node->setInput(0, node->input(1));
      node->setInput(1, lhs);
      changed = true;
    }
    return changed;
  }
};

/// A correct rewrite: a * b becomes b * a (Mul is commutative).
class SwapMulOperands : public FunctionPass {
 public:
  std::string name() const override { return "swap-mul-operands"; }
  Expected<bool> run(Function& function) override {
    bool changed = false;
    for (Node* node : function.nodes()) {
      if (node->kind() != OpKind::Mul) continue;
      NodeValue lhs = node->input(0);
      node->setInput(0, node->input(1));
      node->setInput(1, lhs);
      changed = true;
    }
    return changed;
  }
};

/// chain.onnx without its final Tanh's even symmetry hiding the swap:
/// (a - b)^2 == (b - a)^2, so the model output is `diff` itself.
Expected<Function*> buildSubChain(Module& module) {
  Function& f = module.createFunction("sub_chain");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {4, 6}));
  Node* y = f.createPlaceholder("y", Type(ElemKind::F32, {4, 6}));
  auto act = f.create(OpKind::Relu, "act", {x->result()});
  if (!act) return act.error();
  auto diff = f.create(OpKind::Sub, "diff", {(*act)->result(), y->result()});
  if (!diff) return diff.error();
  auto scaled = f.create(OpKind::Mul, "scaled", {(*diff)->result(), x->result()});
  if (!scaled) return scaled.error();
  f.addOutput("out", (*scaled)->result());
  return &f;
}

TEST_F(CompareTest, BisectionNamesTheInjectedWrongRewrite) {
  CompileOptions options;
  options.extraGraphPasses.push_back([] { return std::make_unique<SwapSubOperands>(); });
  CompareSide test = sideForBackend(buildSubChain, "reference", options);
  CompareSide oracle = sideForBackend(buildSubChain, "reference");
  auto bisection = bisectPasses(test, &oracle, chainInputs(), Tolerance{});
  ASSERT_TRUE(bisection) << bisection.error().message();
  // With no optional pass (the injected one is optional too) the model is right.
  EXPECT_FALSE(bisection->baselineVersusOracle);
  ASSERT_TRUE(bisection->culprit);
  EXPECT_EQ(bisection->culpritPass, "swap-sub-operands");
  EXPECT_FALSE(bisection->culpritIsIRPass);
  EXPECT_EQ(bisection->passesRun[*bisection->culprit - 1], "swap-sub-operands");
  ASSERT_TRUE(bisection->changedOutput);
  EXPECT_EQ(bisection->changedOutput->node, "out");
  EXPECT_TRUE(bisection->culpritCompileError.empty());
  // The standard graph passes run before it and must not be blamed.
  EXPECT_GT(*bisection->culprit, 1u);
}

TEST_F(CompareTest, BisectionFindsNoCulpritWhenEveryPassIsRight) {
  CompileOptions options;
  options.extraGraphPasses.push_back([] { return std::make_unique<SwapMulOperands>(); });
  CompareSide test = sideForBackend(buildSubChain, "reference", options);
  CompareSide oracle = sideForBackend(buildSubChain, "reference");
  auto bisection = bisectPasses(test, &oracle, chainInputs(), Tolerance{});
  ASSERT_TRUE(bisection) << bisection.error().message();
  EXPECT_FALSE(bisection->culprit);
  EXPECT_FALSE(bisection->baselineVersusOracle);
  // Every pass execution was tried: baseline, full pipeline, then each limit.
  EXPECT_EQ(bisection->compilations, bisection->passesRun.size() + 2);
  EXPECT_NE(std::find(bisection->passesRun.begin(), bisection->passesRun.end(), "swap-mul-operands"),
            bisection->passesRun.end());
}

TEST_F(CompareTest, BisectionReportsABackendThatIsWrongWithoutPasses) {
  // The broken kernel is wrong whatever the passes: the baseline differs from
  // the oracle.
  CompareSide test = sideForBackend(importer(kChain), kBrokenToy);
  CompareSide oracle = sideForBackend(importer(kChain), "reference");
  auto bisection = bisectPasses(test, &oracle, chainInputs(), Tolerance{});
  ASSERT_TRUE(bisection) << bisection.error().message();
  ASSERT_TRUE(bisection->baselineVersusOracle);
  EXPECT_EQ(bisection->baselineVersusOracle->node, "out");
}

/// The reference backend without Add: a model whose only Add adds two
/// constants compiles for it only once constant folding has run.
class ReferenceWithoutAdd : public Backend {
 public:
  ReferenceWithoutAdd() : reference_(BackendRegistry::global().create("reference").take()) {}
  std::string name() const override { return "reference_without_add"; }
  bool supports(const NodeInfo& info) const override {
    return info.kind != OpKind::Add && reference_->supports(info);
  }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    return reference_->compile(ir);
  }

 private:
  std::unique_ptr<Backend> reference_;
};

Expected<Function*> buildFoldableAdd(Module& module) {
  Function& f = module.createFunction("foldable_add");
  Node* x = f.createPlaceholder("x", Type(ElemKind::F32, {4, 6}));
  Node* one = f.createConstant("one", f32({1}, {1}));
  Node* two = f.createConstant("two", f32({1}, {2}));
  auto sum = f.create(OpKind::Add, "three", {one->result(), two->result()});
  if (!sum) return sum.error();
  auto scaled = f.create(OpKind::Mul, "scaled", {x->result(), (*sum)->result()});
  if (!scaled) return scaled.error();
  f.addOutput("out", (*scaled)->result());
  return &f;
}

TEST_F(CompareTest, BisectionBaselineIsTheFewestPassesThatCompile) {
  CompareSide test;
  test.makeModel = buildFoldableAdd;
  test.makeBackend = []() -> Expected<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<ReferenceWithoutAdd>());
  };
  test.label = "'reference_without_add'";
  CompareSide oracle = sideForBackend(buildFoldableAdd, "reference");
  std::map<std::string, Tensor> inputs = chainInputs();
  inputs.erase("y");
  auto bisection = bisectPasses(test, &oracle, inputs, Tolerance{});
  ASSERT_TRUE(bisection) << bisection.error().message();
  // Constant folding is the first pass of the pipeline.
  ASSERT_FALSE(bisection->passesRun.empty());
  EXPECT_EQ(bisection->passesRun[0], "constant-folding");
  EXPECT_EQ(bisection->baselineLimit, 1u);
  EXPECT_NE(bisection->baselineNote.find("with 0: "), std::string::npos) << bisection->baselineNote;
  EXPECT_NE(bisection->baselineNote.find("node 'three' (Add): unsupported"), std::string::npos)
      << bisection->baselineNote;
  EXPECT_FALSE(bisection->baselineVersusOracle);
  EXPECT_FALSE(bisection->culprit);
}

TEST_F(CompareTest, CommandLineBisectionWithCorrectPasses) {
  Result r = ember({"compare", kChain, "--random-inputs", "--bisect-passes"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no optional pass changes the outputs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("baseline (no optional pass) agrees with 'reference'"), std::string::npos) << r.out;
}

// ---- bad input: one line, non-zero exit ------------------------------------

TEST_F(CompareTest, OutputsThatDifferInNameOrShape) {
  expectOneLineError(
      ember({"compare", kChain, "--random-inputs", "--against", kData + "/chain_renamed.onnx"}), 1,
      "output 'result' of '" + kData + "/chain_renamed.onnx' on 'reference' is not an output of");
  expectOneLineError(
      ember({"compare", kChain, "--random-inputs", "--against", kData + "/chain_reshaped.onnx"}), 1,
      "output 'out': 'reference' gives f32<4x6>, '" + kData +
          "/chain_reshaped.onnx' on 'reference' gives f32<6x4>");
  auto comparison = compareModels(sideForBackend(importer(kChain), "reference"),
                                  sideForBackend(importer(kData + "/chain_reshaped.onnx"), "reference"),
                                  chainInputs(), Tolerance{});
  ASSERT_FALSE(comparison);
  EXPECT_NE(comparison.error().message().find("gives f32<6x4>"), std::string::npos);
}

TEST_F(CompareTest, ExpectedOutputsDirectory) {
  fs::path dir = fs::temp_directory_path() / ("compare_expected_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  expectOneLineError(ember({"compare", kChain, "--random-inputs", "--against", dir.string()}), 1,
                     "no " + (dir / "out.npy").string() + " for output 'out'");
  // The reference's own outputs, written by `ember run`, agree.
  Result run = ember({"run", kChain, "--random-inputs", "--output-dir", dir.string(), "--quiet"});
  ASSERT_EQ(run.status, 0) << run.err;
  Result same = ember({"compare", kChain, "--random-inputs", "--against", dir.string()});
  EXPECT_EQ(same.status, 0) << same.out << same.err;
  // Other inputs give other outputs.
  Result other = ember({"compare", kChain, "--random-inputs", "--seed", "9", "--against", dir.string()});
  EXPECT_EQ(other.status, 1) << other.out << other.err;
  EXPECT_NE(other.out.find("outputs: 1 of 1 diverged"), std::string::npos) << other.out;
  fs::remove_all(dir);
}

TEST_F(CompareTest, MissingInputsUnknownBackendsAndBadFlags) {
  expectOneLineError(ember({"compare", kChain}), 1, "missing model input(s) 'x' f32<4x6>, 'y' f32<4x6>");
  expectOneLineError(ember({"compare", kChain, "--random-inputs", "--backend", "no_such_backend"}), 1,
                     "unknown backend 'no_such_backend'");
  expectOneLineError(ember({"compare", kChain, "--random-inputs", "--against", "no_such_backend"}), 1,
                     "--against: unknown backend 'no_such_backend'");
  expectOneLineError(ember({"compare", kChain, "--random-inputs", "--rtol", "-1"}), 2,
                     "--rtol expects a non-negative number");
  expectOneLineError(ember({"compare", kChain, "--random-inputs", "--disable-pass", "lowering"}), 2,
                     "pass 'lowering' is required");
  expectOneLineError(ember({"compare"}), 2, "ember compare: missing MODEL.onnx");
}

TEST_F(CompareTest, HelpExitsZero) {
  Result r = ember({"compare", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("usage: ember compare MODEL.onnx"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--bisect-passes"), std::string::npos);
}

// ---- the pass flags of run, compile and dump --------------------------------

TEST_F(CompareTest, PassLimitAndDisablePassFlags) {
  Result all = ember({"dump", "--list-passes"});
  EXPECT_EQ(all.status, 0) << all.err;
  for (const std::string& name : optionalPassNames())
    EXPECT_NE(all.out.find(name + "  "), std::string::npos) << name;
  Result limited = ember({"dump", "--list-passes", kChain, "--pass-limit", "3"});
  EXPECT_EQ(limited.status, 0) << limited.err;
  EXPECT_EQ(std::count(limited.out.begin(), limited.out.end(), '\n'), 3) << limited.out;
  Result disabled = ember({"dump", "--list-passes", kChain, "--disable-pass", "cse"});
  EXPECT_EQ(disabled.status, 0) << disabled.err;
  EXPECT_EQ(disabled.out.find(" cse "), std::string::npos) << disabled.out;
  EXPECT_EQ(ember({"run", kChain, "--random-inputs", "--pass-limit", "0", "--quiet"}).status, 0);
  EXPECT_EQ(ember({"compile", kChain, "--disable-pass", "dce", "--quiet"}).status, 0);
  expectOneLineError(ember({"compile", kChain, "--disable-pass", "no-such-pass"}), 2,
                     "unknown pass 'no-such-pass' (optional passes: constant-folding");
}

}  // namespace
