// Runs the `ember` binary as a user would and checks what a user sees: the
// exit status (never a signal), the one-line "ember: ..." messages on stderr,
// and the files written. The models come from data/make_models.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../common/RunTool.h"
#include "ember/Npy.h"

namespace {

namespace fs = std::filesystem;

using Result = ember::test::ToolRun;
using ember::test::readWholeFile;

std::string readFile(const fs::path& path) { return readWholeFile(path); }

void writeFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

/// A minimal .npy writer, independent of Ember's, for test inputs.
std::string npyBytes(const std::string& descr, const std::vector<int64_t>& shape, const std::string& data) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(shape[i]);
  dict += shape.size() == 1 ? ",), }" : "), }";
  while ((10 + dict.size() + 1) % 64) dict += ' ';
  dict += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(dict.size() & 0xFF);
  out += char(dict.size() >> 8);
  return out + dict + data;
}

template <typename T>
std::string rawBytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

std::string model(const std::string& name) { return std::string(EMBER_CLI_DATA_DIR) + "/" + name; }

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("ember_cli_test_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  /// Runs ember with `args`, capturing stdout and stderr.
  Result ember(const std::vector<std::string>& args) {
    Result result = ember::test::runTool(EMBER_TOOL_PATH, args, dir_);
    EXPECT_TRUE(result.started) << "cannot spawn " << EMBER_TOOL_PATH;
    return result;
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// Writes an f32 .npy of `shape` with `values` and returns its path.
  std::string f32Npy(const std::string& name, const std::vector<int64_t>& shape,
                     const std::vector<float>& values) {
    writeFile(path(name), npyBytes("<f4", shape, rawBytes(values)));
    return path(name);
  }

  fs::path dir_;
};

/// A failure: exit status 1 (not a signal) and exactly one line on stderr
/// starting with "ember: " that contains every fragment.
void expectFailure(const Result& r, const std::vector<std::string>& fragments, int status = 1) {
  EXPECT_EQ(r.signal, 0) << "killed by signal " << r.signal << "; stderr: " << r.err;
  EXPECT_EQ(r.status, status) << "stderr: " << r.err;
  EXPECT_EQ(r.err.rfind("ember", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line: " << r.err;
  for (const std::string& f : fragments)
    EXPECT_NE(r.err.find(f), std::string::npos) << "no '" << f << "' in: " << r.err;
}

void expectSuccess(const Result& r) {
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.status, 0) << "stderr: " << r.err;
}

std::vector<float> floats(const std::string& npyPath) {
  ember::Expected<ember::Tensor> t = ember::readNpy(npyPath);
  EXPECT_TRUE(t.hasValue()) << t.error().message();
  if (!t) return {};
  std::vector<float> v(size_t(t->type().numElements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(t->elementAsDouble(int64_t(i)));
  return v;
}

// ---- general ----------------------------------------------------------------

TEST_F(CliTest, Version) {
  Result r = ember({"--version"});
  expectSuccess(r);
  EXPECT_EQ(r.out.rfind("ember ", 0), 0u) << r.out;
}

TEST_F(CliTest, HelpForEverySubcommandExitsZero) {
  Result top = ember({"--help"});
  expectSuccess(top);
  EXPECT_NE(top.out.find("  sweep "), std::string::npos);
  for (const char* command : {"run", "compile", "dump", "backends", "sim", "asm", "disasm"}) {
    Result r = ember({command, "--help"});
    expectSuccess(r);
    EXPECT_NE(r.out.find(std::string("usage: ember ") + command), std::string::npos) << r.out;
    EXPECT_TRUE(r.err.empty()) << r.err;
  }
  Result viaHelp = ember({"help", "run"});
  expectSuccess(viaHelp);
  EXPECT_NE(viaHelp.out.find("--random-inputs"), std::string::npos);
}

TEST_F(CliTest, SweepWithoutSpecIsAUsageError) {
  expectFailure(ember({"sweep"}), {"ember sweep: missing SPEC.yaml"}, 2);
}

TEST_F(CliTest, UsageErrorsExitTwo) { expectFailure(ember({}), {"ember: missing command"}, 2); }

TEST_F(CliTest, UnknownOptionAndBadValues) {
  expectFailure(ember({"run", model("add_relu.onnx"), "--foo"}), {"ember run: unknown option '--foo'"}, 2);
  expectFailure(ember({"run", model("add_relu.onnx"), "--seed"}), {"'--seed' needs a value"}, 2);
  expectFailure(ember({"run", model("add_relu.onnx"), "--repeat", "abc"}), {"expects an integer, got 'abc'"},
                2);
  expectFailure(ember({"run", model("add_relu.onnx"), "--repeat", "0"}), {"'--repeat' must be between 1 and"},
                2);
  expectFailure(ember({"run", model("add_relu.onnx"), "--random-inputs=yes"}), {"takes no value"}, 2);
  expectFailure(ember({"run"}), {"missing MODEL.onnx"}, 2);
  expectFailure(ember({"run", "a.onnx", "b.onnx"}), {"unexpected argument 'b.onnx'"}, 2);
  expectFailure(ember({"frobnicate"}), {"ember: unknown command 'frobnicate'"}, 2);
  expectFailure(ember({"run", model("add_relu.onnx"), "--dim", "batch"}), {"--dim expects NAME=VALUE"}, 2);
  expectFailure(ember({"dump", model("add_relu.onnx"), "--stage", "bogus"}), {"unknown stage 'bogus'"}, 2);
}

// ---- bad models ---------------------------------------------------------------

TEST_F(CliTest, MissingModelFile) {
  expectFailure(ember({"run", path("nothere.onnx"), "--random-inputs"}), {"nothere.onnx"});
}

TEST_F(CliTest, TruncatedModel) {
  std::string bytes = readFile(model("add_relu.onnx"));
  ASSERT_GT(bytes.size(), 40u);
  for (size_t keep : {bytes.size() / 2, bytes.size() - 3, size_t(7)}) {
    writeFile(path("truncated.onnx"), bytes.substr(0, keep));
    expectFailure(ember({"run", path("truncated.onnx"), "--random-inputs"}), {"truncated.onnx"});
  }
}

TEST_F(CliTest, GarbageModel) {
  std::string garbage;
  uint32_t x = 12345;
  for (int i = 0; i < 4096; ++i) {
    x = x * 1664525u + 1013904223u;
    garbage += char(x >> 24);
  }
  writeFile(path("garbage.onnx"), garbage);
  expectFailure(ember({"run", path("garbage.onnx"), "--random-inputs"}), {"garbage.onnx"});
  writeFile(path("empty.onnx"), "");
  expectFailure(ember({"compile", path("empty.onnx")}), {"empty.onnx"});
  writeFile(path("text.onnx"), "this is not a model\n");
  expectFailure(ember({"dump", path("text.onnx")}), {"text.onnx"});
}

TEST_F(CliTest, UnsupportedOperator) {
  expectFailure(ember({"run", model("unknown_op.onnx"), "--random-inputs"}), {"FrobnicateZ"});
  expectFailure(ember({"compile", model("unknown_op.onnx")}), {"FrobnicateZ"});
}

TEST_F(CliTest, SymbolicDimensionNeedsDim) {
  expectFailure(ember({"run", model("symbolic.onnx"), "--random-inputs"}), {"batch"});
  Result r = ember({"run", model("symbolic.onnx"), "--random-inputs", "--dim", "batch=4"});
  expectSuccess(r);
  EXPECT_NE(r.out.find("f32<4x3>"), std::string::npos) << r.out;
}

TEST_F(CliTest, UnknownBackend) {
  expectFailure(ember({"run", model("add_relu.onnx"), "--random-inputs", "--backend", "nope"}),
                {"unknown backend 'nope'", "reference"});
}

// ---- inputs -----------------------------------------------------------------------

TEST_F(CliTest, MissingInputsAreNamed) {
  expectFailure(ember({"run", model("add_relu.onnx")}), {"missing model input(s) 'x'", "--random-inputs"});
  std::string a = f32Npy("a.npy", {2, 2}, {1, 2, 3, 4});
  Result r = ember({"run", model("two_inputs.onnx"), "--input", "a=" + a});
  expectFailure(r, {"'b'"});
  EXPECT_EQ(r.err.find("'a'"), std::string::npos) << r.err;
  expectFailure(ember({"run", model("two_inputs.onnx")}), {"'a'", "'b'"});
}

TEST_F(CliTest, WrongInputShape) {
  std::string x = f32Npy("x.npy", {3, 2}, {1, 2, 3, 4, 5, 6});
  expectFailure(ember({"run", model("add_relu.onnx"), "--input", "x=" + x}),
                {"input 'x'", "x.npy", "expected f32<2x3>", "got f32<3x2>"});
}

TEST_F(CliTest, WrongInputDtype) {
  writeFile(path("x.npy"), npyBytes("<i8", {2, 3}, rawBytes(std::vector<int64_t>{1, 2, 3, 4, 5, 6})));
  expectFailure(ember({"run", model("add_relu.onnx"), "--input", "x=" + path("x.npy")}),
                {"input 'x'", "expected f32<2x3>", "got i64<2x3>"});
}

TEST_F(CliTest, MissingOrMalformedInputFile) {
  expectFailure(ember({"run", model("add_relu.onnx"), "--input", "x=" + path("absent.npy")}), {"absent.npy"});
  writeFile(path("bad.npy"), "\x93NUMPY\x01\x00\xff\xff{");
  expectFailure(ember({"run", model("add_relu.onnx"), "--input", "x=" + path("bad.npy")}), {"bad.npy"});
  std::string fortran = npyBytes("<f4", {2, 3}, std::string(24, '\0'));
  fortran.replace(fortran.find("False"), 5, "True ");
  writeFile(path("fortran.npy"), fortran);
  expectFailure(ember({"run", model("add_relu.onnx"), "--input", "x=" + path("fortran.npy")}),
                {"fortran.npy", "Fortran"});
}

TEST_F(CliTest, InputNamingErrors) {
  std::string a = f32Npy("a.npy", {2, 2}, {1, 2, 3, 4});
  expectFailure(ember({"run", model("two_inputs.onnx"), "--input", "zz=" + a, "--random-inputs"}),
                {"no input 'zz'", "'a', 'b'"});
  expectFailure(ember({"run", model("two_inputs.onnx"), "--input", a, "--random-inputs"}), {"NAME=FILE.npy"});
  expectFailure(ember({"run", model("two_inputs.onnx"), "--input", "a=" + a, "--input", "a=" + a}),
                {"given twice"});
}

// ---- successful runs ----------------------------------------------------------------

TEST_F(CliTest, RunWritesSanitisedOutputs) {
  std::string x = f32Npy("x.npy", {2, 3}, {1, 1, 1, 1, 1, 1});
  Result r = ember({"run", model("add_relu.onnx"), "--input", "x=" + x, "--output-dir", path("out")});
  expectSuccess(r);
  // "out/y:0" becomes out_y_0.npy.
  ASSERT_TRUE(fs::exists(path("out/out_y_0.npy"))) << r.out;
  ASSERT_TRUE(fs::exists(path("out/neg.npy")));
  EXPECT_EQ(floats(path("out/out_y_0.npy")), (std::vector<float>{0, 0, 1, 2, 3, 4}));
  EXPECT_EQ(floats(path("out/neg.npy")), (std::vector<float>{1, 0, -1, -2, -3, -4}));
  EXPECT_NE(r.out.find("out/y:0 f32<2x3>"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backend:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory:"), std::string::npos) << r.out;
}

TEST_F(CliTest, SingleInputShorthandAndF64Input) {
  std::vector<double> ones(6, 1.0);
  writeFile(path("x64.npy"), npyBytes("<f8", {2, 3}, rawBytes(ones)));
  Result r = ember({"run", model("add_relu.onnx"), "--input", path("x64.npy"), "--output-dir", path("o")});
  expectSuccess(r);
  EXPECT_EQ(floats(path("o/out_y_0.npy")), (std::vector<float>{0, 0, 1, 2, 3, 4}));
}

TEST_F(CliTest, TwoInputs) {
  std::string a = f32Npy("a.npy", {2, 2}, {1, 2, 3, 4});
  std::string b = f32Npy("b.npy", {2, 2}, {10, 20, 30, 40});
  Result r = ember(
      {"run", model("two_inputs.onnx"), "--input", "a=" + a, "--input=b=" + b, "--output-dir", path("o")});
  expectSuccess(r);
  EXPECT_EQ(floats(path("o/sum.npy")), (std::vector<float>{11, 22, 33, 44}));
}

TEST_F(CliTest, RandomInputsAreDeterministic) {
  auto runWithSeed = [&](const std::string& seed, const std::string& out) {
    expectSuccess(ember({"run", model("two_inputs.onnx"), "--random-inputs", "--seed", seed, "--output-dir",
                         path(out), "--quiet"}));
    return floats(path(out + "/sum.npy"));
  };
  std::vector<float> first = runWithSeed("7", "a"), second = runWithSeed("7", "b"),
                     other = runWithSeed("8", "c");
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other);
  for (float v : first) EXPECT_TRUE(v >= -2 && v < 2) << v;
}

TEST_F(CliTest, RunReportJson) {
  Result r = ember({"run", model("add_relu.onnx"), "--random-inputs", "--repeat", "3", "--threads", "2",
                    "--report-json", path("report.json")});
  expectSuccess(r);
  std::string json = readFile(path("report.json"));
  for (const char* key :
       {"\"backend\": \"reference\"", "\"compile_seconds\"", "\"memory\"", "\"constant_bytes\"",
        "\"io_bytes\"", "\"activation_bytes\"", "\"activation_lower_bound_bytes\"", "\"fallback_nodes\": []",
        "\"run_seconds_median\""})
    EXPECT_NE(json.find(key), std::string::npos) << key << " missing in " << json;
  EXPECT_EQ(json.front(), '{');
  EXPECT_NE(r.out.find("median of 3 runs"), std::string::npos) << r.out;
}

// Shape specialisation and value-dependent outputs are in the text report and
// in --report-json: the given `shape` is bound (its values listed), and
// NonZero over a random x is compiled at its bound with a valid-count output.
TEST_F(CliTest, ReportNamesBoundInputsAndBoundedOutputs) {
  writeFile(path("shape.npy"), npyBytes("<i8", {2}, rawBytes(std::vector<int64_t>{3, 2})));
  for (const std::string command : {"run", "compile"}) {
    std::vector<std::string> args = {command, model("bind_and_bound.onnx"), "--report-json", path("r.json")};
    if (command == "run")
      args.insert(args.end(), {"--input", "shape=" + path("shape.npy"), "--random-inputs"});
    else
      args.insert(args.end(), {"--bind", "shape=" + path("shape.npy")});
    Result r = ember(args);
    expectSuccess(r);
    EXPECT_NE(r.out.find("bound:        shape i64<2> = [3, 2]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("warning:      node 'nz' (NonZero)"), std::string::npos) << r.out;
    const std::string json = readFile(path("r.json"));
    for (const char* fragment :
         {"\"bound_inputs\"", "\"name\": \"shape\"", "\"type\": \"i64<2>\"", "\"warnings\"",
          "node 'nz' (NonZero): the output shape depends on input values",
          "valid entries counted in output 'nz.valid_count'"})
      EXPECT_NE(json.find(fragment), std::string::npos) << command << ": no " << fragment << " in " << json;
  }
}

TEST_F(CliTest, CompileReportsAndRefusesOutputForReference) {
  Result r = ember({"compile", model("add_relu.onnx"), "--backend", "reference", "--report-json",
                    path("c.json"), "--no-ir-opt"});
  expectSuccess(r);
  std::string json = readFile(path("c.json"));
  EXPECT_NE(json.find("\"activation_lower_bound_bytes\""), std::string::npos) << json;
  EXPECT_EQ(json.find("run_seconds_median"), std::string::npos) << json;
  expectFailure(
      ember({"compile", model("add_relu.onnx"), "-o", path("out.bin")}),
      {"-o " + path("out.bin") + " (backend 'reference'): this backend writes no compiled artefact"}, 1);
}

TEST_F(CliTest, DumpEveryStage) {
  for (const char* stage : {"graph", "optimized", "lowered", "ir"}) {
    Result r = ember({"dump", model("add_relu.onnx"), "--stage", stage, "--dot", path("g.dot")});
    expectSuccess(r);
    EXPECT_FALSE(r.out.empty()) << stage;
    EXPECT_NE(readFile(path("g.dot")).find("digraph"), std::string::npos) << stage;
  }
  Result printed = ember({"dump", model("add_relu.onnx"), "--stage", "lowered", "--print-after", "*"});
  expectSuccess(printed);
}

TEST_F(CliTest, BackendsListsReference) {
  Result r = ember({"backends"});
  expectSuccess(r);
  EXPECT_EQ(r.out.rfind("reference", 0), 0u) << r.out;
  expectFailure(ember({"backends", "--backend-path", path("no-such-dir")}), {"no-such-dir"});
  fs::create_directories(path("plugins"));
  writeFile(path("plugins/libbroken.so"), "not an ELF file");
  expectFailure(ember({"backends", "--backend-path", path("plugins")}), {"libbroken.so"});
}

TEST_F(CliTest, UnwritableOutputs) {
  writeFile(path("file"), "x");
  expectFailure(
      ember({"run", model("add_relu.onnx"), "--random-inputs", "--output-dir", path("file") + "/sub"}),
      {"file/sub"});
  expectFailure(
      ember({"run", model("add_relu.onnx"), "--random-inputs", "--report-json", path("nodir/r.json")}),
      {"nodir/r.json"});
}

// ---- The npu backend through the tool (docs/cli.md; docs/npu/compiler.md) ----

std::string digits() { return std::string(EMBER_EXAMPLES_DIR) + "/models/digits.onnx"; }
std::string npuConfig(const std::string& name) { return std::string(EMBER_NPU_CONFIG_DIR) + "/" + name; }

class NpuCliTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    expectSuccess(ember({"quantize", digits(), "--dim", "N=1", "--calibrate",
                         std::string(EMBER_EXAMPLES_DIR) + "/models/digits.calibration.npy", "-o",
                         path("digits.yaml")}));
  }
  std::vector<std::string> compileArgs(const std::string& command, const std::string& config) {
    return {command, digits(),   "--dim", "N=1",        "--backend",
            "npu",   "--config", config,  "--quantize", path("digits.yaml")};
  }
};

TEST_F(NpuCliTest, CompileWritesABundleThatSimRuns) {
  std::vector<std::string> args = compileArgs("compile", npuConfig("npu-16x16.yaml"));
  for (std::string extra :
       std::vector<std::string>{"-o", path("digits.bundle"), "--report-json", path("c.json")})
    args.push_back(extra);
  Result compiled = ember(args);
  expectSuccess(compiled);
  EXPECT_NE(compiled.out.find("est. cycles"), std::string::npos) << compiled.out;
  std::string json = readFile(path("c.json"));
  for (const char* key : {"\"layers\"", "\"tiles\"", "\"estimated_cycles\"", "\"/conv2/Conv\""})
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;

  Result simulated = ember({"sim", path("digits.bundle"), "--config", npuConfig("npu-16x16.yaml"), "--check",
                            "--random-inputs", "--stats", path("s.json")});
  expectSuccess(simulated);
  EXPECT_NE(readFile(path("s.json")).find("\"cycles\""), std::string::npos);
}

TEST_F(NpuCliTest, RunReportsCyclesLayersAndFallback) {
  std::vector<std::string> args = compileArgs("run", npuConfig("npu-16x16.yaml"));
  for (std::string extra : std::vector<std::string>{
           "--input", std::string(EMBER_EXAMPLES_DIR) + "/models/digits.input.npy", "--report-json",
           path("r.json"), "--trace", path("t.json"), "--output-dir", path("npu")})
    args.push_back(extra);
  Result r = ember(args);
  expectSuccess(r);
  EXPECT_NE(r.out.find("utilisation"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/fc1/Gemm"), std::string::npos) << r.out;
  std::string json = readFile(path("r.json"));
  for (const char* key :
       {"\"cycles\"", "\"macs\"", "\"mac_utilization\"", "\"dram_read_bytes\"", "\"dram_write_bytes\"",
        "\"energy_pj\"", "\"stall_cycles\"", "\"op\": \"Quantize\""})
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
  EXPECT_NE(readFile(path("t.json")).find("traceEvents"), std::string::npos);

  // The same int8 graph on the reference backend gives the same bits.
  Result reference = ember({"run", digits(), "--dim", "N=1", "--quantize", path("digits.yaml"), "--input",
                            std::string(EMBER_EXAMPLES_DIR) + "/models/digits.input.npy", "--output-dir",
                            path("ref"), "--quiet"});
  expectSuccess(reference);
  EXPECT_EQ(readFile(path("npu/logits.npy")), readFile(path("ref/logits.npy")));
}

// --quantize-for npu on the reference backend runs exactly the npu's int8
// graph (docs/cli.md): the same bits as the npu run, and int8 nodes at all
// (the npu alone runs no Quantize, so the quantizer must see its fallback too).
TEST_F(NpuCliTest, QuantizeForNpuRunsTheNpuGraphOnTheReference) {
  const std::string input = std::string(EMBER_EXAMPLES_DIR) + "/models/digits.input.npy";
  std::vector<std::string> args = compileArgs("run", npuConfig("npu-16x16.yaml"));
  for (std::string extra : std::vector<std::string>{"--input", input, "--output-dir", path("npu"), "--quiet"})
    args.push_back(extra);
  expectSuccess(ember(args));
  Result reference =
      ember({"run", digits(), "--dim", "N=1", "--quantize", path("digits.yaml"), "--quantize-for", "npu",
             "--input", input, "--output-dir", path("ref"), "--report-json", path("q.json"), "--quiet"});
  expectSuccess(reference);
  EXPECT_EQ(readFile(path("npu/logits.npy")), readFile(path("ref/logits.npy")));
  const std::string json = readFile(path("q.json"));
  EXPECT_EQ(json.find("\"quantized_nodes\": 0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"quantized_nodes\""), std::string::npos) << json;
}

// A layer no tiling fits into the config's SRAMs is declined by the npu's
// supports(): with the default fallback it runs on the reference backend and
// the report counts it; with --fallback none the error names the layer.
TEST_F(NpuCliTest, LayerThatCannotFitFallsBackOrNamesTheLayer) {
  std::string config = readFile(npuConfig("npu-16x16.yaml"));
  config.replace(config.find("size_kib: 256"), 13, "size_kib: 1");
  config.replace(config.find("banks: 4"), 8, "banks: 1");
  writeFile(path("tiny.yaml"), config);
  std::vector<std::string> args = compileArgs("compile", path("tiny.yaml"));
  const Result fellBack = ember(args);
  expectSuccess(fellBack);
  EXPECT_NE(fellBack.out.find("fallback:"), std::string::npos) << fellBack.out;
  EXPECT_NE(fellBack.out.find("QuantizedConv -> reference"), std::string::npos) << fellBack.out;
  // Why, with the config's 1 KiB scratchpad, in the report's lines.
  const std::string why = "no tiling fits the SRAMs (scratchpad 1024 bytes";
  EXPECT_NE(fellBack.out.find("  /conv"), std::string::npos) << fellBack.out;
  EXPECT_NE(fellBack.out.find("'npu' does not support QuantizedConv on ("), std::string::npos)
      << fellBack.out;
  EXPECT_NE(fellBack.out.find(why), std::string::npos) << fellBack.out;
  args.insert(args.end(), {"--fallback", "none"});
  expectFailure(ember(args), {"node '/conv", "unsupported by backend 'npu'"});
}

TEST_F(NpuCliTest, InconsistentConfigNamesTheKey) {
  std::string config = readFile(npuConfig("npu-16x16.yaml"));
  config.replace(config.find("banks: 4"), 8, "banks: 3");
  writeFile(path("bad.yaml"), config);
  expectFailure(ember(compileArgs("compile", path("bad.yaml"))), {"--config", "key 'scratchpad.banks'"});
}

TEST_F(NpuCliTest, UnknownBackendOptionAndHostTraceAreErrors) {
  expectFailure(ember({"run", digits(), "--dim", "N=1", "--backend", "npu", "--backend-option", "foo=1",
                       "--random-inputs"}),
                {"unknown backend option 'foo'"});
  expectFailure(ember({"run", digits(), "--dim", "N=1", "--random-inputs", "--trace", path("t.json")}),
                {"--trace: this backend records no timeline"});
  expectFailure(
      ember({"run", digits(), "--dim", "N=1", "--backend", "npu", "--fallback", "none", "--random-inputs"}),
      {"node '", "unsupported by backend 'npu'"});
}

}  // namespace
