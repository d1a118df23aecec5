// Runs one of the int8 model tests' models (scripts/gen_npu_models.py, data
// in EMBER_NPU_MODEL_DIR) on a backend, quantized with the profile `ember
// quantize` calibrated at build time: shared by the npu and the cpu int8
// model tests, which compare each backend with the reference bit for bit.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"

#ifndef EMBER_NPU_MODEL_DIR
#error "EMBER_NPU_MODEL_DIR must name the directory of the int8 model test data"
#endif

namespace ember::int8_model_test {

inline std::string dataPath(const std::string& model, const std::string& suffix) {
  return (std::filesystem::path(EMBER_NPU_MODEL_DIR) / (model + suffix)).string();
}

struct RunResult {
  Tensor output;
  CompileReport report;
  DeviceReport device;
  bool hasDevice = false;
  size_t int8Convs = 0;  ///< QuantizedConv and QuantizedMatMul nodes after quantization
};

/// The value of `model`'s input `name`: MODEL.input.npy for the one-input
/// models, MODEL.in.NAME.npy for the zoo's.
inline Expected<Tensor> readInput(const std::string& model, const std::string& name) {
  if (std::filesystem::exists(dataPath(model, ".input.npy"))) return readNpy(dataPath(model, ".input.npy"));
  return readNpy(dataPath(model, ".in." + name + ".npy"));
}

/// Compiles `model` for `backendName` (int8 with `profile`; what the backend
/// lacks on the reference backend) and runs it on its test inputs.
/// `configPath`: the backend's "config" option, if not empty.
inline Expected<RunResult> run(const std::string& model, const std::string& backendName,
                               const QuantizationProfile& profile, const std::string& configPath = "") {
  Module module;
  ImportOptions importOptions;
  importOptions.dimValues["N"] = 1;  // the digits CNN's symbolic batch
  auto function = importOnnxFile(dataPath(model, ".onnx"), module, importOptions);
  if (!function) return function.error();
  auto backend = BackendRegistry::global().create(backendName);
  if (!backend) return backend.error();
  if (!configPath.empty()) EMBER_RETURN_IF_ERROR((*backend)->setOption("config", configPath));
  CompileOptions options;
  options.verifyEachPass = true;
  // The run quantizes what the backend or its reference fallback runs in
  // int8, which is what the reference backend alone quantizes: the same int8 graph.
  size_t int8Convs = 0;
  options.beforeLowering = [&profile, &int8Convs](Function& f, const Backend& target) -> Error {
    EMBER_RETURN_IF_ERROR(quantizeFunction(f, profile, target));
    for (const Node* node : f.nodes())
      if (node->info().name == "QuantizedConv" || node->info().name == "QuantizedMatMul") ++int8Convs;
    return Error();
  };
  if (backendName != "reference") options.fallbackBackends = {"reference"};
  auto compiled = compileFunction(**function, backend.take(), options);
  if (!compiled) return compiled.error();

  ExecutionContext context;
  for (const auto& [name, type] : compiled->inputs) {
    EMBER_ASSIGN_OR_RETURN(Tensor value, readInput(model, name));
    context.setInput(name, value);
  }
  EMBER_RETURN_IF_ERROR(checkInputs(*compiled, context));
  EMBER_RETURN_IF_ERROR(compiled->function->execute(context));
  const Tensor* output = context.output(compiled->outputs.at(0).first);
  if (!output) return makeError(model, ": no output");
  RunResult result{*output, compiled->report, {}, false, int8Convs};
  if (const DeviceReport* device = compiled->function->deviceReport()) {
    result.device = *device;
    result.hasDevice = true;
  }
  return result;
}

/// How many bytes of `a` differ from `b` (same type), and the first one's offset.
struct ByteDiff {
  size_t differing = 0, first = 0;
};
inline ByteDiff compareBytes(const Tensor& a, const Tensor& b) {
  ByteDiff diff;
  const auto* pa = static_cast<const unsigned char*>(a.data());
  const auto* pb = static_cast<const unsigned char*>(b.data());
  for (size_t i = 0; i < a.sizeInBytes(); ++i)
    if (pa[i] != pb[i] && diff.differing++ == 0) diff.first = i;
  return diff;
}

/// The int8 model tests' models: the CNNs at 64x64, the digits CNN, the
/// transformer encoder and the model zoo's (tests/models/zoo_models.py).
inline const std::vector<std::string> kModels = {
    "digits",      "resnet18_64",      "mobilenet_v2_64", "transformer_encoder",
    "zoo_unet",    "zoo_audio_conv1d", "zoo_regnet_y",    "zoo_efficientnet_v2",
    "zoo_resnext", "zoo_mobilenet_v3", "zoo_convnext",    "zoo_lraspp",
    "zoo_fcn",     "zoo_deeplabv3",    "zoo_r3d",         "zoo_vit",
    "zoo_maxvit",  "zoo_swin",         "zoo_mha",         "zoo_gpt",
    "zoo_bert",    "zoo_lstm_gru"};

}  // namespace ember::int8_model_test
