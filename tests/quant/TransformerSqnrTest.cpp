// Integer-only int8 transformers end to end: the transformer encoder, the
// BERT-style, ViT-style and GPT-style models of scripts/gen_models.py,
// calibrated on 8 inputs drawn like the test input and evaluated on the
// model's own test input. Asserts SQNR of the int8 output against f32 >= 30
// dB (docs/quantization.md 6) and that no Softmax, LayerNorm or GELU piece
// stays float.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Pass.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"
#include "tests/support/CalibrationInputs.h"

#ifndef EMBER_MODEL_TESTDATA_DIR
#error "EMBER_MODEL_TESTDATA_DIR must name the directory written by scripts/gen_models.py"
#endif

namespace {

using ember::test::calibrationInputs;

using namespace ember;

std::string dataPath(const std::string& model, const std::string& suffix) {
  return (std::filesystem::path(EMBER_MODEL_TESTDATA_DIR) / (model + suffix)).string();
}

std::unique_ptr<Backend> reference() { return BackendRegistry::global().create("reference").take(); }

/// Quantizes as `inner` does but declines the integer-only transformer ops,
/// so Softmax, LayerNorm and GELU stay f32 as before they existed (the
/// comparison column of docs/quantization.md 6).
class WithoutTransformerOps : public Backend {
 public:
  explicit WithoutTransformerOps(const Backend& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  bool supports(const NodeInfo& info) const override {
    return info.kind != OpKind::QuantizedSoftmax && info.kind != OpKind::QuantizedLayerNorm &&
           info.kind != OpKind::QuantizedGelu && inner_.supports(info);
  }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    return inner_.compile(ir);
  }

 private:
  const Backend& inner_;
};

Expected<Tensor> runModel(const std::string& model, const Tensor& input, const QuantizationProfile* profile,
                          QuantizationReport* report, bool integerTransformerOps = true) {
  Module module;
  EMBER_ASSIGN_OR_RETURN(Function * f, importOnnxFile(dataPath(model, ".onnx"), module));
  CompileOptions options;
  if (profile)
    options.beforeLowering = [&](Function& fn, const Backend& b) {
      if (integerTransformerOps) return quantizeFunction(fn, *profile, b, report);
      return quantizeFunction(fn, *profile, WithoutTransformerOps(b), nullptr);
    };
  EMBER_ASSIGN_OR_RETURN(auto compiled, compileFunction(*f, reference(), options));
  ExecutionContext context;
  context.setInput(compiled.inputs[0].first, input);
  EMBER_RETURN_IF_ERROR(compiled.function->execute(context));
  const Tensor* out = context.output(compiled.outputs[0].first);
  if (!out) return makeError(model, ": no output");
  return *out;
}

double sqnrDb(const Tensor& reference, const Tensor& approximation) {
  double signal = 0, noise = 0;
  for (int64_t i = 0; i < reference.type().numElements(); ++i) {
    const double r = reference.as<float>()[i], q = approximation.as<float>()[i];
    signal += r * r;
    noise += (r - q) * (r - q);
  }
  return 10 * std::log10(signal / std::max(noise, 1e-30));
}

class TransformerSqnr : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { registerBuiltinBackends(); }
};

TEST_P(TransformerSqnr, IntegerOnlyInt8IsWithin30dBOfF32) {
  const std::string model = GetParam();
  ASSERT_TRUE(std::filesystem::exists(dataPath(model, ".onnx"))) << "build the model_data target";
  auto input = readNpy(dataPath(model, ".input.npy"));
  ASSERT_TRUE(input) << input.error().message();
  auto f32 = runModel(model, *input, nullptr, nullptr);
  ASSERT_TRUE(f32) << f32.error().message();

  Module module;
  auto f = importOnnxFile(dataPath(model, ".onnx"), module);
  ASSERT_TRUE(f) << f.error().message();
  PassManager pm;
  addGraphOptimizationPasses(pm);
  ASSERT_FALSE(pm.run(**f));
  std::vector<CalibrationSample> samples;
  for (Tensor& t : calibrationInputs(*input)) samples.push_back({{(*f)->inputs()[0]->name(), std::move(t)}});
  CalibrationOptions options;
  options.perChannel = true;
  auto profile = calibrate(**f, reference(), samples, options);
  ASSERT_TRUE(profile) << profile.error().message();

  QuantizationReport report;
  auto int8 = runModel(model, *input, &*profile, &report);
  ASSERT_TRUE(int8) << int8.error().message();
  auto floatOps = runModel(model, *input, &*profile, nullptr, false);
  ASSERT_TRUE(floatOps) << floatOps.error().message();
  const double sqnr = sqnrDb(*f32, *int8), floatOpsSqnr = sqnrDb(*f32, *floatOps);
  std::printf(
      "[ sqnr     ] %s: int8 integer-only vs f32 %.1f dB (%zu quantized nodes, %zu float nodes); "
      "int8 with f32 Softmax/LayerNorm/GELU %.1f dB\n",
      model.c_str(), sqnr, report.quantizedNodes, report.floatNodes.size(), floatOpsSqnr);
  // The transformer ops' pieces must all be integer now.
  const std::set<std::string> transformerPieces = {"Softmax", "LayerNorm", "Gelu", "Erf",       "Tanh",
                                                   "Sqrt",    "Pow",       "Sub",  "ReduceMean"};
  for (const auto& node : report.floatNodes) {
    std::printf("             float: %s (%s): %s\n", node.name.c_str(), node.op.c_str(), node.reason.c_str());
    EXPECT_FALSE(transformerPieces.count(node.op)) << node.name << " (" << node.op << ") stayed float";
  }
  EXPECT_GE(sqnr, 30.0) << model;
}

INSTANTIATE_TEST_SUITE_P(Models, TransformerSqnr,
                         testing::Values("transformer_encoder", "bert_encoder", "vit_encoder", "gpt_block"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
