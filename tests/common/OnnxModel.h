// Builds small one-graph ONNX models with the protobuf API, for the tests of
// the importer and of the tools that read ONNX files. One builder, so that a
// test states its graph and not the protobuf boilerplate around it.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

namespace ember::test {

/// A dimension: a fixed size or a symbolic name (dim_param).
using OnnxDim = std::variant<int64_t, std::string>;

class OnnxModel {
 public:
  explicit OnnxModel(int64_t opset = 13, const std::string& graphName = "g", int64_t irVersion = 8) {
    model_.set_ir_version(irVersion);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    graph_ = model_.mutable_graph();
    graph_->set_name(graphName);
  }

  /// A typed graph input.
  onnx::ValueInfoProto& input(const std::string& name, const std::vector<OnnxDim>& dims,
                              int32_t type = onnx::TensorProto::FLOAT) {
    return typed(*graph_->add_input(), name, dims, type);
  }
  /// A graph output the importer types itself.
  onnx::ValueInfoProto& output(const std::string& name) {
    auto* out = graph_->add_output();
    out->set_name(name);
    return *out;
  }
  /// A typed graph output.
  onnx::ValueInfoProto& output(const std::string& name, const std::vector<OnnxDim>& dims,
                               int32_t type = onnx::TensorProto::FLOAT) {
    return typed(*graph_->add_output(), name, dims, type);
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = graph_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  /// An initializer with no data yet, for the test to fill.
  onnx::TensorProto& initializer(const std::string& name, const std::vector<int64_t>& dims, int32_t type) {
    auto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    return *t;
  }
  /// Initializers: values in the typed repeated fields, or in raw_data.
  onnx::TensorProto& floats(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<float>& values) {
    onnx::TensorProto& t = initializer(name, dims, onnx::TensorProto::FLOAT);
    for (float v : values) t.add_float_data(v);
    return t;
  }
  onnx::TensorProto& ints(const std::string& name, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& values) {
    onnx::TensorProto& t = initializer(name, dims, onnx::TensorProto::INT64);
    for (int64_t v : values) t.add_int64_data(v);
    return t;
  }
  onnx::TensorProto& rawFloats(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<float>& values) {
    onnx::TensorProto& t = initializer(name, dims, onnx::TensorProto::FLOAT);
    std::string bytes(values.size() * sizeof(float), '\0');
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    t.set_raw_data(std::move(bytes));
    return t;
  }
  /// A float initializer claiming `dims` with `rawBytes` zero bytes of data,
  /// however many the dims need (for the importer's size checks).
  onnx::TensorProto& raw(const std::string& name, const std::vector<int64_t>& dims, size_t rawBytes) {
    onnx::TensorProto& t = initializer(name, dims, onnx::TensorProto::FLOAT);
    t.set_raw_data(std::string(rawBytes, '\0'));
    return t;
  }

  onnx::GraphProto& graph() { return *graph_; }
  onnx::ModelProto& model() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }

 private:
  static onnx::ValueInfoProto& typed(onnx::ValueInfoProto& info, const std::string& name,
                                     const std::vector<OnnxDim>& dims, int32_t type) {
    info.set_name(name);
    auto* tensor = info.mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    auto* shape = tensor->mutable_shape();
    for (const OnnxDim& d : dims) {
      auto* dim = shape->add_dim();
      if (const auto* size = std::get_if<int64_t>(&d))
        dim->set_dim_value(*size);
      else
        dim->set_dim_param(std::get<std::string>(d));
    }
    return info;
  }

  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
};

inline onnx::AttributeProto& addAttribute(onnx::NodeProto& n, const std::string& name,
                                          onnx::AttributeProto::AttributeType type) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return *a;
}
inline void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  addAttribute(n, name, onnx::AttributeProto::INT).set_i(v);
}
inline void attr(onnx::NodeProto& n, const std::string& name, float v) {
  addAttribute(n, name, onnx::AttributeProto::FLOAT).set_f(v);
}
inline void attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  addAttribute(n, name, onnx::AttributeProto::STRING).set_s(v);
}
inline void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto& a = addAttribute(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
}

}  // namespace ember::test
