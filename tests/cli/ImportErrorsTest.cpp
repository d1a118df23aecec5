// Bad models and arrays as files (issue 11, docs/testing.md): each error names
// the file and the node, op, initializer or input it concerns, sizes claimed by
// a few bytes are refused before anything is allocated, and `ember` reports
// the same message on one line with exit status 1, never a signal.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ember/Importer.h"
#include "ember/Npy.h"
#include "tests/common/OnnxModel.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using onnx::TensorProto;

using test::OnnxModel;

class ImportErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        fs::temp_directory_path() / ("ember_import_errors_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string write(const std::string& name, const OnnxModel& m) { return write(name, m.bytes()); }

  /// Imports the file; expects an error holding every fragment and returns it.
  std::string importError(const std::string& path, const std::vector<std::string>& fragments,
                          const ImportOptions& options = {}) {
    Module module;
    auto f = importOnnxFile(path, module, options);
    EXPECT_FALSE(f.hasValue()) << path << " imported";
    if (f.hasValue()) return {};
    const std::string& m = f.error().message();
    EXPECT_EQ(m.rfind(path, 0), 0u) << "does not start with the file: " << m;
    for (const auto& s : fragments) EXPECT_NE(m.find(s), std::string::npos) << "no '" << s << "' in: " << m;
    return m;
  }

  /// Runs `ember compile FILE`; expects status 1 and one stderr line holding every fragment.
  void cliError(const std::string& path, const std::vector<std::string>& fragments) {
    const std::string errPath = (dir_ / "stderr.txt").string();
    const std::string cmd =
        std::string("'") + EMBER_TOOL_PATH + "' compile '" + path + "' 2>'" + errPath + "' >/dev/null";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << "ember was killed by a signal";
    EXPECT_EQ(WEXITSTATUS(status), 1);
    std::ifstream in(errPath);
    const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    for (const auto& s : fragments)
      EXPECT_NE(err.find(s), std::string::npos) << "no '" << s << "' in: " << err;
  }

  fs::path dir_;
};

TEST_F(ImportErrors, MalformedOnnxNamesTheFile) {
  OnnxModel m;
  m.input("x", {2});
  m.node("Relu", {"x"}, {"y"}, "relu1");
  m.output("y");
  const std::string bytes = m.bytes();
  importError(write("truncated.onnx", bytes.substr(0, bytes.size() - 5)), {"protobuf parse failed"});
  cliError(write("truncated.onnx", bytes.substr(0, bytes.size() - 5)), {"truncated.onnx"});
}

TEST_F(ImportErrors, UnsupportedOpNamesFileNodeAndOp) {
  OnnxModel m;
  m.input("x", {2});
  m.node("Frobnicate", {"x"}, {"y"}, "frob7");
  m.output("y");
  const std::string p = write("unsupported.onnx", m);
  importError(p, {"node 'frob7'", "Frobnicate", "unsupported operator"});
  cliError(p, {"unsupported.onnx", "node 'frob7'", "Frobnicate"});
}

TEST_F(ImportErrors, ReshapeToNegativeOrMismatchedSize) {
  for (auto [shape, fragment] : {std::pair<std::vector<int64_t>, std::string>{{-2, 3}, "negative entry -2"},
                                 {{5, 7}, "cannot reshape 2x3 (6 elements) to 5x7"},
                                 {{-1, 4}, "with -1"},
                                 {{int64_t(1) << 40, int64_t(1) << 40}, "more than"}}) {
    OnnxModel m;
    m.input("x", {2, 3});
    m.ints("shape", {int64_t(shape.size())}, shape);
    m.node("Reshape", {"x", "shape"}, {"y"}, "reshape3");
    m.output("y");
    const std::string p = write("reshape.onnx", m);
    importError(p, {"node 'reshape3'", "(Reshape, opset 13)", fragment});
    cliError(p, {"reshape.onnx", "node 'reshape3'", "Reshape"});
  }
}

TEST_F(ImportErrors, OverflowingShapesNameTheValue) {
  // 2^32 * 2^32 * 2^32 overflows 64 bits.
  const int64_t big = int64_t(1) << 32;
  OnnxModel m;
  m.input("x", {big, big, big});
  m.node("Relu", {"x"}, {"y"}, "relu1");
  m.output("y");
  importError(write("input.onnx", m), {"input 'x'", "elements"});

  OnnxModel w;
  w.input("x", {1});
  w.raw("weights", {big, big, big}, 4);
  w.node("Add", {"x", "weights"}, {"y"}, "add1");
  w.output("y");
  const std::string p = write("initializer.onnx", w);
  importError(p, {"initializer 'weights'", "elements"});
  cliError(p, {"initializer.onnx", "initializer 'weights'"});
}

TEST_F(ImportErrors, HugeClaimsAreRefusedBeforeAllocating) {
  // 4 bytes of raw_data claiming 2^31 floats (8 GiB): an error, not an 8 GiB allocation.
  OnnxModel m;
  m.input("x", {1});
  m.raw("w", {int64_t(1) << 31}, 4);
  m.node("Add", {"x", "w"}, {"y"}, "add1");
  m.output("y");
  importError(write("claim.onnx", m), {"initializer 'w'", "raw_data has 4 bytes"});

  // ConstantOfShape of 2^32 int64 zeros would be a 32 GiB constant: above the default 16 GiB per tensor.
  OnnxModel c;
  c.ints("shape", {1}, {int64_t(1) << 32});
  auto& n = c.node("ConstantOfShape", {"shape"}, {"y"}, "fill9");
  auto* value = n.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(TensorProto::INT64);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int64_data(0);
  c.output("y");
  const std::string p = write("fill.onnx", c);
  importError(p, {"node 'fill9'", "ConstantOfShape", "34359738368 bytes", "maxTensorBytes"});
  cliError(p, {"fill.onnx", "node 'fill9'", "maxTensorBytes"});
}

TEST_F(ImportErrors, ConfigurableMemoryLimits) {
  // A node result above the per-tensor limit names the node.
  OnnxModel m;
  m.input("x", {1, 1});
  m.ints("shape", {2}, {1024, 1024});
  m.node("Expand", {"x", "shape"}, {"y"}, "expand2");
  m.output("y");
  ImportOptions small;
  small.maxTensorBytes = 1 << 20;
  importError(write("expand.onnx", m), {"node 'expand2'", "Expand", "4194304 bytes", "maxTensorBytes"},
              small);
  Module ok;
  EXPECT_TRUE(importOnnxFile(write("expand.onnx", m), ok).hasValue()) << "the default limit is 16 GiB";

  // Constants that are each small but together above the total limit.
  OnnxModel w;
  w.input("x", {256});
  w.raw("w1", {256}, 1024);
  w.raw("w2", {256}, 1024);
  w.node("Add", {"x", "w1"}, {"t"}, "add1");
  w.node("Add", {"t", "w2"}, {"y"}, "add2");
  w.output("y");
  ImportOptions total;
  total.maxConstantBytes = 1536;
  importError(write("total.onnx", w), {"initializer 'w2'", "maxConstantBytes"}, total);
}

TEST_F(ImportErrors, BadNpyNamesTheFile) {
  auto npy = [](const std::string& shape, const std::string& data) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + dict.size() + 1) % 64) dict += ' ';
    dict += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += char(dict.size() & 0xFF);
    out += char(dict.size() >> 8);
    return out + dict + data;
  };
  struct Case {
    std::string name, bytes, fragment;
  };
  for (const Case& c : {Case{"short.npy", npy("(4,)", std::string(8, '\0')), "truncated data"},
                        Case{"overflow.npy", npy("(4294967296, 4294967296)", ""), "bad shape"},
                        Case{"negative.npy", npy("(-3,)", ""), "negative dimension"},
                        Case{"magic.npy", "NUMPY", "bad magic"}}) {
    const std::string p = write(c.name, c.bytes);
    auto t = readNpy(p);
    ASSERT_FALSE(t.hasValue()) << c.name;
    EXPECT_EQ(t.error().message().rfind(p, 0), 0u) << t.error().message();
    EXPECT_NE(t.error().message().find(c.fragment), std::string::npos) << t.error().message();
  }
}

}  // namespace
}  // namespace ember
