// The model zoo: one small model per architecture family users bring (issue 16),
// exported by `scripts/gen_models.py --zoo` from tests/models/zoo_models.py, run
// on the reference and cpu backends and compared with PyTorch's own output.
//
// A family that does not import fails here with the importer's message; only a
// case whose missing feature is named below may skip.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <tuple>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Runtime.h"
#include "tests/difftest/FaultInjection.h"

#ifndef EMBER_ZOO_TESTDATA_DIR
#error "EMBER_ZOO_TESTDATA_DIR must name the directory written by scripts/gen_models.py --zoo"
#endif

namespace {

namespace fs = std::filesystem;

/// A zoo model and its tolerance: max |got - PyTorch| <= relativeTolerance * max |PyTorch|.
/// f32 results differ from PyTorch's only by summation order; the bound is the
/// worst relative error measured on either backend (docs/testing.md, "Model
/// zoo") with a margin of at least 10x, and far below what a wrong kernel gives
/// (errors of order 1).
struct ZooModel {
  const char* name;
  double relativeTolerance;
};

const ZooModel kZoo[] = {
    // Families that did not import when the zoo was written.
    {"swin", 1e-5},              // measured 2.8e-7
    {"maxvit", 1e-5},            // 2.6e-7
    {"gpt", 1e-5},               // 2.1e-7
    {"lstm_gru", 1e-5},          // 1.3e-7: 10 steps of contractive sigmoid/tanh updates
    {"lstm_gru_lengths", 1e-5},  // 1.6e-7
    {"r3d", 1e-4},   // 3-D convs summed over up to 27 x 512 terms, lowered as per-depth 2-D partial sums
    {"unet", 1e-5},  // 3.3e-7
    // Families that already worked.
    {"vit", 1e-5},              // 8.0e-7
    {"convnext", 1e-5},         // 2.7e-7
    {"efficientnet_v2", 1e-5},  // 2.3e-7
    {"regnet_y", 1e-5},         // 3.6e-7
    {"resnext", 1e-5},          // 3.9e-7
    {"mobilenet_v3", 1e-5},     // 7.0e-7
    {"lraspp", 1e-5},           // 5.7e-7
    {"deeplabv3", 1e-4},        // 1.9e-6: dilated convs over 960 channels, bilinear upsampling
    {"fcn", 1e-4},              // 2.3e-6: dilated Bottlenecks to 2048 channels, 3x3 head over 2048
    {"audio_conv1d", 1e-5},     // 5.8e-8
    {"bert", 1e-5},             // 3.4e-7
    {"mha", 1e-5},              // 3.1e-7
};

void PrintTo(const ZooModel& model, std::ostream* os) { *os << model.name; }

std::string dataPath(const std::string& file) { return (fs::path(EMBER_ZOO_TESTDATA_DIR) / file).string(); }

struct ZooRun {
  ember::Tensor output;
  double compileSeconds = 0, runSeconds = 0;
};

/// Imports `model`, compiles it for `backendName`, feeds every input from
/// MODEL.in.NAME.npy and returns the one output.
ember::Expected<ZooRun> runZooModel(const std::string& model, const std::string& backendName,
                                    const ember::CompileOptions& options = {}) {
  ember::Module module;
  EMBER_ASSIGN_OR_RETURN(ember::Function * function,
                         ember::importOnnxFile(dataPath(model + ".onnx"), module));
  EMBER_ASSIGN_OR_RETURN(auto backend, ember::BackendRegistry::global().create(backendName));
  auto start = std::chrono::steady_clock::now();
  EMBER_ASSIGN_OR_RETURN(auto compiled, ember::compileFunction(*function, std::move(backend), options));
  ZooRun result;
  result.compileSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (compiled.outputs.size() != 1)
    return ember::makeError(model, ": expected one output, got ", compiled.outputs.size());

  ember::ExecutionContext context;
  for (const auto& [name, type] : compiled.inputs) {
    EMBER_ASSIGN_OR_RETURN(ember::Tensor value, ember::readNpy(dataPath(model + ".in." + name + ".npy")));
    context.setInput(name, value);
  }
  EMBER_RETURN_IF_ERROR(ember::checkInputs(compiled, context));
  start = std::chrono::steady_clock::now();
  EMBER_RETURN_IF_ERROR(compiled.function->execute(context));
  result.runSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ember::Tensor* output = context.output(compiled.outputs[0].first);
  if (!output) return ember::makeError(model, ": output '", compiled.outputs[0].first, "' was not produced");
  result.output = *output;
  return result;
}

/// Largest |golden| and largest |got - golden| (NaN counts as infinitely far), and where.
void compare(const ember::Tensor& output, const ember::Tensor& golden, double& maxGolden, double& maxError,
             int64_t& worst) {
  for (int64_t i = 0; i < golden.type().numElements(); ++i) {
    maxGolden = std::max(maxGolden, std::fabs(golden.elementAsDouble(i)));
    double error = std::fabs(output.elementAsDouble(i) - golden.elementAsDouble(i));
    if (std::isnan(error)) error = INFINITY;
    if (error > maxError) {
      maxError = error;
      worst = i;
    }
  }
}

using ZooCase = std::tuple<ZooModel, std::string>;

class ZooTest : public testing::TestWithParam<ZooCase> {
 protected:
  static void SetUpTestSuite() { ember::registerBuiltinBackends(); }
};

TEST_P(ZooTest, MatchesPyTorch) {
  const auto& [zoo, backendName] = GetParam();
  const std::string model = zoo.name;
  ASSERT_TRUE(fs::exists(dataPath(model + ".onnx")))
      << dataPath(model + ".onnx") << " is missing: build the zoo_data target (scripts/gen_models.py --zoo)";
  auto golden = ember::readNpy(dataPath(model + ".out.npy"));
  ASSERT_TRUE(golden) << golden.error().message();

  auto run = runZooModel(model, backendName);
  ASSERT_TRUE(run) << model << " on " << backendName << ": " << run.error().message();
  const ember::Tensor& output = run->output;
  ASSERT_EQ(output.type().kind, golden->type().kind);
  ASSERT_EQ(output.type().dims, golden->type().dims) << "shape " << ember::dimsStr(output.type().dims)
                                                     << ", PyTorch " << ember::dimsStr(golden->type().dims);

  double maxGolden = 0, maxError = 0;
  int64_t worst = 0;
  compare(output, *golden, maxGolden, maxError, worst);
  ASSERT_GT(maxGolden, 0) << model << ": PyTorch's output is all zeros, which checks nothing";
  RecordProperty("relative_error", testing::PrintToString(maxError / maxGolden));
  RecordProperty("compile_seconds", testing::PrintToString(run->compileSeconds));
  RecordProperty("run_seconds", testing::PrintToString(run->runSeconds));
  std::cout << "[ zoo      ] " << model << " on " << backendName << ": relative error "
            << maxError / maxGolden << " (tolerance " << zoo.relativeTolerance << "), compile "
            << run->compileSeconds << " s, run " << run->runSeconds << " s\n";
  EXPECT_LE(maxError, zoo.relativeTolerance * maxGolden)
      << "worst element " << worst << ": PyTorch " << golden->elementAsDouble(worst) << ", got "
      << output.elementAsDouble(worst);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooTest,
                         testing::Combine(testing::ValuesIn(kZoo), testing::Values("reference", "cpu")),
                         [](const testing::TestParamInfo<ZooCase>& info) {
                           return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param);
                         });

// The zoo's power against the bug class of the correctness issue: with a
// graph pass that removes every Transpose whose input and output dims are
// equal (decided from shapes, not the permutation), the UNet, whose first
// level and output are C = H = W, must no longer match PyTorch.
TEST(ZooPower, UNetCatchesTheEqualShapeTransposeFault) {
  ember::registerBuiltinBackends();
  ember::CompileOptions faulty;
  faulty.extraGraphPasses.push_back([] { return difftest::createFaultPass("equal-shape-transpose"); });
  auto golden = ember::readNpy(dataPath("unet.out.npy"));
  ASSERT_TRUE(golden) << golden.error().message();
  auto run = runZooModel("unet", "reference", faulty);
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_EQ(run->output.type().dims, golden->type().dims);
  double maxGolden = 0, maxError = 0;
  int64_t worst = 0;
  compare(run->output, *golden, maxGolden, maxError, worst);
  std::cout << "[ zoo      ] unet with the equal-shape-transpose fault: relative error "
            << maxError / maxGolden << "\n";
  EXPECT_GT(maxError, 1e-5 * maxGolden) << "the fault went unnoticed";
}

}  // namespace
