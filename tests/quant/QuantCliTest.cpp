// `ember quantize` and `ember run/compile --quantize` as a user runs them:
// exit statuses, one-line errors naming the key or tensor, the profile, the
// dequantized f32 outputs and the float_nodes of --report-json.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ember/Npy.h"

namespace {

namespace fs = std::filesystem;
const std::string kTool = EMBER_TOOL_PATH;
const std::string kModels = EMBER_MODELS_DIR;

struct Result {
  int status = -1;
  std::string err;
};

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

class QuantCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_quant_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Runs `ember ARGS`, capturing stderr; the status is -1 for a signal.
  Result ember(const std::string& args) {
    fs::path err = dir_ / "stderr.txt";
    std::string cmd =
        "'" + kTool + "' " + args + " > '" + (dir_ / "stdout.txt").string() + "' 2> '" + err.string() + "'";
    int raw = std::system(cmd.c_str());
    Result r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.err = readFile(err);
    return r;
  }
  std::string model() const { return "'" + kModels + "/digits.onnx' --dim N=1"; }
  std::string calibration() const { return "'" + kModels + "/digits.calibration.npy'"; }

  fs::path dir_;
};

TEST_F(QuantCliTest, QuantizeThenRun) {
  fs::path profile = dir_ / "digits.yaml";
  Result q = ember("quantize " + model() + " --calibrate " + calibration() + " -o '" + profile.string() +
                   "' --per-channel --calibration percentile");
  ASSERT_EQ(q.status, 0) << q.err;
  std::string yaml = readFile(profile);
  EXPECT_NE(yaml.find("graph_hash:"), std::string::npos);
  EXPECT_NE(yaml.find("per_channel: true"), std::string::npos);
  EXPECT_NE(yaml.find("pixels"), std::string::npos);

  // One held-out image as input.
  fs::path input = dir_ / "x.npy";
  ember::Tensor x(ember::Type(ember::ElemKind::F32, {1, 1, 8, 8}));
  for (int i = 0; i < 64; ++i) x.as<float>()[i] = float(i % 17) / 16.0f;
  ASSERT_FALSE(ember::writeNpy(input.string(), x));
  fs::path report = dir_ / "report.json";
  Result r = ember("run " + model() + " --quantize '" + profile.string() + "' --input '" + input.string() +
                   "' --output-dir '" + (dir_ / "out").string() + "' --report-json '" + report.string() +
                   "' --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  auto logits = ember::readNpy((dir_ / "out" / "logits.npy").string());
  ASSERT_TRUE(bool(logits));
  EXPECT_EQ(logits->type().kind, ember::ElemKind::F32);
  EXPECT_EQ(logits->type().dims, (ember::Dims{1, 10}));
  std::string json = readFile(report);
  EXPECT_NE(json.find("\"float_nodes\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"quantized_nodes\""), std::string::npos) << json;

  Result c = ember("compile " + model() + " --quantize '" + profile.string() + "' --quiet");
  EXPECT_EQ(c.status, 0) << c.err;
}

TEST_F(QuantCliTest, BadProfilesAreOneLineErrors) {
  fs::path profile = dir_ / "digits.yaml";
  ASSERT_EQ(ember("quantize " + model() + " --calibrate " + calibration() + " -o '" + profile.string() + "'")
                .status,
            0);
  std::string yaml = readFile(profile);
  fs::path input = dir_ / "x.npy";
  ASSERT_FALSE(
      ember::writeNpy(input.string(), ember::Tensor(ember::Type(ember::ElemKind::F32, {1, 1, 8, 8}))));
  auto runWith = [&](const std::string& text) {
    fs::path bad = dir_ / "bad.yaml";
    std::ofstream(bad) << text;
    return ember("run " + model() + " --quantize '" + bad.string() + "' --input '" + input.string() +
                 "' --quiet");
  };
  // A different graph: another batch size.
  Result r = ember("run '" + kModels + "/digits.onnx' --dim N=2 --random-inputs --quiet --quantize '" +
                   profile.string() + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("graph_hash"), std::string::npos) << r.err;
  // A missing tensor.
  size_t at = yaml.find("\n  pixels:");
  ASSERT_NE(at, std::string::npos) << yaml;
  std::string missing = yaml;
  missing.erase(at, yaml.find('\n', at + 1) - at);
  r = runWith(missing);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("'pixels'"), std::string::npos) << r.err;
  // Malformed YAML and bad values.
  r = runWith("version: 1\ngraph_hash: [\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("malformed YAML"), std::string::npos) << r.err;
  r = runWith("version: 1\ngraph_hash: x\ntensors: {pixels: {kind: i8q, scale: 0, offset: 0}}\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("tensor 'pixels'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'scale'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // Usage errors of ember quantize.
  EXPECT_EQ(ember("quantize " + model() + " -o x.yaml").status, 2);
  EXPECT_EQ(ember("quantize " + model() + " --calibrate " + calibration() + " -o x.yaml --schema odd").status,
            2);
  r = ember("quantize " + model() + " --calibrate '" + (dir_ / "nope.npy").string() + "' -o x.yaml");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("nope.npy"), std::string::npos) << r.err;
}

}  // namespace
