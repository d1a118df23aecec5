// The four transformers of scripts/gen_models.py (the encoder, BERT-style,
// ViT-style, GPT-style with a causal mask) int8 on the npu, bit for bit
// against the reference backend's int8 run, with no fallback node between the
// first Quantize and the last Dequantize (docs/npu/compiler.md "Transformers":
// the attention matmuls, GELU, Softmax and LayerNorm all run on the NPU).
//
// Each model is calibrated in-process (minmax, per-channel weights) on 8
// inputs drawn like its test input, as quant_transformer_sqnr_test does, and
// compiled twice from the same ONNX file: once for the npu (fallback:
// reference) and once for the reference backend alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <tuple>
#include <vector>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Pass.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"
#include "tests/support/CalibrationInputs.h"

#ifndef EMBER_MODEL_TESTDATA_DIR
#error "EMBER_MODEL_TESTDATA_DIR must name the directory of gen_models.py's output"
#endif

namespace {

using ember::test::calibrationInputs;

using namespace ember;

std::string dataPath(const std::string& model, const std::string& suffix) {
  return (std::filesystem::path(EMBER_MODEL_TESTDATA_DIR) / (model + suffix)).string();
}

Expected<QuantizationProfile> calibrateModel(const std::string& model, const Tensor& input) {
  Module module;
  EMBER_ASSIGN_OR_RETURN(Function * f, importOnnxFile(dataPath(model, ".onnx"), module));
  PassManager pm;
  addGraphOptimizationPasses(pm);
  EMBER_RETURN_IF_ERROR(pm.run(*f));
  std::vector<CalibrationSample> samples;
  for (Tensor& t : calibrationInputs(input)) samples.push_back({{f->inputs()[0]->name(), std::move(t)}});
  CalibrationOptions options;
  options.perChannel = true;
  auto reference = BackendRegistry::global().create("reference");
  if (!reference) return reference.error();
  return calibrate(*f, reference.take(), samples, options);
}

struct Run {
  Tensor output;
  std::vector<FallbackNode> fallbackNodes;
  uint64_t cycles = 0;
};

Expected<Run> run(const std::string& model, const std::string& backendName, const std::string& config,
                  const QuantizationProfile& profile, const Tensor& input) {
  Module module;
  EMBER_ASSIGN_OR_RETURN(Function * f, importOnnxFile(dataPath(model, ".onnx"), module));
  auto backend = BackendRegistry::global().create(backendName);
  if (!backend) return backend.error();
  if (!config.empty())
    EMBER_RETURN_IF_ERROR((*backend)->setOption("config", std::string(EMBER_NPU_CONFIG_DIR) + "/" + config));
  CompileOptions options;
  options.verifyEachPass = true;
  options.beforeLowering = [&profile](Function& fn, const Backend& b) {
    return quantizeFunction(fn, profile, b);
  };
  if (backendName != "reference") options.fallbackBackends = {"reference"};
  EMBER_ASSIGN_OR_RETURN(CompiledModel compiled, compileFunction(*f, backend.take(), options));
  ExecutionContext context;
  context.setInput(compiled.inputs[0].first, input);
  EMBER_RETURN_IF_ERROR(compiled.function->execute(context));
  const Tensor* out = context.output(compiled.outputs[0].first);
  if (!out) return makeError(model, ": no output");
  Run result{*out, compiled.report.fallbackNodes, 0};
  if (const DeviceReport* device = compiled.function->deviceReport()) result.cycles = device->cycles;
  return result;
}

/// Model, config, and the ops of the fallback nodes (docs/npu/compiler.md,
/// "Transformers"): only the edges, i.e. the first Quantize, the last
/// Dequantize and the float ops before the first Quantize.
using Case = std::tuple<std::string, std::string, std::vector<std::string>>;

class NpuTransformerModel : public testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() { registerBuiltinBackends(); }
};

TEST_P(NpuTransformerModel, Int8BitExactWithOnlyTheEdgesOnTheHost) {
  const auto& [model, config, edgeOps] = GetParam();
  ASSERT_TRUE(std::filesystem::exists(dataPath(model, ".onnx"))) << "build the model_data target";
  auto input = readNpy(dataPath(model, ".input.npy"));
  ASSERT_TRUE(input) << input.error().message();
  auto profile = calibrateModel(model, *input);
  ASSERT_TRUE(profile) << profile.error().message();
  auto onNpu = run(model, "npu", config, *profile, *input);
  ASSERT_TRUE(onNpu) << onNpu.error().message();
  auto onReference = run(model, "reference", "", *profile, *input);
  ASSERT_TRUE(onReference) << onReference.error().message();

  const Tensor &a = onNpu->output, &b = onReference->output;
  ASSERT_EQ(a.type().str(), b.type().str());
  size_t differing = 0;
  for (size_t i = 0; i < a.sizeInBytes(); ++i)
    differing += static_cast<const uint8_t*>(a.data())[i] != static_cast<const uint8_t*>(b.data())[i];
  EXPECT_EQ(differing, 0u) << model << ": output bytes differ from the reference backend's int8 run";

  EXPECT_GT(onNpu->cycles, 0u);
  // No fallback node between the first Quantize and the last Dequantize: what
  // stays on the host is exactly the model's float edges.
  std::vector<std::string> fallbackOps;
  for (const FallbackNode& node : onNpu->fallbackNodes) {
    fallbackOps.push_back(node.op);
    if (node.op == "Transpose") {  // ViT's image layout change, before the first Quantize
      EXPECT_EQ(node.reason.find("i8q"), std::string::npos) << node.name << ": " << node.reason;
    }
  }
  std::vector<std::string> expected = edgeOps;
  std::sort(fallbackOps.begin(), fallbackOps.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(fallbackOps, expected);
  std::cout << model << " on " << config << ": " << onNpu->cycles << " cycles, "
            << onNpu->fallbackNodes.size() << " fallback nodes\n";
}

const std::vector<std::string> kEdges = {"Quantize", "Dequantize"};
const std::vector<std::string> kBertEdges = {"Gather", "Quantize", "Dequantize"};
const std::vector<std::string> kVitEdges = {"Transpose", "Quantize", "Dequantize"};

// Before Softmax and LayerNorm ran on the vector unit: 5, 10, 7, 6 fallback
// nodes; before the attention matmuls and GELU moved too: 8, 16, 10, 9.
INSTANTIATE_TEST_SUITE_P(Transformers, NpuTransformerModel,
                         testing::Values(Case{"transformer_encoder", "npu-16x16-v3.yaml", kEdges},
                                         Case{"bert_encoder", "npu-16x16-v3.yaml", kBertEdges},
                                         Case{"vit_encoder", "npu-16x16-v3.yaml", kVitEdges},
                                         Case{"gpt_block", "npu-16x16-v3.yaml", kEdges},
                                         Case{"transformer_encoder", "npu-64x64-v3.yaml", kEdges},
                                         Case{"bert_encoder", "npu-64x64-v3.yaml", kBertEdges},
                                         Case{"vit_encoder", "npu-64x64-v3.yaml", kVitEdges},
                                         Case{"gpt_block", "npu-64x64-v3.yaml", kEdges}),
                         [](const testing::TestParamInfo<Case>& info) {
                           std::string config = std::get<1>(info.param);
                           config = config.substr(0, config.find('.'));
                           std::replace(config.begin(), config.end(), '-', '_');
                           return std::get<0>(info.param) + "_" + config;
                         });

}  // namespace
