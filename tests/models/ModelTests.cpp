// End-to-end model tests: whole models exported by PyTorch (scripts/gen_models.py)
// run on the reference backend and are compared with PyTorch's own outputs
// (tests/cpu runs the same models on the cpu backend). densenet121_128 and the
// 1x1 convs have activations where C = H = W, so NCHW and NHWC shapes
// coincide: a rewrite that decides from shapes instead of permutations fails.
//
// Each model is also compiled without the IR optimizer: the IR optimizer may
// only move and share buffers, so the outputs must be bit-identical.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Runtime.h"

#ifndef EMBER_MODEL_TESTDATA_DIR
#error "EMBER_MODEL_TESTDATA_DIR must name the directory written by scripts/gen_models.py"
#endif

namespace {

namespace fs = std::filesystem;

// PyTorch and Ember accumulate in different orders; relative to the output's
// magnitude, 1e-4 is far below any real bug and above f32 reordering noise.
constexpr double kRelativeTolerance = 1e-4;

std::string dataPath(const std::string& model, const std::string& suffix) {
  return (fs::path(EMBER_MODEL_TESTDATA_DIR) / (model + suffix)).string();
}

/// Imports, compiles and runs `model` on the reference backend; returns its one output.
ember::Expected<ember::Tensor> runModel(const std::string& model, const ember::Tensor& input,
                                        const ember::CompileOptions& options, double& seconds) {
  ember::Module module;
  auto function = ember::importOnnxFile(dataPath(model, ".onnx"), module);
  if (!function) return function.error();
  auto backend = ember::BackendRegistry::global().create("reference");
  if (!backend) return backend.error();
  auto compiled = ember::compileFunction(**function, backend.take(), options);
  if (!compiled) return compiled.error();
  if (compiled->inputs.size() != 1 || compiled->outputs.size() != 1)
    return ember::makeError(model, ": expected one input and one output, got ", compiled->inputs.size(),
                            " and ", compiled->outputs.size());

  ember::ExecutionContext context;
  context.setInput(compiled->inputs[0].first, input);
  EMBER_RETURN_IF_ERROR(ember::checkInputs(*compiled, context));
  auto start = std::chrono::steady_clock::now();
  EMBER_RETURN_IF_ERROR(compiled->function->execute(context));
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ember::Tensor* output = context.output(compiled->outputs[0].first);
  if (!output) return ember::makeError(model, ": output '", compiled->outputs[0].first, "' was not produced");
  return *output;
}

class ModelTest : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { ember::registerBuiltinBackends(); }
};

TEST_P(ModelTest, MatchesPyTorch) {
  const std::string model = GetParam();
  ASSERT_TRUE(fs::exists(dataPath(model, ".onnx")))
      << dataPath(model, ".onnx") << " is missing: build the model_data target (scripts/gen_models.py)";

  auto input = ember::readNpy(dataPath(model, ".input.npy"));
  ASSERT_TRUE(input) << input.error().message();
  auto golden = ember::readNpy(dataPath(model, ".output.npy"));
  ASSERT_TRUE(golden) << golden.error().message();

  double seconds = 0;
  auto output = runModel(model, *input, ember::CompileOptions{}, seconds);
  ASSERT_TRUE(output) << output.error().message();
  ASSERT_EQ(output->type().kind, golden->type().kind);
  ASSERT_EQ(output->type().dims, golden->type().dims) << "shape " << ember::dimsStr(output->type().dims)
                                                      << ", golden " << ember::dimsStr(golden->type().dims);

  const int64_t n = golden->type().numElements();
  double maxGolden = 0, maxError = 0;
  int64_t worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double expected = golden->elementAsDouble(i);
    double got = output->elementAsDouble(i);
    maxGolden = std::max(maxGolden, std::fabs(expected));
    double error = std::fabs(got - expected);
    if (std::isnan(error)) error = INFINITY;  // a NaN is never close
    if (error > maxError) {
      maxError = error;
      worst = i;
    }
  }
  const double tolerance = kRelativeTolerance * maxGolden;
  RecordProperty("max_abs_error", testing::PrintToString(maxError));
  RecordProperty("max_abs_golden", testing::PrintToString(maxGolden));
  RecordProperty("run_seconds", testing::PrintToString(seconds));
  std::cout << "[ model    ] " << model << ": max abs error " << maxError << " (tolerance " << tolerance
            << ", max |golden| " << maxGolden << "), run " << seconds << " s\n";
  EXPECT_LE(maxError, tolerance) << "worst element " << worst << ": expected "
                                 << golden->elementAsDouble(worst) << ", got "
                                 << output->elementAsDouble(worst);

  // The IR optimizer must not change a single bit.
  double unoptimizedSeconds = 0;
  ember::CompileOptions noIROpt;
  noIROpt.optimizeIR = false;
  auto unoptimized = runModel(model, *input, noIROpt, unoptimizedSeconds);
  ASSERT_TRUE(unoptimized) << "optimizeIR=false: " << unoptimized.error().message();
  EXPECT_TRUE(unoptimized->bitwiseEqual(*output)) << "outputs with and without the IR optimizer differ";
}

INSTANTIATE_TEST_SUITE_P(Models, ModelTest,
                         testing::Values("resnet18", "mobilenet_v2", "transformer_encoder", "bert_encoder",
                                         "vit_encoder", "gpt_block", "densenet121_128", "conv1x1_8to8_8x8",
                                         "conv1x1_16to8_8x8"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
