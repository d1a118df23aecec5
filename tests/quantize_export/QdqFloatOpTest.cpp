// `ember quantize --emit-onnx` on a model with an op that has no integer form
// in Ember (Mul of two tensors, docs/quantization.md 2.12): the op stays float
// between DequantizeLinear and QuantizeLinear, as Ember runs it. Also the
// --profile route and the one-line error for an output path that cannot be
// written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>

#include "QdqTestSupport.h"
#include "ember/Npy.h"

namespace {

using namespace qdq_test;

void addInitializer(onnx::GraphProto& g, const std::string& name, std::vector<int64_t> dims,
                    std::mt19937& rng) {
  onnx::TensorProto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) t->add_dims(d), n *= d;
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (int64_t i = 0; i < n; ++i) t->add_float_data(normal(rng));
}

void addValueInfo(onnx::ValueInfoProto* v, const std::string& name) {
  v->set_name(name);
  auto* type = v->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1, 4, 8, 8}) type->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* addNode(onnx::GraphProto& g, const std::string& op, const std::string& name,
                         std::vector<std::string> inputs, const std::string& output) {
  onnx::NodeProto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& in : inputs) n->add_input(in);
  n->add_output(output);
  return n;
}

/// conv1 -> square (Mul(a, a)) -> conv2: a model whose middle op stays float.
void writeModel(const fs::path& path) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("square_between_convs");
  std::mt19937 rng(7);
  addInitializer(g, "w1", {4, 4, 3, 3}, rng);
  addInitializer(g, "b1", {4}, rng);
  addInitializer(g, "w2", {4, 4, 3, 3}, rng);
  addInitializer(g, "b2", {4}, rng);
  for (auto [name, in, w, b, out] : {std::array<const char*, 5>{"conv1", "x", "w1", "b1", "a"},
                                     std::array<const char*, 5>{"conv2", "s", "w2", "b2", "y"}}) {
    onnx::NodeProto* conv = addNode(g, "Conv", name, {in, w, b}, out);
    onnx::AttributeProto* pads = conv->add_attribute();
    pads->set_name("pads");
    pads->set_type(onnx::AttributeProto::INTS);
    for (int i = 0; i < 4; ++i) pads->add_ints(1);
    if (std::string(name) == "conv1") addNode(g, "Mul", "square", {"a", "a"}, "s");
  }
  addValueInfo(g.add_input(), "x");
  addValueInfo(g.add_output(), "y");
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
}

/// conv -> BatchNormalization: Ember's optimizer folds the BatchNorm into the
/// conv's weights, which the ONNX graph (conv, then BatchNorm) cannot carry.
void writeConvBatchNorm(const fs::path& path) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("conv_batchnorm");
  std::mt19937 rng(3);
  addInitializer(g, "w", {4, 4, 3, 3}, rng);
  addInitializer(g, "b", {4}, rng);
  addInitializer(g, "beta", {4}, rng);
  addInitializer(g, "mean", {4}, rng);
  for (const char* name : {"gamma", "var"}) {
    onnx::TensorProto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(4);
    for (float v : {1.5f, 0.5f, 2.0f, 1.0f}) t->add_float_data(v);
  }
  onnx::NodeProto* conv = addNode(g, "Conv", "conv", {"x", "w", "b"}, "c");
  onnx::AttributeProto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  addNode(g, "BatchNormalization", "bn", {"c", "gamma", "beta", "mean", "var"}, "y");
  addValueInfo(g.add_input(), "x");
  addValueInfo(g.add_output(), "y");
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
}

class QdqFloatOp : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_qdq_float_op_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    writeModel(dir_ / "model.onnx");
    // 8 calibration samples and a separate test input, standard normal.
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    Tensor samples(Type(ElemKind::F32, {8, 4, 8, 8}));
    for (int64_t i = 0; i < samples.type().numElements(); ++i) samples.as<float>()[i] = normal(rng);
    ASSERT_FALSE(writeNpy((dir_ / "calibration.npy").string(), samples));
    input_ = Tensor(Type(ElemKind::F32, {1, 4, 8, 8}));
    for (int64_t i = 0; i < input_.type().numElements(); ++i) input_.as<float>()[i] = normal(rng);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& file) const { return "'" + (dir_ / file).string() + "'"; }

  fs::path dir_;
  Tensor input_;
};

TEST_F(QdqFloatOp, TheOpWithoutIntegerFormStaysFloatBetweenDequantizeAndQuantize) {
  ToolResult r = runTool(dir_, "quantize " + path("model.onnx") + " --calibrate " + path("calibration.npy") +
                                   " -o " + path("profile.yaml") + " --emit-onnx " + path("q.onnx"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1 float node: square (Mul)"), std::string::npos) << r.out;

  onnx::ModelProto model = loadOnnx(dir_ / "q.onnx");
  const onnx::GraphProto& g = model.graph();
  auto producer = producers(g);
  const onnx::NodeProto* square = nullptr;
  for (const auto& n : g.node())
    if (n.op_type() == "Mul") square = &n;
  ASSERT_NE(square, nullptr);
  // Both operands come through DequantizeLinear (Ember dequantizes conv1's
  // int8 output for it), and its output is quantized for conv2.
  for (const std::string& in : square->input()) {
    ASSERT_TRUE(producer.count(in));
    EXPECT_EQ(producer[in]->op_type(), "DequantizeLinear");
  }
  int quantizedSquare = 0;
  for (const auto& n : g.node())
    quantizedSquare += n.op_type() == "QuantizeLinear" && n.input(0) == square->output(0);
  EXPECT_EQ(quantizedSquare, 1);

  // Ember runs the emitted model in f32 close to its int8 run of the original
  // (roundings differ only where ONNX's format defines them, see
  // QdqResnetTest: ties to even and float accumulation).
  Expected<QuantizationProfile> profile = QuantizationProfile::load((dir_ / "profile.yaml").string());
  ASSERT_TRUE(profile) << profile.error().message();
  Expected<Tensor> int8 = runEmber((dir_ / "model.onnx").string(), input_, &*profile);
  ASSERT_TRUE(int8) << int8.error().message();
  Expected<Tensor> viaQdq = runEmber((dir_ / "q.onnx").string(), input_, nullptr);
  ASSERT_TRUE(viaQdq) << viaQdq.error().message();
  double db = sqnr(values(*int8), values(*viaQdq));
  std::printf("QDQ model in Ember f32 vs Ember int8: SQNR %.1f dB\n", db);
  EXPECT_GE(db, 40.0);
}

TEST_F(QdqFloatOp, AProfileGivesTheSameModelAsCalibratingInOneGo) {
  ASSERT_EQ(runTool(dir_, "quantize " + path("model.onnx") + " --calibrate " + path("calibration.npy") +
                              " -o " + path("profile.yaml") + " --emit-onnx " + path("q1.onnx"))
                .status,
            0);
  ToolResult r = runTool(dir_, "quantize " + path("model.onnx") + " --profile " + path("profile.yaml") +
                                   " --emit-onnx " + path("q2.onnx") + " --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(readFile(dir_ / "q1.onnx"), readFile(dir_ / "q2.onnx"));
}

TEST_F(QdqFloatOp, AnOutputPathThatCannotBeWrittenIsAOneLineError) {
  const std::string bad = (dir_ / "no-such-dir" / "q.onnx").string();
  ToolResult r = runTool(dir_, "quantize " + path("model.onnx") + " --calibrate " + path("calibration.npy") +
                                   " --emit-onnx '" + bad + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(bad));
}

TEST_F(QdqFloatOp, AProfileOfAnotherModelIsRefused) {
  ToolResult r = runTool(dir_, "quantize '" + kModels + "/resnet18.onnx' --calibrate '" + kModels +
                                   "/resnet18.input.npy' -o " + path("resnet18.yaml") + " --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  r = runTool(dir_, "quantize " + path("model.onnx") + " --profile " + path("resnet18.yaml") +
                        " --emit-onnx " + path("q.onnx"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "q.onnx"));
}

TEST_F(QdqFloatOp, WeightsTheOptimizerChangedAreAOneLineErrorNamingTheNode) {
  writeConvBatchNorm(dir_ / "conv_bn.onnx");
  ToolResult r = runTool(dir_, "quantize " + path("conv_bn.onnx") + " --calibrate " +
                                   path("calibration.npy") + " --emit-onnx " + path("q.onnx"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("node 'conv' (Conv)"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "q.onnx"));
}

// The exported biases are per-channel int32 DequantizeLinear; ONNX lets the
// zero point be left out (0), which Ember's kernel once read as a per-channel
// vector past its one element. y = x + (q - 0) * s[c], computed here by the
// definition.
TEST(QdqDequantize, PerAxisInt32WithoutZeroPointIsQTimesScale) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("per_axis_dequantize");
  const std::vector<int32_t> q = {-989, 12724, -16449, -14038, 7, 0, 2147483, -2448};
  std::vector<float> scales;
  onnx::TensorProto* values = g.add_initializer();
  values->set_name("q");
  values->set_data_type(onnx::TensorProto::INT32);
  values->add_dims(int64_t(q.size()));
  onnx::TensorProto* scale = g.add_initializer();
  scale->set_name("s");
  scale->set_data_type(onnx::TensorProto::FLOAT);
  scale->add_dims(int64_t(q.size()));
  for (size_t i = 0; i < q.size(); ++i) {
    values->add_int32_data(q[i]);
    scales.push_back(1e-5f * float(i + 1));
    scale->add_float_data(scales.back());
  }
  onnx::NodeProto* dq = addNode(g, "DequantizeLinear", "dq", {"q", "s"}, "b");
  onnx::AttributeProto* axis = dq->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  addNode(g, "Add", "add", {"x", "b"}, "y");
  for (auto* v : {g.add_input(), g.add_output()}) {
    v->set_name(v == &g.input(0) ? "x" : "y");
    auto* type = v->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    type->mutable_shape()->add_dim()->set_dim_value(int64_t(q.size()));
  }
  fs::path file =
      fs::temp_directory_path() / ("ember_qdq_dequantize_" + std::to_string(::getpid()) + ".onnx");
  std::ofstream(file, std::ios::binary) << model.SerializeAsString();
  Tensor x(Type(ElemKind::F32, {int64_t(q.size())}));
  for (size_t i = 0; i < q.size(); ++i) x.as<float>()[i] = float(i);
  Expected<Tensor> y = runEmber(file.string(), x, nullptr);
  fs::remove(file);
  ASSERT_TRUE(y) << y.error().message();
  for (size_t i = 0; i < q.size(); ++i) EXPECT_EQ(y->as<float>()[i], float(i) + float(q[i]) * scales[i]) << i;
}

}  // namespace
