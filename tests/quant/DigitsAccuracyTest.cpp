// Accuracy on real data: the digits CNN (scripts/gen_digits_model.py, trained
// on 70% of scikit-learn's 1,797 8x8 digits) on the 30% held out. f32 must
// reach 95%; int8, calibrated on the training split, must stay within 1.0
// point of f32 (docs/quantization.md).
#include <gtest/gtest.h>

#include <cstdio>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Pass.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"

namespace ember {
namespace {

const std::string kDir = EMBER_MODELS_DIR;

/// uint8 pixels 0..16 [S,1,8,8] to S model inputs f32 [1,1,8,8] = value / 16 (exact).
std::vector<Tensor> images(const std::string& file) {
  auto raw = readNpy(kDir + "/" + file);
  EXPECT_TRUE(bool(raw)) << (raw ? "" : raw.error().message());
  std::vector<Tensor> out;
  const int64_t count = raw->type().dims[0];
  for (int64_t s = 0; s < count; ++s) {
    Tensor t(Type(ElemKind::F32, {1, 1, 8, 8}));
    for (int64_t i = 0; i < 64; ++i) t.as<float>()[i] = float(raw->as<uint8_t>()[s * 64 + i]) / 16.0f;
    out.push_back(std::move(t));
  }
  return out;
}

std::unique_ptr<Backend> reference() {
  static const bool registered = (registerBuiltinBackends(), true);
  (void)registered;
  auto b = BackendRegistry::global().create("reference");
  EXPECT_TRUE(bool(b));
  return b.take();
}

Function* importDigits(Module& module) {
  ImportOptions options;
  options.dimValues["N"] = 1;
  auto f = importOnnxFile(kDir + "/digits.onnx", module, options);
  EXPECT_TRUE(bool(f)) << (f ? "" : f.error().message());
  return *f;
}

/// Held-out accuracy in percent, optionally quantized with `profile`.
double accuracy(const QuantizationProfile* profile, QuantizationReport* report = nullptr) {
  Module module;
  Function* f = importDigits(module);
  CompileOptions options;
  if (profile)
    options.beforeLowering = [&](Function& fn, const Backend& b) {
      return quantizeFunction(fn, *profile, b, report);
    };
  auto model = compileFunction(*f, reference(), options);
  EXPECT_TRUE(bool(model)) << (model ? "" : model.error().message());
  if (!model) return 0;
  auto device = model->backend->createDevice();
  EXPECT_FALSE(device->load("digits", model->function));
  std::vector<Tensor> inputs = images("digits.heldout.x.npy");
  auto labels = readNpy(kDir + "/digits.heldout.y.npy");
  EXPECT_TRUE(bool(labels));
  int correct = 0;
  for (size_t s = 0; s < inputs.size(); ++s) {
    ExecutionContext ctx;
    ctx.setInput(model->inputs[0].first, inputs[s]);
    Error e = device->run("digits", ctx);
    EXPECT_FALSE(e) << e.message();
    const Tensor& logits = ctx.outputs().begin()->second;
    EXPECT_EQ(logits.type().kind, ElemKind::F32);
    int best = 0;
    for (int c = 1; c < 10; ++c)
      if (logits.as<float>()[c] > logits.as<float>()[best]) best = c;
    correct += best == labels->as<uint8_t>()[s];
  }
  return 100.0 * correct / double(inputs.size());
}

QuantizationProfile calibrateOnTraining(const CalibrationOptions& options) {
  Module module;
  Function* f = importDigits(module);
  PassManager pm;
  addGraphOptimizationPasses(pm);
  EXPECT_FALSE(pm.run(*f));
  std::vector<CalibrationSample> samples;
  for (Tensor& t : images("digits.train.x.npy")) samples.push_back({{f->inputs()[0]->name(), std::move(t)}});
  auto profile = calibrate(*f, reference(), samples, options);
  EXPECT_TRUE(bool(profile)) << (profile ? "" : profile.error().message());
  return profile ? *profile : QuantizationProfile{};
}

TEST(DigitsAccuracyTest, Int8WithinOnePointOfF32) {
  const double f32 = accuracy(nullptr);
  std::printf("digits held-out accuracy: f32 %.2f%%\n", f32);
  EXPECT_GE(f32, 95.0);
  struct Config {
    QuantSchema schema;
    CalibrationMethod method;
    bool perChannel;
  };
  for (Config c : {Config{QuantSchema::Asymmetric, CalibrationMethod::MinMax, false},
                   Config{QuantSchema::Asymmetric, CalibrationMethod::MinMax, true},
                   Config{QuantSchema::Symmetric, CalibrationMethod::Percentile, true},
                   Config{QuantSchema::SymmetricPower2, CalibrationMethod::MinMax, true}}) {
    CalibrationOptions options;
    options.schema = c.schema;
    options.method = c.method;
    options.perChannel = c.perChannel;
    QuantizationProfile profile = calibrateOnTraining(options);
    QuantizationReport report;
    const double int8 = accuracy(&profile, &report);
    std::printf("digits held-out accuracy: int8 %.2f%% (%s, %s%s), %zu nodes quantized, %zu float\n", int8,
                std::string(schemaName(c.schema)).c_str(), std::string(calibrationName(c.method)).c_str(),
                c.perChannel ? ", per-channel" : "", report.quantizedNodes, report.floatNodes.size());
    for (const auto& n : report.floatNodes)
      std::printf("  float: %s (%s): %s\n", n.name.c_str(), n.op.c_str(), n.reason.c_str());
    EXPECT_GT(report.quantizedNodes, 4u);
    EXPECT_GE(int8, f32 - 1.0) << schemaName(c.schema);
  }
}

}  // namespace
}  // namespace ember
