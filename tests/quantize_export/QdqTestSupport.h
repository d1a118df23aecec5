// Helpers of the QDQ export tests: running the ember tool and Ember's
// reference backend, reading ONNX protobufs, comparing outputs.
#pragma once
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"

namespace qdq_test {

namespace fs = std::filesystem;
using namespace ember;

inline const std::string kTool = EMBER_TOOL_PATH;
inline const std::string kModels = EMBER_MODEL_TESTDATA_DIR;
inline const std::string kOrtRunner = EMBER_ORT_RUN_JS;

inline std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

/// Runs a shell command; its exit status (-1 for a signal).
inline int shell(const std::string& cmd) {
  int raw = std::system(cmd.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

struct ToolResult {
  int status = -1;
  std::string out, err;
};

inline ToolResult runTool(const fs::path& dir, const std::string& args) {
  ToolResult r;
  r.status = shell("'" + kTool + "' " + args + " > '" + (dir / "stdout.txt").string() + "' 2> '" +
                   (dir / "stderr.txt").string() + "'");
  r.out = readFile(dir / "stdout.txt");
  r.err = readFile(dir / "stderr.txt");
  return r;
}

inline onnx::ModelProto loadOnnx(const fs::path& path) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(readFile(path))) << path;
  return model;
}

/// Runs `model` on the reference backend (the oracle), int8 with `profile`.
inline Expected<Tensor> runEmber(const std::string& model, const Tensor& input,
                                 const QuantizationProfile* profile) {
  Module module;
  EMBER_ASSIGN_OR_RETURN(Function * f, importOnnxFile(model, module));
  CompileOptions options;
  if (profile)
    options.beforeLowering = [&](Function& fn, const Backend& b) {
      return quantizeFunction(fn, *profile, b);
    };
  registerBuiltinBackends();
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Backend> reference, BackendRegistry::global().create("reference"));
  EMBER_ASSIGN_OR_RETURN(auto compiled, compileFunction(*f, std::move(reference), options));
  ExecutionContext context;
  context.setInput(compiled.inputs[0].first, input);
  EMBER_RETURN_IF_ERROR(compiled.function->execute(context));
  const Tensor* out = context.output(compiled.outputs[0].first);
  if (!out) return makeError(model, ": no output");
  return *out;
}

inline std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.as<float>(), t.as<float>() + t.type().numElements());
}

/// 10 log10(sum y^2 / sum (y - x)^2), in dB.
inline double sqnr(const std::vector<float>& y, const std::vector<float>& x) {
  double signal = 0, noise = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    signal += double(y[i]) * y[i];
    noise += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
  }
  return noise == 0 ? INFINITY : 10 * std::log10(signal / noise);
}

inline size_t argmax(const std::vector<float>& v) {
  return size_t(std::max_element(v.begin(), v.end()) - v.begin());
}

/// The node_modules holding onnxruntime-node, as scripts/install-deps.sh
/// installs it, or "" when ONNX Runtime is not installed here.
inline std::string ortNodeModules() {
  const char* env = std::getenv("EMBER_NODE_DIR");
  fs::path dir = fs::path(env ? env : "/opt/ember/node") / "node_modules";
  if (!fs::exists(dir / "onnxruntime-node")) return "";
  if (shell("command -v node > /dev/null 2>&1") != 0) return "";
  return dir.string();
}

/// Producer of each tensor.
inline std::map<std::string, const onnx::NodeProto*> producers(const onnx::GraphProto& g) {
  std::map<std::string, const onnx::NodeProto*> p;
  for (const auto& n : g.node())
    for (const auto& o : n.output()) p[o] = &n;
  return p;
}

inline const onnx::TensorProto* initializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

inline float scalarFloat(const onnx::TensorProto& t) {
  if (t.has_raw_data()) {
    float v;
    std::memcpy(&v, t.raw_data().data(), sizeof v);
    return v;
  }
  return t.float_data(0);
}

}  // namespace qdq_test
