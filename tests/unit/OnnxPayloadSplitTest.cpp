// Tests of cutting initializer payloads out of a serialized model before
// protobuf parses it (core/importer/OnnxPayloadSplit.h): the parsed structure
// plus the cut payloads must equal what protobuf reads from the original
// bytes, including protobuf's merge rules for repeated occurrences.

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <numeric>
#include <random>

#include "OnnxPayloadSplit.h"
#include "ember/Importer.h"
#include "tests/common/OnnxModel.h"

namespace ember::onnx_import {
namespace {

constexpr size_t kMinBytes = 4096;

onnx::TensorProto rawTensor(const std::string& name, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(int64_t(values.size()));
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

std::vector<float> ramp(size_t n, float start) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

/// A model whose graph `y = x + w0 + w1 + w2` has one large, one small and
/// one float_data initializer.
onnx::ModelProto addModel(size_t n) {
  test::OnnxModel m;
  m.input("x", {int64_t(n)});
  m.rawFloats("w0", {int64_t(n)}, ramp(n, 1.0f));
  m.floats("w1", {}, {0.25f});  // a 1-element float_data tensor
  m.rawFloats("w2", {}, {7.0f});
  std::string previous = "x";
  for (const char* w : {"w0", "w1", "w2"}) {
    const std::string sum = std::string("s_") + w;
    m.node("Add", {previous, w}, {sum});
    previous = sum;
  }
  m.output(previous);
  return m.model();
}

/// Restores the cut payloads into the parsed structure.
onnx::ModelProto reassemble(const SplitModel& split) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(split.structure));
  EXPECT_EQ(split.payloads.size(), size_t(model.graph().initializer_size()));
  for (size_t i = 0; i < split.payloads.size() && int(i) < model.graph().initializer_size(); ++i)
    if (split.payloads[i]) {
      EXPECT_TRUE(model.graph().initializer(int(i)).raw_data().empty());
      model.mutable_graph()->mutable_initializer(int(i))->set_raw_data(std::string(*split.payloads[i]));
    }
  return model;
}

void expectSameAsProtobuf(const std::string& bytes) {
  onnx::ModelProto expected;
  ASSERT_TRUE(expected.ParseFromString(bytes));
  auto split = splitInitializerPayloads(bytes, kMinBytes);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(reassemble(*split).SerializeAsString(), expected.SerializeAsString());
}

TEST(OnnxPayloadSplit, CutsOnlyLargePayloadsAndKeepsTheRest) {
  const std::string bytes = addModel(2048).SerializeAsString();
  auto split = splitInitializerPayloads(bytes, kMinBytes);
  ASSERT_TRUE(split.has_value());
  ASSERT_EQ(split->payloads.size(), 3u);
  ASSERT_TRUE(split->payloads[0].has_value());
  EXPECT_EQ(split->payloads[0]->size(), 2048 * sizeof(float));
  // The view points into the original bytes: nothing was copied.
  EXPECT_GE(split->payloads[0]->data(), bytes.data());
  EXPECT_LE(split->payloads[0]->data() + split->payloads[0]->size(), bytes.data() + bytes.size());
  EXPECT_FALSE(split->payloads[1].has_value());
  EXPECT_FALSE(split->payloads[2].has_value());
  EXPECT_LT(split->structure.size(), bytes.size() - 2048 * sizeof(float) + 64);
  expectSameAsProtobuf(bytes);
}

/// A length-delimited field, encoded by hand so that repeated occurrences
/// stay in the bytes (protobuf's serializer would merge them).
std::string lengthDelimited(int field, const std::string& payload) {
  std::string out(1, char((field << 3) | 2));
  for (uint64_t v = payload.size();; v >>= 7) {
    out.push_back(char((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
    if (v < 0x80) break;
  }
  return out + payload;
}

TEST(OnnxPayloadSplit, FollowsProtobufMergeRules) {
  // A repeated raw_data keeps its last value, large or small.
  const std::string large = rawTensor("w", ramp(2048, 0.0f)).SerializeAsString();
  const std::string small = rawTensor("w", {1.0f, 2.0f}).SerializeAsString();
  for (bool largeLast : {false, true}) {
    const std::string tensor = largeLast ? small + large : large + small;
    const std::string bytes = lengthDelimited(7, lengthDelimited(5, tensor));
    expectSameAsProtobuf(bytes);
    auto split = splitInitializerPayloads(bytes, kMinBytes);
    ASSERT_TRUE(split.has_value());
    ASSERT_EQ(split->payloads.size(), 1u);
    EXPECT_EQ(split->payloads[0].has_value(), largeLast);
  }
  // Two whole models concatenated: two graph fields, whose initializers append.
  const std::string both = addModel(2048).SerializeAsString() + addModel(1500).SerializeAsString();
  expectSameAsProtobuf(both);
  auto split = splitInitializerPayloads(both, kMinBytes);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->payloads.size(), 6u);
}

TEST(OnnxPayloadSplit, RefusesMalformedBytesWithoutReadingPastThem) {
  const std::string bytes = addModel(2048).SerializeAsString();
  // Every truncation either splits consistently with protobuf or is refused.
  for (size_t cut = 0; cut < bytes.size(); cut += 97) {
    const std::string truncated = bytes.substr(0, cut);
    auto split = splitInitializerPayloads(truncated, kMinBytes);
    onnx::ModelProto parsed;
    if (split) {
      ASSERT_TRUE(parsed.ParseFromString(truncated)) << "split accepted bytes protobuf refuses, cut " << cut;
      EXPECT_EQ(reassemble(*split).SerializeAsString(), parsed.SerializeAsString());
    }
  }
  // Random flips of single bytes: no crash, and an accepted split matches protobuf.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string mutated = bytes;
    mutated[rng() % mutated.size()] = char(rng());
    auto split = splitInitializerPayloads(mutated, kMinBytes);
    onnx::ModelProto parsed;
    if (split && parsed.ParseFromString(mutated))
      EXPECT_EQ(reassemble(*split).SerializeAsString(), parsed.SerializeAsString()) << "trial " << trial;
  }
}

TEST(OnnxPayloadSplit, ImportReadsCutPayloadsAsProtobufWould) {
  // The same weights as raw_data (cut) and as float_data (parsed): equal constants.
  const size_t n = 3000;
  onnx::ModelProto rawModel = addModel(n);
  onnx::ModelProto typedModel = rawModel;
  auto* typed = typedModel.mutable_graph()->mutable_initializer(0);
  typed->clear_raw_data();
  for (float v : ramp(n, 1.0f)) typed->add_float_data(v);
  auto constantOf = [](const onnx::ModelProto& model, Module& module) -> const Tensor* {
    auto f = importOnnxBytes(model.SerializeAsString(), "m.onnx", module);
    EXPECT_TRUE(f.hasValue()) << (f.hasValue() ? "" : f.error().message());
    if (!f.hasValue()) return nullptr;
    for (Node* node : (*f)->nodes())
      if (node->kind() == OpKind::Constant && node->payload().type().numElements() == int64_t(n))
        return &node->payload();
    return nullptr;
  };
  Module rawModule, typedModule;
  const Tensor* fromRaw = constantOf(rawModel, rawModule);
  const Tensor* fromTyped = constantOf(typedModel, typedModule);
  ASSERT_NE(fromRaw, nullptr);
  ASSERT_NE(fromTyped, nullptr);
  EXPECT_TRUE(fromRaw->bitwiseEqual(*fromTyped));

  // A cut payload of the wrong size is reported as before.
  rawModel.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(n * sizeof(float) - 2);
  Module bad;
  auto f = importOnnxBytes(rawModel.SerializeAsString(), "m.onnx", bad);
  ASSERT_FALSE(f.hasValue());
  EXPECT_NE(f.error().message().find("initializer 'w0': raw_data has 11998 bytes"), std::string::npos)
      << f.error().message();
}

}  // namespace
}  // namespace ember::onnx_import
