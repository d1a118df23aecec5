// The ONNX rewrite of the QDQ export: Q/DQ pairs after every tensor Ember
// quantizes, weights and biases through DequantizeLinear, then unused
// initializers and nodes removed.
#include "exporter/QdqExport.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "QdqPlan.h"

namespace ember {
namespace {

using qdq::ActivationQuant;
using qdq::WeightQuant;

int onnxType(ElemKind kind) {
  if (kind == ElemKind::Int32Q) return onnx::TensorProto::INT32;
  return kind == ElemKind::UInt8Q ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
}

/// Builds the new node list and initializers.
class Rewriter {
 public:
  explicit Rewriter(onnx::GraphProto& graph) : graph_(graph) {}

  /// A scale (and zero point) initializer pair: scalars, or 1-D per channel.
  void addScaleAndZero(const std::string& base, const std::vector<float>& scales, ElemKind kind,
                       int32_t offset, bool scalar, bool withZero) {
    onnx::TensorProto* s = graph_.add_initializer();
    s->set_name(base + "/scale");
    s->set_data_type(onnx::TensorProto::FLOAT);
    if (!scalar) s->add_dims(int64_t(scales.size()));
    for (size_t i = 0; i < (scalar ? 1 : scales.size()); ++i) s->add_float_data(scales[i]);
    if (!withZero) return;
    onnx::TensorProto* z = graph_.add_initializer();
    z->set_name(base + "/zero_point");
    z->set_data_type(onnxType(kind));
    if (!scalar) z->add_dims(int64_t(scales.size()));
    for (size_t i = 0; i < (scalar ? 1 : scales.size()); ++i) z->add_int32_data(offset);
  }

  onnx::NodeProto& addNode(const std::string& op, const std::string& name,
                           const std::vector<std::string>& inputs, const std::string& output) {
    onnx::NodeProto& n = nodes_.emplace_back();
    n.set_op_type(op);
    n.set_name(name);
    for (const auto& in : inputs) n.add_input(in);
    n.add_output(output);
    return n;
  }

  /// `from` -> QuantizeLinear, then one DequantizeLinear per use of
  /// `tensor` (ONNX Runtime fuses a DequantizeLinear only into its one
  /// consumer). The first non-input use keeps the name `tensor` (a graph
  /// output keeps it too); the other uses are recorded in `renamed`.
  void addQuantized(const std::string& from, const std::string& tensor, const ActivationQuant& q,
                    const std::vector<std::pair<int, int>>& uses, bool keepName) {
    // int8 activations are written as uint8 with the zero point moved by
    // 128: the same grid and the same rounding, and the form ONNX Runtime
    // fuses on x86 (with int8 activations it leaves convolutions whose input
    // has several consumers in float).
    const bool shift = q.kind == ElemKind::Int8Q;
    addScaleAndZero(tensor, {q.scale}, shift ? ElemKind::UInt8Q : q.kind, shift ? q.offset + 128 : q.offset,
                    true, true);
    const std::string scale = tensor + "/scale", zero = tensor + "/zero_point";
    addNode("QuantizeLinear", tensor + "/QuantizeLinear", {from, scale, zero}, tensor + "/quantized");
    size_t count = 0;
    auto dequantize = [&](const std::string& to) {
      std::string suffix = count ? "_" + std::to_string(count) : "";
      addNode("DequantizeLinear", tensor + "/DequantizeLinear" + suffix, {tensor + "/quantized", scale, zero},
              to);
      ++count;
    };
    if (keepName) dequantize(tensor);
    bool firstUse = keepName;  // reads `tensor` itself
    for (const auto& use : uses) {
      if (std::exchange(firstUse, false)) continue;
      std::string to = tensor + "/dequantized_" + std::to_string(count);
      renamed_[use] = to;
      dequantize(to);
    }
  }

  /// The name node `index` reads at input `slot` after the rewrite.
  const std::string* renamedInput(int index, int slot) const {
    auto it = renamed_.find({index, slot});
    return it == renamed_.end() ? nullptr : &it->second;
  }

  /// Ember's int8 weights and int32 bias as initializers behind
  /// DequantizeLinear; rewires `node`.
  void addWeights(onnx::NodeProto& node, const std::string& name, const WeightQuant& w) {
    const bool perTensor =
        std::all_of(w.scales.begin(), w.scales.end(), [&](float s) { return s == w.scales[0]; });
    onnx::TensorProto* values = graph_.add_initializer();
    const std::string base = name + "/weight";
    values->set_name(base + "/int8");
    values->set_data_type(onnx::TensorProto::INT8);
    for (int64_t d : w.dims) values->add_dims(d);
    values->set_raw_data(std::string(reinterpret_cast<const char*>(w.values.data()), w.values.size()));
    addScaleAndZero(base, w.scales, ElemKind::Int8Q, 0, perTensor, true);
    onnx::NodeProto& dq = addNode("DequantizeLinear", base + "/DequantizeLinear",
                                  {base + "/int8", base + "/scale", base + "/zero_point"}, base);
    if (!perTensor) {
      onnx::AttributeProto* axis = dq.add_attribute();
      axis->set_name("axis");
      axis->set_type(onnx::AttributeProto::INT);
      axis->set_i(w.axis);
    }
    node.set_input(1, base);
    if (!w.bias.empty()) {
      const std::string bias = name + "/bias";
      onnx::TensorProto* b = graph_.add_initializer();
      b->set_name(bias + "/int32");
      b->set_data_type(onnx::TensorProto::INT32);
      b->add_dims(int64_t(w.bias.size()));
      for (int32_t v : w.bias) b->add_int32_data(v);
      addScaleAndZero(bias, w.biasScales, ElemKind::Int32Q, 0, perTensor, true);
      onnx::NodeProto& bdq = addNode("DequantizeLinear", bias + "/DequantizeLinear",
                                     {bias + "/int32", bias + "/scale", bias + "/zero_point"}, bias);
      if (!perTensor) {
        onnx::AttributeProto* axis = bdq.add_attribute();
        axis->set_name("axis");
        axis->set_type(onnx::AttributeProto::INT);
        axis->set_i(0);
      }
      while (node.input_size() < 3) node.add_input("");
      node.set_input(2, bias);
    }
    if (w.gemm) {
      // Ember's weights are [K, N] with alpha folded, its bias has beta folded.
      std::set<std::string> folded = {"transB", "alpha", "beta"};
      auto* attrs = node.mutable_attribute();
      attrs->erase(
          std::remove_if(attrs->begin(), attrs->end(), [&](const auto& a) { return folded.count(a.name()); }),
          attrs->end());
    }
    perAxis_ |= !perTensor;
  }

  std::vector<onnx::NodeProto>& nodes() { return nodes_; }
  bool perAxis() const { return perAxis_; }

 private:
  onnx::GraphProto& graph_;
  std::vector<onnx::NodeProto> nodes_;
  std::map<std::pair<int, int>, std::string> renamed_;  ///< (node, input slot) -> its DequantizeLinear
  bool perAxis_ = false;
};

/// Drops nodes and initializers no graph output depends on (the float
/// weights Ember's int8 ones replaced, and Identity nodes that fed them).
void removeUnused(onnx::GraphProto& graph) {
  std::unordered_set<std::string> used;
  for (const auto& out : graph.output()) used.insert(out.name());
  std::vector<bool> keep(size_t(graph.node_size()), false);
  for (int i = graph.node_size() - 1; i >= 0; --i) {
    const onnx::NodeProto& n = graph.node(i);
    for (const std::string& out : n.output()) keep[size_t(i)] = keep[size_t(i)] || used.count(out);
    if (keep[size_t(i)])
      for (const std::string& in : n.input()) used.insert(in);
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < graph.node_size(); ++i)
    if (keep[size_t(i)]) *nodes.Add() = graph.node(i);
  graph.mutable_node()->Swap(&nodes);
  std::unordered_set<std::string> dropped;
  auto* inits = graph.mutable_initializer();
  for (const auto& init : *inits)
    if (!used.count(init.name())) dropped.insert(init.name());
  inits->erase(
      std::remove_if(inits->begin(), inits->end(), [&](const auto& t) { return dropped.count(t.name()); }),
      inits->end());
  auto* inputs = graph.mutable_input();
  inputs->erase(
      std::remove_if(inputs->begin(), inputs->end(), [&](const auto& v) { return dropped.count(v.name()); }),
      inputs->end());
}

bool movesDataOnly(const std::string& op) {
  static const std::set<std::string> ops = {"Identity",  "Constant", "Flatten",  "Reshape",
                                            "Transpose", "Squeeze",  "Unsqueeze"};
  return ops.count(op) != 0;
}

using TensorUses = std::unordered_map<std::string, std::vector<std::pair<int, int>>>;

/// Copies the graph's nodes into the rewriter with their inputs renamed, the
/// planned weights quantized, and a Q/DQ pair after each planned output;
/// counts them and the nodes left float in `result`.
void rewriteNodes(const onnx::GraphProto& graph, const qdq::Plan& plan, TensorUses& uses, Rewriter& rewriter,
                  QdqExportSummary& result) {
  for (int i = 0; i < graph.node_size(); ++i) {
    onnx::NodeProto node = graph.node(i);
    const std::string name = qdq::onnxNodeName(graph, size_t(i));
    for (int k = 0; k < node.input_size(); ++k)
      if (const std::string* to = rewriter.renamedInput(i, k)) node.set_input(k, *to);
    if (auto w = plan.weights.find(size_t(i)); w != plan.weights.end()) {
      rewriter.addWeights(node, name, w->second);
      ++result.quantizedWeights;
    }
    std::vector<std::pair<std::string, const ActivationQuant*>> quantizedOutputs;
    for (int k = 0; k < node.output_size(); ++k) {
      if (auto it = plan.tensors.find(node.output(k)); it != plan.tensors.end()) {
        quantizedOutputs.emplace_back(node.output(k), &it->second);
        node.set_output(k, node.output(k) + "/float");
      }
    }
    if (!plan.integerNodes.count(size_t(i)) && !movesDataOnly(node.op_type()))
      result.floatNodes.push_back(name + " (" + node.op_type() + ")");
    rewriter.nodes().push_back(std::move(node));
    for (const auto& [tensor, q] : quantizedOutputs) {
      rewriter.addQuantized(tensor + "/float", tensor, *q, uses[tensor], true);
      ++result.quantizedTensors;
    }
  }
}

Error writeModel(const onnx::ModelProto& model, const std::string& outputPath) {
  std::string out;
  if (!model.SerializeToString(&out)) return makeError(outputPath, ": cannot serialize the model");
  std::ofstream file(outputPath, std::ios::binary | std::ios::trunc);
  if (!file) return makeError(outputPath, ": cannot write the file (does its directory exist?)");
  file.write(out.data(), std::streamsize(out.size()));
  if (!file) return makeError(outputPath, ": write failed");
  return Error::success();
}

}  // namespace

Error exportQdqOnnx(const std::string& modelPath, const Function& quantized, const std::string& outputPath,
                    QdqExportSummary* summary) {
  std::ifstream in(modelPath, std::ios::binary);
  if (!in) return makeError(modelPath, ": cannot open the model");
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str())) return makeError(modelPath, ": not a valid ONNX model");
  onnx::GraphProto& graph = *model.mutable_graph();
  Expected<qdq::Plan> planned = qdq::planQdq(graph, quantized);
  if (!planned) return planned.error().withContext(modelPath);
  const qdq::Plan& plan = *planned;

  // Every use of every tensor: (node index, input slot).
  TensorUses uses;
  for (int i = 0; i < graph.node_size(); ++i)
    for (int k = 0; k < graph.node(i).input_size(); ++k) uses[graph.node(i).input(k)].emplace_back(i, k);

  Rewriter rewriter(graph);
  QdqExportSummary result;
  for (const auto& input : graph.input())
    if (auto it = plan.tensors.find(input.name()); it != plan.tensors.end()) {
      rewriter.addQuantized(input.name(), input.name(), it->second, uses[input.name()], false);
      ++result.quantizedTensors;
    }
  rewriteNodes(graph, plan, uses, rewriter, result);
  // Per-axis scales need opset 13; per-tensor QuantizeLinear exists from 10.
  const int64_t needed = rewriter.perAxis() ? 13 : 10;
  for (auto& opset : *model.mutable_opset_import())
    if ((opset.domain().empty() || opset.domain() == "ai.onnx") && opset.version() < needed)
      return makeError(modelPath, ": opset ", opset.version(), " has no ", needed == 13 ? "per-channel " : "",
                       "QuantizeLinear; export needs opset ", needed, " or later");
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (auto& n : rewriter.nodes()) *nodes.Add() = std::move(n);
  graph.mutable_node()->Swap(&nodes);
  removeUnused(graph);
  auto* meta = model.add_metadata_props();
  meta->set_key("ember_quantization");
  meta->set_value("QDQ model written by 'ember quantize --emit-onnx' (docs/quantization.md)");
  EMBER_RETURN_IF_ERROR(writeModel(model, outputPath));
  if (summary) *summary = std::move(result);
  return Error::success();
}

}  // namespace ember
