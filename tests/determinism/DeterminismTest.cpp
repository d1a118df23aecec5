// Determinism (docs/testing.md, "Determinism"): the same model and inputs give
// bit-identical outputs on every backend, run after run, and on the cpu
// backend for 1, 2 and 4 threads; the compiler writes byte-identical bundles
// and IR dumps. Each run is a separate `ember` process, so an order that
// depends on addresses (a pointer-keyed map, a hash of a pointer) shows up as
// a difference between two runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "tests/common/RunTool.h"

#ifndef EMBER_TOOL_PATH
#error "EMBER_TOOL_PATH must name the ember tool"
#endif

namespace fs = std::filesystem;
using ember::test::readWholeFile;
using ember::test::runTool;

namespace {

struct Model {
  std::string name;
  fs::path onnx;
  fs::path input;
  fs::path profile;  ///< int8 profile for the npu run; empty: no npu run
};

std::vector<Model> models() {
  const fs::path zoo = EMBER_MODEL_TESTDATA_DIR, npu = EMBER_NPU_MODEL_DIR;
  return {
      {"digits", npu / "digits.onnx", npu / "digits.input.npy", npu / "digits.profile.yaml"},
      {"transformer_encoder", zoo / "transformer_encoder.onnx", zoo / "transformer_encoder.input.npy", {}},
      {"mobilenet_v2", zoo / "mobilenet_v2.onnx", zoo / "mobilenet_v2.input.npy", {}},
      {"resnet18_64", npu / "resnet18_64.onnx", npu / "resnet18_64.input.npy",
       npu / "resnet18_64.profile.yaml"},
  };
}

void PrintTo(const Model& m, std::ostream* os) { *os << m.name; }

class Determinism : public ::testing::TestWithParam<Model> {
 protected:
  void SetUp() override {
    // One directory per test and process: ctest runs this model's tests in parallel.
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string leaf =
        "determinism_" + std::to_string(getpid()) + "_" + info->test_suite_name() + "_" + info->name();
    std::replace(leaf.begin(), leaf.end(), '/', '_');
    dir_ = fs::path(::testing::TempDir()) / leaf;
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const fs::path& p : {GetParam().onnx, GetParam().input})
      if (!fs::exists(p)) GTEST_FAIL() << "missing test data " << p << " (built by the model_data targets)";
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Runs `ember args...` and returns every file it wrote into a fresh
  /// output directory, by name, with the tool's standard output under "stdout".
  std::map<std::string, std::string> run(const std::string& tag, std::vector<std::string> args,
                                         const std::string& outputFlag = "--output-dir") {
    const fs::path out = dir_ / tag;
    fs::create_directories(out);
    if (!outputFlag.empty()) {
      args.push_back(outputFlag);
      args.push_back(outputFlag == "--output-dir" ? out.string() : (out / "artefact").string());
    }
    const ember::test::ToolRun r = runTool(EMBER_TOOL_PATH, args, dir_);
    EXPECT_EQ(r.status, 0) << "ember " << args.front() << " (" << tag << ") failed: " << r.err;
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::directory_iterator(out))
      files[entry.path().filename().string()] = readWholeFile(entry.path());
    if (!outputFlag.empty()) {
      EXPECT_FALSE(files.empty()) << tag << " wrote nothing";
    }
    files["stdout"] = r.out;
    return files;
  }

  std::vector<std::string> runArgs(const std::string& backend) const {
    const Model& m = GetParam();
    std::vector<std::string> args = {"run",   m.onnx.string(), "--dim",          "N=1",    "--backend",
                                     backend, "--input",       m.input.string(), "--quiet"};
    return args;
  }

  fs::path dir_;
};

/// Compares the named files of two runs byte for byte (not "stdout", which
/// may carry timings).
void expectSameFiles(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b,
                     const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (const auto& [name, bytes] : a) {
    if (name == "stdout") continue;
    auto it = b.find(name);
    ASSERT_NE(it, b.end()) << what << ": " << name << " written once only";
    EXPECT_TRUE(bytes == it->second) << what << ": " << name << " differs";
  }
}

TEST_P(Determinism, ReferenceRunTwice) {
  expectSameFiles(run("ref1", runArgs("reference")), run("ref2", runArgs("reference")),
                  "reference, two runs");
}

TEST_P(Determinism, CpuAcrossThreadCounts) {
  std::map<std::string, std::string> first;
  for (const char* threads : {"1", "2", "4", "1"}) {
    std::vector<std::string> args = runArgs("cpu");
    args.insert(args.end(), {"--threads", threads});
    auto outputs = run(std::string("cpu_t") + threads + (first.empty() ? "" : "_again"), args);
    if (first.empty())
      first = std::move(outputs);
    else
      expectSameFiles(first, outputs, std::string("cpu, 1 thread against ") + threads);
  }
}

TEST_P(Determinism, IrDumpIsByteIdentical) {
  const Model& m = GetParam();
  std::vector<std::vector<std::string>> dumps = {{"dump", m.onnx.string(), "--dim", "N=1", "--stage", "ir"}};
  if (!m.profile.empty())
    dumps.push_back({"dump", m.onnx.string(), "--dim", "N=1", "--stage", "ir", "--backend", "npu",
                     "--quantize", m.profile.string()});
  for (const std::vector<std::string>& args : dumps) {
    const auto a = run("dump1", args, ""), b = run("dump2", args, "");
    EXPECT_GT(a.at("stdout").size(), 100u);
    EXPECT_TRUE(a.at("stdout") == b.at("stdout")) << "two IR dumps of " << m.name << " differ";
  }
}

/// The int8 models (those with a profile) on the npu.
class NpuDeterminism : public Determinism {};

TEST_P(NpuDeterminism, BundleAndOutputs) {
  const Model& m = GetParam();
  const std::vector<std::string> compile = {"compile",    m.onnx.string(),    "--dim",
                                            "N=1",        "--backend",        "npu",
                                            "--quantize", m.profile.string(), "--quiet"};
  expectSameFiles(run("bundle1", compile, "-o"), run("bundle2", compile, "-o"), "npu bundle, two compiles");
  std::vector<std::string> args = runArgs("npu");
  args.insert(args.end(), {"--quantize", m.profile.string()});
  expectSameFiles(run("npu1", args), run("npu2", args), "npu, two runs");
}

std::vector<Model> npuModels() {
  std::vector<Model> all = models();
  std::erase_if(all, [](const Model& m) { return m.profile.empty(); });
  return all;
}

std::string nameOf(const ::testing::TestParamInfo<Model>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Models, Determinism, ::testing::ValuesIn(models()), nameOf);
INSTANTIATE_TEST_SUITE_P(Models, NpuDeterminism, ::testing::ValuesIn(npuModels()), nameOf);

}  // namespace
