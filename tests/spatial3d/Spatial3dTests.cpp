// 3-D Conv, ConvTranspose, MaxPool, AvgPool, BatchNorm and InstanceNorm
// (NCDHW, exported from torch.nn by scripts/gen_spatial3d_tests.py) against
// PyTorch's outputs on the reference and cpu backends (LpPool and
// GlobalLpPool in 1-D to 3-D against numpy's float64 evaluation of their
// definition), and int8 on the npu
// (with reference fallback) bit for bit against the reference backend's int8
// run. The importer lowers the 3-D ops to 2-D NHWC primitives
// (docs/importer.md), so every backend runs them.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <tuple>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Pass.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"

#ifndef EMBER_SPATIAL3D_TESTDATA_DIR
#error "EMBER_SPATIAL3D_TESTDATA_DIR must name the directory written by scripts/gen_spatial3d_tests.py"
#endif

namespace {

namespace fs = std::filesystem;

// Relative to the output's magnitude: far below any real bug, above f32
// reordering noise (the K_d partial convolutions are summed in another order
// than PyTorch's).
constexpr double kRelativeTolerance = 1e-4;

const std::string kCases[] = {
    "conv3d_padded",
    "conv3d_strided_dilated",
    "conv3d_groups_nobias",
    "conv3d_depthwise_cube",
    "convtranspose3d_strided",
    "convtranspose3d_groups_dilated",
    "convtranspose3d_cropped",
    "maxpool3d_ceil",
    "maxpool3d_dilated",
    "avgpool3d_count_pad_ceil",
    "avgpool3d_no_count_pad",
    "avgpool3d_depth_only",
    "maxpool3d_planar_only",
    "batchnorm3d",
    "instancenorm3d",
    "mini_r3d",
    "lppool1d_p1",
    "lppool2d_p2",
    "lppool3d_p3",
    "globallppool2d_p2",
    "globallppool3d_p3",
};

std::string dataPath(const std::string& model, const std::string& suffix) {
  return (fs::path(EMBER_SPATIAL3D_TESTDATA_DIR) / (model + suffix)).string();
}

struct RunResult {
  ember::Tensor output;
  ember::CompileReport report;
};

/// Imports `model`, compiles it for `backendName` with `options` and runs it on `input`.
ember::Expected<RunResult> run(const std::string& model, const std::string& backendName,
                               const ember::Tensor& input, ember::CompileOptions options = {}) {
  ember::Module module;
  auto function = ember::importOnnxFile(dataPath(model, ".onnx"), module);
  if (!function) return function.error();
  auto backend = ember::BackendRegistry::global().create(backendName);
  if (!backend) return backend.error();
  options.verifyEachPass = true;
  auto compiled = ember::compileFunction(**function, backend.take(), options);
  if (!compiled) return compiled.error();
  ember::ExecutionContext context;
  context.setInput(compiled->inputs.at(0).first, input);
  EMBER_RETURN_IF_ERROR(ember::checkInputs(*compiled, context));
  EMBER_RETURN_IF_ERROR(compiled->function->execute(context));
  const ember::Tensor* output = context.output(compiled->outputs.at(0).first);
  if (!output) return ember::makeError(model, ": no output");
  return RunResult{*output, compiled->report};
}

/// A calibration profile of `model` for `input`, on the reference backend.
ember::Expected<ember::QuantizationProfile> calibrate(const std::string& model, const ember::Tensor& input) {
  ember::Module module;
  auto function = ember::importOnnxFile(dataPath(model, ".onnx"), module);
  if (!function) return function.error();
  ember::PassManager pm;
  ember::addGraphOptimizationPasses(pm);
  EMBER_RETURN_IF_ERROR(pm.run(**function));
  auto backend = ember::BackendRegistry::global().create("reference");
  if (!backend) return backend.error();
  std::vector<ember::CalibrationSample> samples{{{(*function)->inputs().at(0)->name(), input}}};
  return ember::calibrate(**function, backend.take(), samples, ember::CalibrationOptions{});
}

using CaseOnBackend = std::tuple<std::string, std::string>;

class Spatial3dTest : public testing::TestWithParam<CaseOnBackend> {
 protected:
  static void SetUpTestSuite() { ember::registerBuiltinBackends(); }
};

TEST_P(Spatial3dTest, MatchesOracle) {
  const auto& [model, backend] = GetParam();
  ASSERT_TRUE(fs::exists(dataPath(model, ".onnx")))
      << dataPath(model, ".onnx") << " is missing: build the spatial3d_data target";
  auto input = ember::readNpy(dataPath(model, ".input.npy"));
  ASSERT_TRUE(input) << input.error().message();
  auto golden = ember::readNpy(dataPath(model, ".output.npy"));
  ASSERT_TRUE(golden) << golden.error().message();

  auto result = run(model, backend, *input);
  ASSERT_TRUE(result) << result.error().message();
  const ember::Tensor& output = result->output;
  ASSERT_EQ(output.type().kind, golden->type().kind);
  ASSERT_EQ(output.type().dims, golden->type().dims)
      << "shape " << ember::dimsStr(output.type().dims) << ", oracle " << ember::dimsStr(golden->type().dims);
  const int64_t n = golden->type().numElements();
  double maxGolden = 0, maxError = 0;
  int64_t worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double expected = golden->elementAsDouble(i);
    double error = std::fabs(output.elementAsDouble(i) - expected);
    if (std::isnan(error)) error = INFINITY;  // a NaN is never close
    maxGolden = std::max(maxGolden, std::fabs(expected));
    if (error > maxError) {
      maxError = error;
      worst = i;
    }
  }
  std::cout << "[ spatial3d ] " << model << " on " << backend << ": max abs error " << maxError
            << ", max |oracle| " << maxGolden << "\n";
  EXPECT_LE(maxError, kRelativeTolerance * maxGolden)
      << "worst element " << worst << ": oracle " << golden->elementAsDouble(worst) << ", Ember "
      << output.elementAsDouble(worst);
}

INSTANTIATE_TEST_SUITE_P(Cases, Spatial3dTest,
                         testing::Combine(testing::ValuesIn(kCases),
                                          testing::Values(std::string("reference"), std::string("cpu"))),
                         [](const testing::TestParamInfo<CaseOnBackend>& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

class Spatial3dNpuTest : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { ember::registerBuiltinBackends(); }
};

// Both runs quantize the same nodes (the quantizer sees the npu + reference
// support union), so the outputs must be identical bits.
TEST_P(Spatial3dNpuTest, Int8BitExactAgainstReference) {
  const std::string model = GetParam();
  auto input = ember::readNpy(dataPath(model, ".input.npy"));
  ASSERT_TRUE(input) << input.error().message();
  auto profile = calibrate(model, *input);
  ASSERT_TRUE(profile) << profile.error().message();
  ember::CompileOptions options;
  options.beforeLowering = [&profile](ember::Function& f, const ember::Backend& backend) {
    return ember::quantizeFunction(f, *profile, backend);
  };
  ember::CompileOptions npuOptions = options;
  npuOptions.fallbackBackends = {"reference"};
  auto onNpu = run(model, "npu", *input, npuOptions);
  ASSERT_TRUE(onNpu) << onNpu.error().message();
  auto onReference = run(model, "reference", *input, options);
  ASSERT_TRUE(onReference) << onReference.error().message();

  const ember::Tensor& a = onNpu->output;
  const ember::Tensor& b = onReference->output;
  ASSERT_EQ(a.type().str(), b.type().str());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.sizeInBytes()), 0)
      << model << ": the npu's int8 output differs from the reference backend's";
  const auto& partitions = onNpu->report.partitions;
  const bool onDevice = std::any_of(partitions.begin(), partitions.end(),
                                    [](const std::string& p) { return p.starts_with("npu:"); });
  EXPECT_TRUE(onDevice) << model << ": no partition ran on the npu";
  std::cout << "[ spatial3d ] " << model << " int8: " << partitions.size() << " partitions, "
            << onNpu->report.fallbackNodes.size() << " fallback nodes\n";
}

INSTANTIATE_TEST_SUITE_P(Cases, Spatial3dNpuTest,
                         testing::Values("conv3d_padded", "conv3d_strided_dilated", "conv3d_groups_nobias",
                                         "convtranspose3d_strided", "maxpool3d_ceil",
                                         "avgpool3d_no_count_pad", "mini_r3d"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

/// A model Ember must reject, and what the one-line error says.
struct InvalidCase {
  std::string model, message;
};

class Spatial3dInvalidTest : public testing::TestWithParam<InvalidCase> {};

TEST_P(Spatial3dInvalidTest, IsAnErrorNamingTheNode) {
  const InvalidCase& c = GetParam();
  ember::Module module;
  auto function = ember::importOnnxFile(dataPath(c.model, ".onnx"), module);
  ASSERT_FALSE(function) << c.model << " imported";
  const std::string message = function.error().message();
  EXPECT_NE(message.find("node 'bad'"), std::string::npos) << message;
  EXPECT_NE(message.find(c.message), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Spatial3dInvalidTest,
    testing::Values(InvalidCase{"invalid_conv3d_kernel_deeper_than_input",
                                "the kernel's depth extent 4 exceeds the padded input depth 2"},
                    InvalidCase{"invalid_convtranspose3d_pads_crop_all", "pads leave no output depth"},
                    InvalidCase{"invalid_maxpool_rank6", "input must have rank 3, 4 or 5, not 6"}),
    [](const testing::TestParamInfo<InvalidCase>& info) { return info.param.model; });

}  // namespace
