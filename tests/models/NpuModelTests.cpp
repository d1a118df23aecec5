// int8 models on the NPU, bit for bit against the reference backend.
//
// Each model is quantized with a profile calibrated by `ember quantize` (at
// build time) and compiled twice from the same ONNX file: once for the npu
// backend (what it lacks partitioned onto the reference backend) and once
// entirely for the reference backend. Both quantize the same nodes (the
// quantizer sees the npu + reference support union), so the outputs must be
// identical bits. The
// CNNs use a 64x64 input here (scripts/gen_npu_models.py); bench/ runs full
// size. The zoo_* models are the model zoo's (tests/models/zoo_models.py):
// CNNs, attention and recurrent models, some with several or int64 inputs.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <tuple>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"

#ifndef EMBER_NPU_MODEL_DIR
#error "EMBER_NPU_MODEL_DIR must name the directory of the npu model test data"
#endif

namespace {

namespace fs = std::filesystem;

std::string dataPath(const std::string& model, const std::string& suffix) {
  return (fs::path(EMBER_NPU_MODEL_DIR) / (model + suffix)).string();
}

struct RunResult {
  ember::Tensor output;
  ember::CompileReport report;
  ember::DeviceReport device;
  bool hasDevice = false;
};

/// The value of `model`'s input `name`: MODEL.input.npy for the one-input
/// models, MODEL.in.NAME.npy for the zoo's.
ember::Expected<ember::Tensor> readInput(const std::string& model, const std::string& name) {
  if (fs::exists(dataPath(model, ".input.npy"))) return ember::readNpy(dataPath(model, ".input.npy"));
  return ember::readNpy(dataPath(model, ".in." + name + ".npy"));
}

/// Compiles `model` for `backendName` (int8 with `profile`) and runs it on its test inputs.
ember::Expected<RunResult> run(const std::string& model, const std::string& backendName,
                               const ember::QuantizationProfile& profile, const std::string& npuConfig = "") {
  ember::Module module;
  ember::ImportOptions importOptions;
  importOptions.dimValues["N"] = 1;  // the digits CNN's symbolic batch
  auto function = ember::importOnnxFile(dataPath(model, ".onnx"), module, importOptions);
  if (!function) return function.error();
  auto backend = ember::BackendRegistry::global().create(backendName);
  if (!backend) return backend.error();
  if (!npuConfig.empty())
    EMBER_RETURN_IF_ERROR(
        (*backend)->setOption("config", std::string(EMBER_NPU_CONFIG_DIR) + "/" + npuConfig));
  ember::CompileOptions options;
  options.verifyEachPass = true;
  // The npu run quantizes what the npu or its reference fallback runs in int8,
  // which is what the reference backend alone quantizes: the same int8 graph.
  options.beforeLowering = [&profile](ember::Function& f, const ember::Backend& backend) {
    return ember::quantizeFunction(f, profile, backend);
  };
  if (backendName != "reference") options.fallbackBackends = {"reference"};
  auto compiled = ember::compileFunction(**function, backend.take(), options);
  if (!compiled) return compiled.error();

  ember::ExecutionContext context;
  for (const auto& [name, type] : compiled->inputs) {
    EMBER_ASSIGN_OR_RETURN(ember::Tensor value, readInput(model, name));
    context.setInput(name, value);
  }
  EMBER_RETURN_IF_ERROR(ember::checkInputs(*compiled, context));
  EMBER_RETURN_IF_ERROR(compiled->function->execute(context));
  const ember::Tensor* output = context.output(compiled->outputs.at(0).first);
  if (!output) return ember::makeError(model, ": no output");
  RunResult result{*output, compiled->report, {}, false};
  if (const ember::DeviceReport* device = compiled->function->deviceReport()) {
    result.device = *device;
    result.hasDevice = true;
  }
  return result;
}

/// A model and the NPU config to run it on ("": the built-in npu-16x16).
using ModelOnConfig = std::tuple<std::string, std::string>;

class NpuModelTest : public testing::TestWithParam<ModelOnConfig> {
 protected:
  static void SetUpTestSuite() { ember::registerBuiltinBackends(); }
};

TEST_P(NpuModelTest, BitExactAgainstReferenceInt8) {
  const auto& [model, npuConfig] = GetParam();
  auto profile = ember::QuantizationProfile::load(dataPath(model, ".profile.yaml"));
  ASSERT_TRUE(profile) << profile.error().message();

  auto onNpu = run(model, "npu", *profile, npuConfig);
  ASSERT_TRUE(onNpu) << onNpu.error().message();
  auto onReference = run(model, "reference", *profile);
  ASSERT_TRUE(onReference) << onReference.error().message();

  const ember::Tensor& a = onNpu->output;
  const ember::Tensor& b = onReference->output;
  ASSERT_EQ(a.type().str(), b.type().str());
  size_t differing = 0, first = 0;
  const auto* pa = static_cast<const unsigned char*>(a.data());
  const auto* pb = static_cast<const unsigned char*>(b.data());
  for (size_t i = 0; i < a.sizeInBytes(); ++i)
    if (pa[i] != pb[i] && differing++ == 0) first = i;
  EXPECT_EQ(differing, 0u) << model << ": " << differing << " of " << a.sizeInBytes()
                           << " output bytes differ from the reference backend's int8 run; first at byte "
                           << first;

  // The model really ran on the NPU: most MACs there, with a per-layer report.
  ASSERT_TRUE(onNpu->hasDevice) << model << ": no partition ran on the npu backend";
  EXPECT_GT(onNpu->device.cycles, 0u);
  EXPECT_GT(onNpu->device.macs, 0u);
  EXPECT_FALSE(onNpu->device.layers.empty());
  for (const ember::LayerReport& layer : onNpu->device.layers) EXPECT_FALSE(layer.name.empty());
  std::cout << model << (npuConfig.empty() ? "" : " on " + npuConfig) << ": " << onNpu->device.cycles
            << " cycles, " << 100 * onNpu->device.macUtilization() << "% MAC utilisation, "
            << onNpu->report.fallbackNodes.size() << " fallback nodes, " << onNpu->report.partitions.size()
            << " partitions\n";
}

INSTANTIATE_TEST_SUITE_P(
    Models, NpuModelTest,
    testing::Combine(testing::Values("digits", "resnet18_64", "mobilenet_v2_64", "transformer_encoder",
                                     "zoo_unet", "zoo_audio_conv1d", "zoo_regnet_y", "zoo_efficientnet_v2",
                                     "zoo_resnext", "zoo_mobilenet_v3", "zoo_convnext", "zoo_lraspp",
                                     "zoo_fcn", "zoo_deeplabv3", "zoo_r3d", "zoo_vit", "zoo_maxvit",
                                     "zoo_swin", "zoo_mha", "zoo_gpt", "zoo_bert", "zoo_lstm_gru"),
                     testing::Values("", "npu-16x16-v2.yaml", "npu-16x16-v2q.yaml", "npu-16x16-v3.yaml",
                                     "npu-64x64-v3.yaml")),
    [](const testing::TestParamInfo<ModelOnConfig>& info) {
      // npu-16x16-v2.yaml -> _npu_16x16_v2 (test names are identifiers)
      std::string config = std::get<1>(info.param);
      if (config.empty()) return std::get<0>(info.param);
      config = config.substr(0, config.find('.'));
      for (char& ch : config)
        if (ch == '-') ch = '_';
      return std::get<0>(info.param) + "_" + config;
    });

}  // namespace
