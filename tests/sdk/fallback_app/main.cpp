// fallback_app PLUGIN.so MODEL.onnx: runs tests/cli/data/add_relu.onnx
// (s = x + c; y = Relu(s); neg = -s) on "acme", whose supports() refuses
// Relu, with the installed reference backend as the fallback, and checks the
// outputs against values computed here. Exit 0 when they match.
#include <cmath>
#include <iostream>

#include "ember/Importer.h"
#include "ember/Runtime.h"

using namespace ember;

int fail(const std::string& message) {
  std::cerr << "fallback_app: " << message << "\n";
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3) return fail("usage: fallback_app PLUGIN.so MODEL.onnx");
  if (Error e = BackendRegistry::global().loadLibrary(argv[1])) return fail(e.message());
  Module module;
  auto function = importOnnxFile(argv[2], module);
  if (!function) return fail(function.error().message());
  auto acme = BackendRegistry::global().create("acme");
  if (!acme) return fail(acme.error().message());
  CompileOptions options;
  options.fallbackBackends = {"reference"};  // installed with the SDK, registered before main
  auto model = compileFunction(**function, acme.take(), options);
  if (!model) return fail(model.error().message());
  if (model->report.fallbackNodes.size() != 1 || model->report.fallbackNodes[0].backend != "reference")
    return fail("expected one node on the reference fallback");

  const float x[6] = {0.5f, -3.0f, 2.0f, -1.5f, 0.0f, -4.0f}, c[6] = {-2, -1, 0, 1, 2, 3};
  Tensor input(Type(ElemKind::F32, {2, 3}));
  for (int i = 0; i < 6; ++i) input.as<float>()[i] = x[i];
  std::unique_ptr<Device> device = model->createDevice();
  if (Error e = device->load("m", model->function)) return fail(e.message());
  ExecutionContext context;
  context.setInput("x", input);
  if (Error e = device->run("m", context)) return fail(e.message());
  const Tensor* y = context.output("out/y:0");
  const Tensor* neg = context.output("neg");
  if (!y || !neg) return fail("missing outputs");
  for (int i = 0; i < 6; ++i) {
    const float s = x[i] + c[i];
    if (y->as<float>()[i] != std::max(s, 0.0f) || neg->as<float>()[i] != -s)
      return fail("output " + std::to_string(i) + " differs");
  }
  for (const std::string& partition : model->report.partitions) std::cout << partition << "\n";
  std::cout << "fallback_app: outputs match through the installed reference fallback\n";
  return 0;
}
