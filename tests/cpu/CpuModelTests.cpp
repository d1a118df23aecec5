// End-to-end model tests on the cpu backend: the models of scripts/gen_models.py
// compared with PyTorch's outputs (same tolerance as tests/models) and with the
// reference backend, on 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Runtime.h"

#ifndef EMBER_MODEL_TESTDATA_DIR
#error "EMBER_MODEL_TESTDATA_DIR must name the directory written by scripts/gen_models.py"
#endif

namespace {

namespace fs = std::filesystem;
constexpr double kRelativeTolerance = 1e-4;

std::string dataPath(const std::string& model, const std::string& suffix) {
  return (fs::path(EMBER_MODEL_TESTDATA_DIR) / (model + suffix)).string();
}

ember::Expected<ember::Tensor> runModel(const std::string& model, const std::string& backendName,
                                        const ember::Tensor& input) {
  ember::Module module;
  EMBER_ASSIGN_OR_RETURN(ember::Function * function, ember::importOnnxFile(dataPath(model, ".onnx"), module));
  EMBER_ASSIGN_OR_RETURN(auto backend, ember::BackendRegistry::global().create(backendName));
  EMBER_ASSIGN_OR_RETURN(auto compiled, ember::compileFunction(*function, std::move(backend)));
  ember::ExecutionContext context;
  context.setInput(compiled.inputs[0].first, input);
  EMBER_RETURN_IF_ERROR(compiled.function->execute(context));
  const ember::Tensor* output = context.output(compiled.outputs[0].first);
  if (!output) return ember::makeError(model, ": no output");
  return *output;
}

double maxAbsDiff(const ember::Tensor& a, const ember::Tensor& b, double& maxB) {
  double err = 0;
  maxB = 0;
  for (int64_t i = 0; i < b.type().numElements(); ++i) {
    double d = std::fabs(a.elementAsDouble(i) - b.elementAsDouble(i));
    if (std::isnan(d)) d = INFINITY;
    err = std::max(err, d);
    maxB = std::max(maxB, std::fabs(b.elementAsDouble(i)));
  }
  return err;
}

class CpuModelTest : public testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  static void SetUpTestSuite() { ember::registerBuiltinBackends(); }
};

TEST_P(CpuModelTest, MatchesPyTorchAndReference) {
  const auto& [model, threads] = GetParam();
  ASSERT_TRUE(fs::exists(dataPath(model, ".onnx"))) << dataPath(model, ".onnx") << " is missing (model_data)";
  setenv("EMBER_CPU_THREADS", std::to_string(threads).c_str(), 1);
  auto input = ember::readNpy(dataPath(model, ".input.npy"));
  ASSERT_TRUE(input) << input.error().message();
  auto golden = ember::readNpy(dataPath(model, ".output.npy"));
  ASSERT_TRUE(golden) << golden.error().message();

  auto cpu = runModel(model, "cpu", *input);
  ASSERT_TRUE(cpu) << cpu.error().message();
  ASSERT_EQ(cpu->type(), golden->type());
  double maxGolden = 0;
  double err = maxAbsDiff(*cpu, *golden, maxGolden);
  std::cout << "[ model    ] " << model << " (" << threads << " threads): max abs error vs PyTorch " << err
            << " (max |golden| " << maxGolden << ")\n";
  EXPECT_LE(err, kRelativeTolerance * maxGolden);

  auto reference = runModel(model, "reference", *input);
  ASSERT_TRUE(reference) << reference.error().message();
  double maxRef = 0;
  double errRef = maxAbsDiff(*cpu, *reference, maxRef);
  std::cout << "[ model    ] " << model << ": max abs difference vs reference " << errRef << "\n";
  EXPECT_LE(errRef, kRelativeTolerance * maxRef);
}

INSTANTIATE_TEST_SUITE_P(Models, CpuModelTest,
                         testing::Combine(testing::Values("resnet18", "mobilenet_v2", "transformer_encoder",
                                                          "densenet121_128", "conv1x1_8to8_8x8",
                                                          "conv1x1_16to8_8x8"),
                                          testing::Values(1, 2)),
                         [](const testing::TestParamInfo<std::tuple<std::string, int>>& info) {
                           return std::get<0>(info.param) + "_t" + std::to_string(std::get<1>(info.param));
                         });

}  // namespace
