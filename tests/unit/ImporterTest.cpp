// Tests of the ONNX importer: small ModelProtos built with the protobuf API,
// imported, then checked for node kinds and types, error messages, and (with a
// tiny test-local evaluator over the reference kernels) numerics.

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>

#include "ember/Importer.h"
#include "ember/Kernels.h"
#include "tests/common/OnnxModel.h"

namespace ember {
namespace {

using test::attr;
using test::OnnxModel;

/// Imports or fails the test.
Function* importOk(const OnnxModel& m, Module& module, const ImportOptions& options = {}) {
  auto f = importOnnxBytes(m.bytes(), "model.onnx", module, options);
  EXPECT_TRUE(f.hasValue()) << f.error().message();
  return f.hasValue() ? *f : nullptr;
}

std::string importError(const std::string& bytes, const ImportOptions& options = {}) {
  Module module;
  auto f = importOnnxBytes(bytes, "model.onnx", module, options);
  EXPECT_FALSE(f.hasValue());
  return f.hasValue() ? std::string() : f.error().message();
}

/// Kinds of the non-storage nodes, in topological order.
std::vector<OpKind> computeKinds(const Function& f) {
  std::vector<OpKind> kinds;
  for (Node* n : f.topologicalOrder())
    if (!n->isConstant() && !n->isPlaceholder()) kinds.push_back(n->kind());
  return kinds;
}

/// Evaluates a primitive-only function with the reference kernels.
std::map<std::string, Tensor> evaluate(const Function& f, const std::map<std::string, Tensor>& inputs) {
  std::map<const Node*, std::vector<Tensor>> values;
  for (Node* n : f.topologicalOrder()) {
    if (n->isPlaceholder()) {
      values[n].push_back(inputs.at(n->name()));
      continue;
    }
    if (n->isConstant()) {
      values[n].push_back(n->payload());
      continue;
    }
    std::vector<ConstTensorRef> ins;
    for (const NodeValue& v : n->inputs()) ins.push_back(values.at(v.node)[v.resNo].ref());
    std::vector<Tensor> outs;
    for (const Type& t : n->resultTypes()) outs.emplace_back(t);
    std::vector<TensorRef> outRefs;
    for (Tensor& t : outs) outRefs.push_back(t.ref());
    Error e = runKernel(n->kind(), n->attrs(), ins, outRefs);
    EXPECT_FALSE(e) << n->str() << ": " << e.message();
    values[n] = std::move(outs);
  }
  std::map<std::string, Tensor> result;
  for (const auto& [name, v] : f.outputs()) result.emplace(name, values.at(v.node)[v.resNo]);
  return result;
}

Tensor f32(Dims dims, std::vector<float> values) {
  return Tensor::fromValues<float>(ElemKind::F32, std::move(dims), values);
}
std::vector<double> elements(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.type().numElements(); ++i) v.push_back(t.elementAsDouble(i));
  return v;
}
std::vector<float> iota(int64_t n, float start = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = start + float(i);
  return v;
}

// ---- errors -------------------------------------------------------------------------

TEST(ImporterErrors, EmptyAndGarbageBytes) {
  EXPECT_EQ(importError(""), "model.onnx: empty file");
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::string bytes(size_t(1 + rng() % 300), '\0');
    for (char& c : bytes) c = char(rng());
    std::string message = importError(bytes);
    EXPECT_EQ(message.rfind("model.onnx: ", 0), 0u) << message;
  }
}

TEST(ImporterErrors, TruncatedModel) {
  OnnxModel m;
  m.input("x", {int64_t(1), int64_t(4)});
  m.floats("w", {4, 4}, iota(16));
  m.node("MatMul", {"x", "w"}, {"y"}, "mm");
  m.output("y");
  std::string bytes = m.bytes();
  for (size_t cut : {size_t(1), bytes.size() / 3, bytes.size() / 2, bytes.size() - 1})
    EXPECT_EQ(importError(bytes.substr(0, cut)).rfind("model.onnx: ", 0), 0u);
}

TEST(ImporterErrors, NoGraphAndLegacyBroadcast) {
  onnx::ModelProto empty;
  empty.set_ir_version(8);
  EXPECT_NE(importError(empty.SerializeAsString()).find("no graph"), std::string::npos);
  // Opsets before 7 are imported where their semantics match, not legacy broadcasting.
  OnnxModel m(6);
  m.input("x", {int64_t(2), int64_t(3)});
  m.input("y", {int64_t(2)});
  auto& add = m.node("Add", {"x", "y"}, {"z"}, "add");
  attr(add, "broadcast", int64_t(1));
  attr(add, "axis", int64_t(0));
  m.output("z");
  EXPECT_EQ(importError(m.bytes()),
            "model.onnx: node 'add' (Add, opset 6): legacy broadcasting with an axis is unsupported");
}

TEST(ImporterErrors, UnsupportedOperator) {
  OnnxModel m;
  m.input("x", {int64_t(2), int64_t(2)});
  m.node("TfIdfVectorizer", {"x"}, {"y"}, "x_tfidf");
  m.output("y");
  EXPECT_EQ(importError(m.bytes()),
            "model.onnx: node 'x_tfidf' (TfIdfVectorizer, opset 13): unsupported operator TfIdfVectorizer");
  OnnxModel ms;
  ms.input("x", {int64_t(2)});
  ms.node("FusedConv", {"x"}, {"y"}, "f").set_domain("com.microsoft");
  ms.output("y");
  EXPECT_NE(importError(ms.bytes()).find("unsupported operator com.microsoft.FusedConv"), std::string::npos);
}

TEST(ImporterErrors, SymbolicDimension) {
  OnnxModel m;
  m.input("x", {std::string("batch"), int64_t(3)});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  EXPECT_EQ(importError(m.bytes()),
            "model.onnx: input 'x' has symbolic dimension 'batch'; pin it with --dim batch=VALUE");

  ImportOptions options;
  options.dimValues["batch"] = 5;
  Module module;
  Function* f = importOk(m, module, options);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->inputs().size(), 1u);
  EXPECT_EQ(f->inputs()[0]->name(), "x");
  EXPECT_EQ(f->inputs()[0]->resultType(), Type(ElemKind::F32, {5, 3}));
}

TEST(ImporterErrors, BadInitializerSize) {
  OnnxModel m;
  m.input("x", {int64_t(2)});
  auto& w = m.floats("w", {3}, {1, 2});
  (void)w;
  m.node("Add", {"x", "w"}, {"y"});
  m.output("y");
  std::string message = importError(m.bytes());
  EXPECT_NE(message.find("model.onnx: initializer 'w'"), std::string::npos) << message;

  OnnxModel raw;
  raw.input("x", {int64_t(2)});
  auto& r = raw.floats("w", {2}, {});
  r.set_raw_data(std::string(7, '\0'));
  raw.node("Add", {"x", "w"}, {"y"});
  raw.output("y");
  message = importError(raw.bytes());
  EXPECT_NE(message.find("initializer 'w': raw_data has 7 bytes"), std::string::npos) << message;

  OnnxModel huge;
  huge.input("x", {int64_t(2)});
  auto& h = huge.floats("w", {int64_t(1) << 40, int64_t(1) << 40}, {});
  (void)h;
  huge.node("Add", {"x", "w"}, {"y"});
  huge.output("y");
  message = importError(huge.bytes());
  EXPECT_NE(message.find("initializer 'w'"), std::string::npos) << message;
}

TEST(ImporterErrors, UnsupportedElementType) {
  OnnxModel m;
  m.input("x", {int64_t(2)}, onnx::TensorProto::UINT16);
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  EXPECT_EQ(importError(m.bytes()), "model.onnx: input 'x': unsupported element type UINT16");
}

TEST(ImporterErrors, NonConstantShapeInput) {
  OnnxModel m;
  m.input("x", {int64_t(2), int64_t(3)});
  m.input("s", {int64_t(2)}, onnx::TensorProto::INT64);
  m.node("Reshape", {"x", "s"}, {"y"}, "r");
  m.output("y");
  EXPECT_EQ(importError(m.bytes()),
            "model.onnx: node 'r' (Reshape, opset 13): input 'shape' must be a constant under static shapes; "
            "it depends "
            "on graph input 's': give the value (ember run --input s=FILE.npy, ember compile --bind "
            "s=FILE.npy)");
}

TEST(Importer, ShapeSpecialisationBindsOnlyShapeDecidingInputs) {
  // s decides the Reshape's shape (through an Add); x and z are plain data.
  OnnxModel m;
  m.input("x", {int64_t(4), int64_t(3)});
  m.input("s", {int64_t(2)}, onnx::TensorProto::INT64);
  m.input("z", {int64_t(6), int64_t(2)});
  m.node("Add", {"s", "s"}, {"s2"}, "twice");
  m.node("Reshape", {"x", "s2"}, {"r"}, "r");
  m.node("Add", {"r", "z"}, {"y"}, "add");
  m.output("y");
  ImportOptions options;
  options.inputValues.emplace("x", f32({4, 3}, iota(12)));
  options.inputValues.emplace("z", f32({6, 2}, iota(12)));
  options.inputValues.emplace("s",
                              Tensor::fromValues<int64_t>(ElemKind::I64, {2}, std::vector<int64_t>{3, 1}));
  Module module;
  Function* f = importOk(m, module, options);
  ASSERT_NE(f, nullptr);
  std::vector<std::string> inputs;
  for (const Node* in : f->inputs()) inputs.push_back(in->name());
  EXPECT_EQ(inputs, (std::vector<std::string>{"x", "z"}));
  auto out = evaluate(*f, {{"x", f32({4, 3}, iota(12))}, {"z", f32({6, 2}, iota(12))}});
  ASSERT_EQ(out.at("y").type(), Type(ElemKind::F32, {6, 2}));
  std::vector<double> expected;
  for (int i = 0; i < 12; ++i) expected.push_back(2.0 * i);
  EXPECT_EQ(elements(out.at("y")), expected);

  // --bind binds even a data input; a value of the wrong type names the input.
  ImportOptions bindAll;
  bindAll.boundInputs.emplace("s",
                              Tensor::fromValues<int64_t>(ElemKind::I64, {2}, std::vector<int64_t>{3, 1}));
  bindAll.boundInputs.emplace("z", f32({6, 2}, iota(12)));
  Module bound;
  Function* g = importOk(m, bound, bindAll);
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->inputs()[0]->name(), "x");
  ImportOptions wrong;
  wrong.boundInputs.emplace("s", f32({2}, {3, 1}));
  EXPECT_EQ(importError(m.bytes(), wrong),
            "model.onnx: input 's': the value given has type f32<2> but the model declares i64<2>");
}

TEST(ImporterErrors, TypeRuleFailureNamesNode) {
  OnnxModel m;
  m.input("a", {int64_t(2), int64_t(3)});
  m.input("b", {int64_t(4), int64_t(5)});
  m.node("MatMul", {"a", "b"}, {"y"}, "mm");
  m.output("y");
  std::string message = importError(m.bytes());
  EXPECT_EQ(message.rfind("model.onnx: node 'mm' (MatMul, opset 13): ", 0), 0u) << message;
}

TEST(ImporterErrors, UnsupportedExtraOutputs) {
  OnnxModel m;
  // 2-D MaxPool has its Indices output (OnnxPoolIndices.cpp); 1-D does not.
  m.input("x", {int64_t(1), int64_t(1), int64_t(4)});
  auto& pool = m.node("MaxPool", {"x"}, {"y", "idx"}, "pool");
  attr(pool, "kernel_shape", std::vector<int64_t>{2});
  m.output("y");
  m.output("idx");
  EXPECT_NE(importError(m.bytes()).find(
                "node 'pool' (MaxPool, opset 13): output 'Indices' is supported for 2-D MaxPool only"),
            std::string::npos);

  OnnxModel d;
  d.input("x", {int64_t(3)});
  d.node("Dropout", {"x"}, {"y", "mask"}, "drop");
  d.output("y");
  Module module;
  Function* f = importOk(d, module);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->outputs()[0].second.node->isPlaceholder());  // Dropout is the identity
}

TEST(ImporterErrors, UndefinedInputAndOutput) {
  OnnxModel m;
  m.input("x", {int64_t(3)});
  m.node("Relu", {"nope"}, {"y"}, "r");
  m.output("y");
  EXPECT_NE(importError(m.bytes()).find("node 'r' (Relu, opset 13): input 'nope' is not defined"),
            std::string::npos);
}

TEST(ImporterErrors, NamesMustBeUtf8) {
  // Graph names reach YAML profiles and JSON reports, which hold only UTF-8.
  OnnxModel value;
  value.input("x", {int64_t(3)});
  value.node("Relu", {"x"}, {"y\xb6"}, "r");
  value.output("y\xb6");
  EXPECT_EQ(importError(value.bytes()),
            "model.onnx: node 'r' (Relu, opset 13): value 'y\\xb6' is not valid UTF-8 (at byte offset 1)");
  OnnxModel node;
  node.input("x", {int64_t(3)});
  node.node("Relu", {"x"}, {"y"}, "r\xc0\x80");
  node.output("y");
  EXPECT_EQ(importError(node.bytes()),
            "model.onnx: node 'r\\xc0\\x80' (Relu, opset 13): the node's name 'r\\xc0\\x80' is "
            "not valid UTF-8 (at byte offset 1)");
  OnnxModel input;
  input.input("\xe9t\xe9", {int64_t(3)});
  input.node("Relu", {"\xe9t\xe9"}, {"y"}, "r");
  input.output("y");
  EXPECT_EQ(importError(input.bytes()),
            "model.onnx: value '\\xe9t\\xe9' is not valid UTF-8 (at byte offset 0)");
  OnnxModel fine;  // UTF-8 names are kept
  fine.input("\xc3\xa9t\xc3\xa9", {int64_t(3)});
  fine.node("Relu", {"\xc3\xa9t\xc3\xa9"}, {"y"}, "r\xe2\x82\xac");
  fine.output("y");
  Module module;
  Expected<Function*> f = importOnnxBytes(fine.bytes(), "model.onnx", module, {});
  ASSERT_TRUE(f) << f.error().message();
}

// ---- graph structure --------------------------------------------------------------------

TEST(Importer, InitializerListedAsInputIsConstant) {
  OnnxModel m;
  m.input("x", {int64_t(2)});
  m.input("w", {int64_t(2)});
  m.floats("w", {2}, {1, 2});
  m.node("Add", {"x", "w"}, {"y"});
  m.output("y");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->inputs().size(), 1u);
  EXPECT_EQ(f->inputs()[0]->name(), "x");
  EXPECT_EQ(computeKinds(*f), std::vector<OpKind>{OpKind::Add});
  // An unnamed node is named after its op type and index.
  EXPECT_EQ(f->outputs()[0].second.node->name(), "Add_0");
}

TEST(Importer, OutputsMayBeInputsOrConstants) {
  OnnxModel m;
  m.input("x", {int64_t(2)});
  m.floats("c", {2}, {3, 4});
  m.node("Identity", {"x"}, {"same"});
  m.output("same");
  m.output("c");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->outputs().size(), 2u);
  EXPECT_TRUE(f->outputs()[0].second.node->isPlaceholder());
  EXPECT_TRUE(f->outputs()[1].second.node->isConstant());
  EXPECT_EQ(f->outputs()[1].first, "c");
}

TEST(Importer, ShapeSubgraphFolds) {
  // PyTorch's x.view(x.size(0), -1).
  OnnxModel m;
  m.input("x", {int64_t(2), int64_t(3), int64_t(4)});
  m.node("Shape", {"x"}, {"shape"});
  m.ints("zero", {}, {0});
  m.node("Gather", {"shape", "zero"}, {"batch"});
  m.ints("axes0", {1}, {0});
  m.node("Unsqueeze", {"batch", "axes0"}, {"batch1"});
  m.ints("minus1", {1}, {-1});
  attr(m.node("Concat", {"batch1", "minus1"}, {"newshape"}), "axis", int64_t(0));
  m.node("Reshape", {"x", "newshape"}, {"y"}, "view");
  m.output("y");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(computeKinds(*f), std::vector<OpKind>{OpKind::Reshape});
  EXPECT_EQ(f->outputs()[0].second.type(), Type(ElemKind::F32, {2, 12}));
  // Only the input placeholder and the reshape: nothing folded was left behind.
  EXPECT_EQ(f->numNodes(), 2u);
}

TEST(Importer, ReshapeZeroAndMinusOne) {
  OnnxModel m;
  m.input("x", {int64_t(2), int64_t(3), int64_t(4)});
  m.ints("s", {3}, {0, -1, 2});
  m.node("Reshape", {"x", "s"}, {"y"});
  m.output("y");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{2, 6, 2}));
}

TEST(Importer, SliceNormalisesOnnxClamping) {
  OnnxModel m;
  m.floats("data", {10}, iota(10));
  m.ints("starts", {1}, {-1});
  m.ints("ends", {1}, {std::numeric_limits<int64_t>::min()});
  m.ints("axes", {1}, {0});
  m.ints("steps", {1}, {-2});
  m.node("Slice", {"data", "starts", "ends", "axes", "steps"}, {"rev"});
  m.ints("starts2", {1}, {2});
  m.ints("ends2", {1}, {std::numeric_limits<int64_t>::max()});
  m.node("Slice", {"data", "starts2", "ends2"}, {"tail"});
  m.ints("starts3", {1}, {7});
  m.ints("ends3", {1}, {3});
  m.node("Slice", {"data", "starts3", "ends3"}, {"empty"});
  m.output("rev");
  m.output("tail");
  m.output("empty");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  auto out = evaluate(*f, {});
  EXPECT_EQ(elements(out.at("rev")), (std::vector<double>{9, 7, 5, 3, 1}));
  EXPECT_EQ(elements(out.at("tail")), (std::vector<double>{2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(out.at("empty").type().dims, (Dims{0}));
}

TEST(Importer, SliceBeforeOpset10UsesAttributes) {
  OnnxModel m(9);
  m.input("x", {int64_t(4), int64_t(6)});
  auto& s = m.node("Slice", {"x"}, {"y"});
  attr(s, "starts", std::vector<int64_t>{1});
  attr(s, "ends", std::vector<int64_t>{-1});
  attr(s, "axes", std::vector<int64_t>{1});
  m.output("y");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{4, 4}));
}

TEST(Importer, MatMulWithVectors) {
  OnnxModel m;
  m.input("v", {int64_t(3)});
  m.input("a", {int64_t(2), int64_t(3), int64_t(4)});
  m.floats("w", {3, 4}, iota(12));
  m.floats("u", {4}, {1, 0, 0, 1});
  m.node("MatMul", {"v", "w"}, {"vw"});
  m.node("MatMul", {"a", "u"}, {"au"});
  m.output("vw");
  m.output("au");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{4}));
  EXPECT_EQ(f->outputs()[1].second.type().dims, (Dims{2, 3}));
  auto out = evaluate(*f, {{"v", f32({3}, {1, 2, 3})}, {"a", f32({2, 3, 4}, iota(24))}});
  // [1,2,3] x [[0..3],[4..7],[8..11]] = [32, 38, 44, 50]
  EXPECT_EQ(elements(out.at("vw")), (std::vector<double>{32, 38, 44, 50}));
  // Rows of a: first + last element.
  EXPECT_EQ(elements(out.at("au")), (std::vector<double>{3, 11, 19, 27, 35, 43}));
}

/// Plain NCHW convolution, the test's own oracle.
std::vector<float> naiveConv(const std::vector<float>& x, Dims xd, const std::vector<float>& w, Dims wd,
                             std::vector<float> bias, int64_t stride, int64_t pad, int64_t group,
                             Dims& outDims) {
  int64_t n = xd[0], c = xd[1], h = xd[2], wi = xd[3], o = wd[0], cg = wd[1], kh = wd[2], kw = wd[3];
  int64_t oh = (h + 2 * pad - kh) / stride + 1, ow = (wi + 2 * pad - kw) / stride + 1;
  outDims = {n, o, oh, ow};
  std::vector<float> y(size_t(n * o * oh * ow));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          float acc = bias[size_t(oc)];
          int64_t g = oc / (o / group);
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t r = 0; r < kh; ++r)
              for (int64_t s = 0; s < kw; ++s) {
                int64_t y0 = i * stride - pad + r, x0 = j * stride - pad + s;
                if (y0 < 0 || y0 >= h || x0 < 0 || x0 >= wi) continue;
                acc += x[size_t(((b * c + g * cg + ic) * h + y0) * wi + x0)] *
                       w[size_t(((oc * cg + ic) * kh + r) * kw + s)];
              }
          y[size_t(((b * o + oc) * oh + i) * ow + j)] = acc;
        }
  (void)c;
  return y;
}

TEST(Importer, ConvLayoutAndNumerics) {
  OnnxModel m;
  m.input("x", {int64_t(1), int64_t(4), int64_t(5), int64_t(5)});
  std::vector<float> w(6 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 7) - 3);
  m.floats("w", {6, 2, 3, 3}, w);
  m.floats("b", {6}, {1, 2, 3, 4, 5, 6});
  auto& conv = m.node("Conv", {"x", "w", "b"}, {"y"}, "conv1");
  attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  attr(conv, "strides", std::vector<int64_t>{2, 2});
  attr(conv, "group", int64_t(2));
  m.output("y");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(computeKinds(*f), (std::vector<OpKind>{OpKind::Transpose, OpKind::Conv, OpKind::Transpose}));
  for (Node* n : f->nodes()) {
    if (n->kind() != OpKind::Conv) continue;
    EXPECT_EQ(n->name(), "conv1");
    // The filter was transposed at import time to [O, KH, KW, C/g].
    EXPECT_TRUE(n->input(1).node->isConstant());
    EXPECT_EQ(n->input(1).type().dims, (Dims{6, 3, 3, 2}));
  }
  std::vector<float> x = iota(100, -50);
  for (float& v : x) v /= 10;
  Dims yd;
  std::vector<float> expected = naiveConv(x, {1, 4, 5, 5}, w, {6, 2, 3, 3}, {1, 2, 3, 4, 5, 6}, 2, 1, 2, yd);
  auto out = evaluate(*f, {{"x", f32({1, 4, 5, 5}, x)}});
  ASSERT_EQ(out.at("y").type().dims, yd);
  auto got = elements(out.at("y"));
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-4) << i;
}

TEST(Importer, ConvAutoPadAndNoBias) {
  OnnxModel m;
  m.input("x", {int64_t(1), int64_t(1), int64_t(5), int64_t(6)});
  m.floats("w", {2, 1, 3, 3}, std::vector<float>(18, 1.0f));
  auto& conv = m.node("Conv", {"x", "w"}, {"y"}, "c");
  attr(conv, "auto_pad", std::string("SAME_UPPER"));
  attr(conv, "strides", std::vector<int64_t>{2, 2});
  m.output("y");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{1, 2, 3, 3}));
  for (Node* n : f->nodes()) {
    if (n->kind() == OpKind::Conv) {
      EXPECT_EQ(n->attrs().getInts("pads"), (std::vector<int64_t>{1, 0, 1, 1}));
    }
  }
}

TEST(Importer, Conv1D3DAndRank6) {
  OnnxModel m;
  m.input("x", {int64_t(2), int64_t(3), int64_t(10)});
  m.floats("w", {4, 3, 3}, std::vector<float>(36, 0.5f));
  auto& conv = m.node("Conv", {"x", "w"}, {"y"}, "c");
  attr(conv, "dilations", std::vector<int64_t>{2});
  m.output("y");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{2, 4, 6}));

  // 3-D: one 2-D Conv per filter plane along D (tests/spatial3d checks the
  // numbers against PyTorch).
  OnnxModel m3;
  m3.input("x", {int64_t(1), int64_t(1), int64_t(4), int64_t(4), int64_t(4)});
  m3.floats("w", {1, 1, 2, 1, 1}, {1, 2});
  m3.node("Conv", {"x", "w"}, {"y"}, "c3");
  m3.output("y");
  Module module3;
  Function* f3 = importOk(m3, module3);
  ASSERT_TRUE(f3);
  EXPECT_EQ(f3->outputs()[0].second.type().dims, (Dims{1, 1, 3, 4, 4}));
  int convs = 0;
  for (Node* n : f3->nodes()) convs += n->kind() == OpKind::Conv;
  EXPECT_EQ(convs, 2);

  OnnxModel m6;
  m6.input("x", {int64_t(1), int64_t(1), int64_t(2), int64_t(2), int64_t(2), int64_t(2)});
  m6.floats("w", {1, 1, 1, 1, 1, 1}, {1});
  m6.node("Conv", {"x", "w"}, {"y"}, "c6");
  m6.output("y");
  EXPECT_EQ(importError(m6.bytes()),
            "model.onnx: node 'c6' (Conv, opset 13): input must have rank 3, 4 or 5, not 6");
}

TEST(Importer, ConvTransposeShapes) {
  OnnxModel m;
  m.input("x", {int64_t(1), int64_t(4), int64_t(3), int64_t(3)});
  m.floats("w", {4, 2, 3, 3}, std::vector<float>(72, 1.0f));
  auto& ct = m.node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  attr(ct, "strides", std::vector<int64_t>{2, 2});
  attr(ct, "pads", std::vector<int64_t>{1, 1, 1, 1});
  attr(ct, "output_padding", std::vector<int64_t>{1, 1});
  m.output("y");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{1, 2, 6, 6}));
  for (Node* n : f->nodes()) {
    if (n->kind() == OpKind::ConvTranspose) {
      EXPECT_EQ(n->input(1).type().dims, (Dims{4, 3, 3, 2}));
    }
  }
}

TEST(Importer, PoolsAndGlobalPools) {
  OnnxModel m(12);
  m.input("x", {int64_t(1), int64_t(2), int64_t(5), int64_t(5)});
  auto& mp = m.node("MaxPool", {"x"}, {"mp"}, "mp");
  attr(mp, "kernel_shape", std::vector<int64_t>{2, 2});
  attr(mp, "strides", std::vector<int64_t>{2, 2});
  attr(mp, "ceil_mode", int64_t(1));
  auto& ap = m.node("AveragePool", {"x"}, {"ap"}, "ap");
  attr(ap, "kernel_shape", std::vector<int64_t>{3, 3});
  attr(ap, "pads", std::vector<int64_t>{1, 1, 1, 1});
  attr(ap, "count_include_pad", int64_t(1));
  m.node("GlobalAveragePool", {"x"}, {"gap"});
  m.output("mp");
  m.output("ap");
  m.output("gap");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{1, 2, 3, 3}));
  EXPECT_EQ(f->outputs()[1].second.type().dims, (Dims{1, 2, 5, 5}));
  EXPECT_EQ(f->outputs()[2].second.type().dims, (Dims{1, 2, 1, 1}));
  EXPECT_EQ(f->outputs()[2].second.node->kind(), OpKind::ReduceMean);
}

TEST(Importer, BatchNormRunsChannelLast) {
  OnnxModel m;
  m.input("x", {int64_t(1), int64_t(3), int64_t(2), int64_t(2)});
  for (const char* name : {"s", "b", "mean", "var"}) m.floats(name, {3}, {1, 1, 1});
  m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y"}, "bn");
  m.output("y");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(computeKinds(*f), (std::vector<OpKind>{OpKind::Transpose, OpKind::BatchNorm, OpKind::Transpose}));
  for (Node* n : f->nodes()) {
    if (n->kind() == OpKind::BatchNorm) {
      EXPECT_EQ(n->attrs().getInt("axis"), 3);
    }
  }
}

TEST(Importer, SoftmaxBeforeOpset13CoercesTo2D) {
  OnnxModel m(11);
  m.input("x", {int64_t(2), int64_t(3), int64_t(4)});
  m.node("Softmax", {"x"}, {"y"}, "sm");
  m.output("y");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(computeKinds(*f), (std::vector<OpKind>{OpKind::Reshape, OpKind::Softmax, OpKind::Reshape}));
  for (Node* n : f->nodes()) {
    if (n->kind() == OpKind::Softmax) {
      EXPECT_EQ(n->input(0).type().dims, (Dims{2, 12}));
    }
  }

  OnnxModel m13(13);
  m13.input("x", {int64_t(2), int64_t(3), int64_t(4)});
  m13.node("Softmax", {"x"}, {"y"}, "sm");
  m13.output("y");
  Module module13;
  f = importOk(m13, module13);
  ASSERT_TRUE(f);
  EXPECT_EQ(computeKinds(*f), std::vector<OpKind>{OpKind::Softmax});
  EXPECT_EQ(f->outputs()[0].second.node->attrs().getInt("axis"), 2);
}

TEST(Importer, ClipAcrossOpsets) {
  OnnxModel m7(7);
  m7.input("x", {int64_t(4)});
  auto& c = m7.node("Clip", {"x"}, {"y"});
  attr(c, "min", 0.0f);
  attr(c, "max", 6.0f);
  m7.output("y");
  Module module;
  Function* f = importOk(m7, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.node->kind(), OpKind::Clip);
  EXPECT_EQ(f->outputs()[0].second.node->attrs().getFloat("max"), 6.0);

  OnnxModel m11(11);
  m11.input("x", {int64_t(4)});
  m11.floats("lo", {}, {-1});
  m11.node("Clip", {"x", "lo", ""}, {"y"});
  m11.output("y");
  Module module11;
  f = importOk(m11, module11);
  ASSERT_TRUE(f);
  auto out = evaluate(*f, {{"x", f32({4}, {-3, -0.5, 2, 100})}});
  EXPECT_EQ(elements(out.at("y")), (std::vector<double>{-1, -0.5, 2, 100}));
}

TEST(Importer, ReductionsAxesAttributeAndInput) {
  OnnxModel m(13);
  m.input("x", {int64_t(2), int64_t(3), int64_t(4)});
  m.ints("axes", {1}, {-1});
  m.node("ReduceSum", {"x", "axes"}, {"sum"});
  auto& mean = m.node("ReduceMean", {"x"}, {"mean"});
  attr(mean, "axes", std::vector<int64_t>{0, 1});
  attr(mean, "keepdims", int64_t(0));
  m.node("ReduceMax", {"x"}, {"all"});
  m.output("sum");
  m.output("mean");
  m.output("all");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{2, 3, 1}));
  EXPECT_EQ(f->outputs()[1].second.type().dims, (Dims{4}));
  EXPECT_EQ(f->outputs()[2].second.type().dims, (Dims{1, 1, 1}));
}

TEST(Importer, SplitVariants) {
  OnnxModel m(13);
  m.input("x", {int64_t(6), int64_t(2)});
  m.ints("sizes", {2}, {2, 4});
  m.node("Split", {"x", "sizes"}, {"a", "b"});
  m.node("Split", {"x"}, {"c", "d", "e"});
  m.output("a");
  m.output("b");
  m.output("e");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{2, 2}));
  EXPECT_EQ(f->outputs()[1].second.type().dims, (Dims{4, 2}));
  auto out = evaluate(*f, {{"x", f32({6, 2}, iota(12))}});
  EXPECT_EQ(elements(out.at("e")), (std::vector<double>{8, 9, 10, 11}));

  OnnxModel m11(11);
  m11.input("x", {int64_t(5)});
  auto& s = m11.node("Split", {"x"}, {"a", "b"});
  attr(s, "split", std::vector<int64_t>{1, 4});
  m11.output("b");
  Module module11;
  f = importOk(m11, module11);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{4}));
}

TEST(Importer, TopKBeforeAndAfterOpset10) {
  OnnxModel m9(9);
  m9.input("x", {int64_t(2), int64_t(5)});
  auto& t = m9.node("TopK", {"x"}, {"v", "i"});
  attr(t, "k", int64_t(2));
  m9.output("v");
  m9.output("i");
  Module module;
  Function* f = importOk(m9, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[1].second.type(), Type(ElemKind::I64, {2, 2}));

  OnnxModel m11(11);
  m11.input("x", {int64_t(2), int64_t(5)});
  m11.ints("k", {1}, {3});
  m11.node("TopK", {"x", "k"}, {"v", "i"});
  m11.output("v");
  Module module11;
  f = importOk(m11, module11);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{2, 3}));
}

TEST(Importer, SqueezeUnsqueezeFlattenGemm) {
  OnnxModel m(13);
  m.input("x", {int64_t(1), int64_t(3), int64_t(1), int64_t(2)});
  m.node("Squeeze", {"x"}, {"sq"});
  m.ints("ax", {2}, {0, -1});
  m.node("Unsqueeze", {"sq", "ax"}, {"unsq"});
  m.node("Flatten", {"x"}, {"flat"});
  m.floats("w", {4, 6}, iota(24));
  auto& g = m.node("Gemm", {"flat", "w"}, {"gemm"});
  attr(g, "transB", int64_t(1));
  m.output("sq");
  m.output("unsq");
  m.output("flat");
  m.output("gemm");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{3, 2}));
  EXPECT_EQ(f->outputs()[1].second.type().dims, (Dims{1, 3, 2, 1}));
  EXPECT_EQ(f->outputs()[2].second.type().dims, (Dims{1, 6}));
  EXPECT_EQ(f->outputs()[3].second.type().dims, (Dims{1, 4}));
  EXPECT_EQ(f->outputs()[3].second.node->kind(), OpKind::Gemm);
}

TEST(Importer, ResizeFromScalesAndSizes) {
  OnnxModel m(13);
  m.input("x", {int64_t(1), int64_t(2), int64_t(3), int64_t(4)});
  m.floats("scales", {4}, {1, 1, 2, 2});
  auto& r = m.node("Resize", {"x", "", "scales"}, {"up"});
  attr(r, "mode", std::string("nearest"));
  m.ints("sizes", {4}, {1, 2, 5, 7});
  auto& r2 = m.node("Resize", {"x", "", "", "sizes"}, {"sized"});
  attr(r2, "mode", std::string("linear"));
  attr(r2, "coordinate_transformation_mode", std::string("align_corners"));
  m.output("up");
  m.output("sized");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outputs()[0].second.type().dims, (Dims{1, 2, 6, 8}));
  EXPECT_EQ(f->outputs()[1].second.type().dims, (Dims{1, 2, 5, 7}));

  OnnxModel cubic(13);
  cubic.input("x", {int64_t(1), int64_t(1), int64_t(2), int64_t(2)});
  cubic.floats("scales", {4}, {1, 1, 2, 2});
  auto& rc = cubic.node("Resize", {"x", "", "scales"}, {"y"}, "rc");
  attr(rc, "mode", std::string("cubic"));
  attr(rc, "coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  cubic.output("y");
  EXPECT_EQ(importError(cubic.bytes()),
            "model.onnx: node 'rc' (Resize, opset 13): tf_crop_and_resize needs the roi input");
}

TEST(Importer, CumSumAllFourModes) {
  // ONNX's CumSum examples: x = [1, 2, 3, 4, 5] along axis 0.
  const std::vector<std::pair<std::pair<int64_t, int64_t>, std::vector<double>>> modes = {
      {{0, 0}, {1, 3, 6, 10, 15}},
      {{1, 0}, {0, 1, 3, 6, 10}},
      {{0, 1}, {15, 14, 12, 9, 5}},
      {{1, 1}, {14, 12, 9, 5, 0}},
  };
  for (const auto& [flags, expected] : modes) {
    OnnxModel m;
    m.input("x", {int64_t(5)});
    m.ints("axis", {}, {0});
    auto& n = m.node("CumSum", {"x", "axis"}, {"y"}, "c");
    attr(n, "exclusive", flags.first);
    attr(n, "reverse", flags.second);
    m.output("y");
    Module module;
    Function* f = importOk(m, module);
    ASSERT_NE(f, nullptr);
    auto out = evaluate(*f, {{"x", f32({5}, {1, 2, 3, 4, 5})}});
    EXPECT_EQ(elements(out.at("y")), expected) << "exclusive " << flags.first << " reverse " << flags.second;
  }
}

TEST(Importer, DftMatchesTheDefinition) {
  // Complex input [1, 6, 2], inverse=0, onesided=1, dft_length=8 (zero padding).
  OnnxModel m(17);
  m.input("x", {int64_t(1), int64_t(6), int64_t(2)});
  m.ints("len", {}, {8});
  auto& n = m.node("DFT", {"x", "len"}, {"y"}, "dft");
  attr(n, "onesided", int64_t(1));
  m.output("y");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_NE(f, nullptr);
  std::vector<float> x = {1, 0, 2, -1, 0.5f, 3, -2, 1, 0, 0, 4, -0.5f};
  auto out = evaluate(*f, {{"x", f32({1, 6, 2}, x)}});
  ASSERT_EQ(out.at("y").type().dims, (Dims{1, 5, 2}));
  std::vector<double> got = elements(out.at("y"));
  for (int k = 0; k < 5; ++k) {
    double re = 0, im = 0;
    for (int t = 0; t < 6; ++t) {
      const double angle = -2 * M_PI * k * t / 8;
      re += x[size_t(2 * t)] * std::cos(angle) - x[size_t(2 * t + 1)] * std::sin(angle);
      im += x[size_t(2 * t)] * std::sin(angle) + x[size_t(2 * t + 1)] * std::cos(angle);
    }
    EXPECT_NEAR(got[size_t(2 * k)], re, 1e-5) << "k " << k;
    EXPECT_NEAR(got[size_t(2 * k + 1)], im, 1e-5) << "k " << k;
  }
}

TEST(Importer, ConstantsAndIntegerShapeOps) {
  OnnxModel m(13);
  m.input("x", {int64_t(2), int64_t(3)});
  auto& c = m.node("Constant", {}, {"two"});
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_float_data(2.0f);
  m.node("Mul", {"x", "two"}, {"y"});
  m.ints("shape", {2}, {2, 2});
  m.node("ConstantOfShape", {"shape"}, {"zeros"});
  m.ints("start", {}, {0});
  m.ints("limit", {}, {5});
  m.ints("delta", {}, {2});
  m.node("Range", {"start", "limit", "delta"}, {"range"});
  m.output("y");
  m.output("zeros");
  m.output("range");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  auto out = evaluate(*f, {{"x", f32({2, 3}, iota(6))}});
  EXPECT_EQ(elements(out.at("y")), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(out.at("zeros").type(), Type(ElemKind::F32, {2, 2}));
  EXPECT_EQ(elements(out.at("range")), (std::vector<double>{0, 2, 4}));
}

TEST(Importer, VariadicAndComposedOps) {
  OnnxModel m(13);
  m.input("a", {int64_t(3)});
  m.input("b", {int64_t(3)});
  m.input("c", {int64_t(3)});
  m.node("Mean", {"a", "b", "c"}, {"mean"});
  m.node("Max", {"a", "b", "c"}, {"max"});
  m.node("Softsign", {"a"}, {"softsign"});
  m.node("GreaterOrEqual", {"a", "b"}, {"ge"});
  m.node("Where", {"ge", "a", "b"}, {"where"});
  // Two different scalar constants in one op (a regression: they once aliased).
  m.node("ThresholdedRelu", {"a"}, {"thresholded"});
  m.output("thresholded");
  m.output("mean");
  m.output("max");
  m.output("softsign");
  m.output("where");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  auto out =
      evaluate(*f, {{"a", f32({3}, {1, 5, -3})}, {"b", f32({3}, {2, 2, 0})}, {"c", f32({3}, {3, 2, 0})}});
  EXPECT_EQ(elements(out.at("mean")), (std::vector<double>{2, 3, -1}));
  EXPECT_EQ(elements(out.at("max")), (std::vector<double>{3, 5, 0}));
  EXPECT_NEAR(elements(out.at("softsign"))[1], 5.0 / 6.0, 1e-6);
  EXPECT_EQ(elements(out.at("where")), (std::vector<double>{2, 5, 0}));
  EXPECT_EQ(elements(out.at("thresholded")), (std::vector<double>{0, 5, 0}));
}

TEST(Importer, PadExpandTileConcatFold) {
  OnnxModel m(13);
  m.floats("c", {2}, {1, 2});
  m.ints("pads", {2}, {1, 2});
  m.node("Pad", {"c", "pads"}, {"padded"});
  m.ints("shape", {2}, {2, 2});
  m.node("Expand", {"c", "shape"}, {"expanded"});
  m.ints("reps", {1}, {2});
  m.node("Tile", {"c", "reps"}, {"tiled"});
  m.output("padded");
  m.output("expanded");
  m.output("tiled");
  Module module;
  Function* f = importOk(m, module);
  ASSERT_TRUE(f);
  EXPECT_TRUE(computeKinds(*f).empty());  // all folded
  auto out = evaluate(*f, {});
  EXPECT_EQ(elements(out.at("padded")), (std::vector<double>{0, 1, 2, 0, 0}));
  EXPECT_EQ(elements(out.at("expanded")), (std::vector<double>{1, 2, 1, 2}));
  EXPECT_EQ(elements(out.at("tiled")), (std::vector<double>{1, 2, 1, 2}));
}

TEST(Importer, ExternalDataNextToModel) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ember_importer_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<float> weights = {1, 2, 3, 4};
  {
    std::ofstream data(dir / "weights.bin", std::ios::binary);
    data.write("pad!", 4);
    data.write(reinterpret_cast<const char*>(weights.data()),
               std::streamsize(weights.size() * sizeof(float)));
  }
  auto makeModel = [&](const std::string& location) {
    OnnxModel m;
    m.input("x", {int64_t(4)});
    auto& w = m.floats("w", {4}, {});
    w.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = w.add_external_data();
    entry->set_key("location");
    entry->set_value(location);
    entry = w.add_external_data();
    entry->set_key("offset");
    entry->set_value("4");
    m.node("Add", {"x", "w"}, {"y"});
    m.output("y");
    return m;
  };
  {
    std::ofstream model(dir / "model.onnx", std::ios::binary);
    model << makeModel("weights.bin").bytes();
  }
  Module module;
  auto f = importOnnxFile((dir / "model.onnx").string(), module);
  ASSERT_TRUE(f.hasValue()) << f.error().message();
  auto out = evaluate(**f, {{"x", f32({4}, {0, 0, 0, 0})}});
  EXPECT_EQ(elements(out.at("y")), (std::vector<double>{1, 2, 3, 4}));

  {
    std::ofstream model(dir / "escape.onnx", std::ios::binary);
    model << makeModel("../weights.bin").bytes();
  }
  Module module2;
  auto bad = importOnnxFile((dir / "escape.onnx").string(), module2);
  ASSERT_FALSE(bad.hasValue());
  EXPECT_NE(bad.error().message().find("must not contain '..'"), std::string::npos);
  // From bytes there is no directory to read external data from.
  EXPECT_NE(importError(makeModel("weights.bin").bytes()).find("initializer 'w'"), std::string::npos);
  fs::remove_all(dir);

  Module module3;
  auto missing = importOnnxFile((dir / "missing.onnx").string(), module3);
  ASSERT_FALSE(missing.hasValue());
  EXPECT_NE(missing.error().message().find("cannot open file"), std::string::npos);
}

}  // namespace
}  // namespace ember
