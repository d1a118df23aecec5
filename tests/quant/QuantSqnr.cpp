// quant_sqnr MODEL.onnx INPUT.npy [SCHEMA METHOD pc|pt]...: the SQNR of the
// int8 model's output against f32 on the reference backend, calibrated on 8
// standard-normal inputs (fixed seed) of the input's shape, evaluated on
// INPUT.npy. The library-level twin of scripts/quant_sqnr.py, for the table in
// docs/quantization.md. Not a test: a measurement tool.
#include <cmath>
#include <cstdio>
#include <random>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Pass.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"

using namespace ember;

namespace {

std::unique_ptr<Backend> reference() { return BackendRegistry::global().create("reference").take(); }

Expected<Tensor> runOnce(const std::string& path, const Tensor& input, const QuantizationProfile* profile,
                         QuantizationReport* report) {
  Module module;
  auto f = importOnnxFile(path, module);
  if (!f) return f.error();
  CompileOptions options;
  if (profile)
    options.beforeLowering = [&](Function& fn, const Backend& b) {
      return quantizeFunction(fn, *profile, b, report);
    };
  auto model = compileFunction(**f, reference(), options);
  if (!model) return model.error();
  auto device = model->backend->createDevice();
  EMBER_RETURN_IF_ERROR(device->load("m", model->function));
  ExecutionContext ctx;
  ctx.setInput(model->inputs[0].first, input);
  EMBER_RETURN_IF_ERROR(device->run("m", ctx));
  return ctx.output(model->outputs[0].first) ? *ctx.output(model->outputs[0].first) : Tensor();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: quant_sqnr MODEL.onnx INPUT.npy [SCHEMA METHOD pc|pt]...\n");
    return 2;
  }
  registerBuiltinBackends();
  const std::string path = argv[1];
  auto input = readNpy(argv[2]);
  if (!input) return std::fprintf(stderr, "%s\n", input.error().message().c_str()), 1;
  auto f32 = runOnce(path, *input, nullptr, nullptr);
  if (!f32) return std::fprintf(stderr, "%s\n", f32.error().message().c_str()), 1;

  std::vector<CalibrationSample> samples;
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal;
  for (int s = 0; s < 8; ++s) {
    Tensor t(input->type());
    for (int64_t i = 0; i < t.type().numElements(); ++i) t.as<float>()[i] = normal(rng);
    samples.push_back({{"input", std::move(t)}});
  }
  for (int a = 3; a + 2 < argc; a += 3) {
    CalibrationOptions options;
    options.schema = *parseSchema(argv[a]);
    options.method = *parseCalibration(argv[a + 1]);
    options.perChannel = std::string(argv[a + 2]) == "pc";
    Module module;
    auto f = importOnnxFile(path, module);
    if (!f) return 1;
    for (auto& s : samples) {  // the model's input name
      Tensor t = std::move(s.begin()->second);
      s.clear();
      s[(*f)->inputs()[0]->name()] = std::move(t);
    }
    PassManager pm;
    addGraphOptimizationPasses(pm);
    if (Error e = pm.run(**f)) return std::fprintf(stderr, "%s\n", e.message().c_str()), 1;
    auto profile = calibrate(**f, reference(), samples, options);
    if (!profile) return std::fprintf(stderr, "%s\n", profile.error().message().c_str()), 1;
    QuantizationReport report;
    auto int8 = runOnce(path, *input, &*profile, &report);
    if (!int8) return std::fprintf(stderr, "%s\n", int8.error().message().c_str()), 1;
    double signal = 0, noise = 0;
    for (int64_t i = 0; i < f32->type().numElements(); ++i) {
      double r = f32->as<float>()[i], q = int8->as<float>()[i];
      signal += r * r;
      noise += (r - q) * (r - q);
    }
    std::printf("| %s | %s | %s | %s | %.1f | %zu | %zu |\n", path.substr(path.rfind('/') + 1).c_str(),
                argv[a], argv[a + 1], options.perChannel ? "per-channel" : "per-tensor",
                10 * std::log10(signal / std::max(noise, 1e-30)), report.quantizedNodes,
                report.floatNodes.size());
    std::fflush(stdout);
  }
  return 0;
}
