// Reads Ember's quantization decisions off the quantized function and maps
// them onto the ONNX graph's tensor names.
#include "QdqPlan.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ember/Quantization.h"

namespace ember::qdq {
namespace {

/// Producer and consumers of every tensor of the ONNX graph.
struct GraphIndex {
  const onnx::GraphProto& graph;
  std::unordered_map<std::string, size_t> nodeByName;          ///< Ember's name of each node
  std::unordered_map<std::string, std::string> tensorByKey;    ///< profile key -> tensor
  std::unordered_map<std::string, size_t> producer;            ///< tensor -> node
  std::unordered_map<std::string, std::vector<size_t>> users;  ///< tensor -> nodes
  std::unordered_set<std::string> graphOutputs;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers;

  explicit GraphIndex(const onnx::GraphProto& g) : graph(g) {
    for (const auto& init : g.initializer()) initializers[init.name()] = &init;
    for (const auto& in : g.input())
      if (!initializers.count(in.name())) tensorByKey[in.name()] = in.name();
    for (const auto& out : g.output()) graphOutputs.insert(out.name());
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& node = g.node(i);
      std::string name = onnxNodeName(g, size_t(i));
      nodeByName[name] = size_t(i);
      for (int k = 0; k < node.output_size(); ++k) {
        if (node.output(k).empty()) continue;
        tensorByKey[k == 0 ? name : name + ":" + std::to_string(k)] = node.output(k);
        producer[node.output(k)] = size_t(i);
      }
      for (const std::string& in : node.input())
        if (!in.empty()) users[in].push_back(size_t(i));
    }
  }

  /// The one consumer of `tensor`, if it has exactly one and is no graph output.
  const onnx::NodeProto* soleUser(const std::string& tensor, std::string* name) const {
    auto it = users.find(tensor);
    if (graphOutputs.count(tensor) || it == users.end() || it->second.size() != 1) return nullptr;
    *name = onnxNodeName(graph, it->second[0]);
    return &graph.node(int(it->second[0]));
  }

  /// The constant behind `tensor`: an initializer, a Constant node's value,
  /// through Identity nodes.
  const onnx::TensorProto* constant(std::string tensor) const {
    for (int depth = 0; depth < 8; ++depth) {
      if (auto it = initializers.find(tensor); it != initializers.end()) return it->second;
      auto p = producer.find(tensor);
      if (p == producer.end()) return nullptr;
      const onnx::NodeProto& node = graph.node(int(p->second));
      if (node.op_type() == "Constant") {
        for (const auto& a : node.attribute())
          if (a.name() == "value" && a.has_t()) return &a.t();
        return nullptr;
      }
      if (node.op_type() != "Identity") return nullptr;
      tensor = node.input(0);
    }
    return nullptr;
  }
};

/// The float values of an f32 TensorProto (empty when stored externally or
/// of another type).
std::vector<float> floatsOf(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto::FLOAT) return {};
  if (t.has_raw_data()) {
    std::vector<float> v(t.raw_data().size() / sizeof(float));
    std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
    return v;
  }
  return std::vector<float>(t.float_data().begin(), t.float_data().end());
}

ActivationQuant quantOf(const Type& type) { return {type.kind, type.scale, type.offset}; }

/// Nodes that reach a function output.
std::unordered_set<const Node*> liveNodes(const Function& f) {
  std::unordered_set<const Node*> live;
  std::vector<const Node*> work;
  for (const auto& [name, v] : f.outputs()) work.push_back(v.node);
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    if (!live.insert(n).second) continue;
    for (const NodeValue& in : n->inputs()) work.push_back(in.node);
  }
  return live;
}

template <typename T>
std::vector<T> payloadOf(NodeValue v) {
  const Tensor& t = v.node->payload();
  return std::vector<T>(t.as<T>(), t.as<T>() + t.type().numElements());
}

/// Conv: Ember's filter [O, KH, KW, C/g] back to ONNX's [O, C/g, KH, KW],
/// checked against the model's float weights.
Expected<WeightQuant> convWeights(const Node& q, const onnx::NodeProto& node, const std::string& name,
                                  const GraphIndex& index) {
  WeightQuant w;
  NodeValue filter = q.input(1);
  const Dims& d = filter.type().dims;
  if (d.size() != 4) return makeError("node '", name, "' (Conv): only 1-D and 2-D convolutions are exported");
  const int64_t o = d[0], kh = d[1], kw = d[2], c = d[3];
  std::vector<int8_t> nhwc = payloadOf<int8_t>(filter);
  w.values.resize(nhwc.size());
  for (int64_t a = 0; a < o; ++a)
    for (int64_t y = 0; y < kh; ++y)
      for (int64_t x = 0; x < kw; ++x)
        for (int64_t ch = 0; ch < c; ++ch)
          w.values[size_t(((a * c + ch) * kh + y) * kw + x)] = nhwc[size_t(((a * kh + y) * kw + x) * c + ch)];
  w.dims = {o, c, kh, kw};
  w.scales = payloadOf<float>(q.input(3));
  w.bias = payloadOf<int32_t>(q.input(2));
  const double inScale = q.input(0).type().scale;
  for (float s : w.scales) w.biasScales.push_back(float(inScale * double(s)));
  if (const onnx::TensorProto* original = index.constant(node.input(1))) {
    int64_t count = 1;
    std::vector<int64_t> dims(original->dims().begin(), original->dims().end());
    for (int64_t v : dims) count *= v;
    if (count != int64_t(w.values.size()))
      return makeError("node '", name, "' (Conv): Ember's filter has ", w.values.size(),
                       " elements, the model's ", count);
    w.dims = dims;  // 1-D convolutions: [O, C/g, KW]
    std::vector<float> f = floatsOf(*original);
    const int64_t per = o ? int64_t(f.size()) / o : 0;
    for (size_t i = 0; i < f.size(); ++i) {
      const float s = w.scales[size_t(int64_t(i) / per)];
      if (std::fabs(f[i] - s * float(w.values[i])) > 0.5f * s * 1.001f + 1e-6f * std::fabs(f[i]))
        return makeError(
            "node '", name,
            "' (Conv): Ember's optimized weights differ from the model's (the graph optimizer folded "
            "another node into them), so the ONNX graph cannot carry them");
    }
  }
  return w;
}

/// Gemm or MatMul with constant weights: Ember's [K, N] weights, per column.
WeightQuant matMulWeights(const Node& q, bool gemm) {
  WeightQuant w;
  NodeValue rhs = q.input(1);
  w.values = payloadOf<int8_t>(rhs);
  w.dims = {rhs.type().dims[0], rhs.type().dims[1]};
  w.axis = 1;
  w.scales = payloadOf<float>(q.input(3));
  w.gemm = gemm;
  if (gemm) {
    w.bias = payloadOf<int32_t>(q.input(2));
    const double inScale = q.input(0).type().scale;
    for (float s : w.scales) w.biasScales.push_back(float(inScale * double(s)));
  }
  return w;
}

}  // namespace

std::string onnxNodeName(const onnx::GraphProto& graph, size_t index) {
  const onnx::NodeProto& node = graph.node(int(index));
  return node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
}

Expected<Plan> planQdq(const onnx::GraphProto& graph, const Function& quantized) {
  GraphIndex index(graph);
  Plan plan;
  std::unordered_set<const Node*> live = liveNodes(quantized);
  std::set<std::string> quantizedNames;
  for (const Node* n : quantized.nodes())
    if (live.count(n) && !n->isConstant() && isQuantized(n->resultType().kind))
      quantizedNames.insert(n->name());

  for (const Node* n : quantized.topologicalOrder()) {
    if (!live.count(n) || n->isConstant() || n->numResults() != 1) continue;
    if (n->kind() == OpKind::Quantize) {
      // A float tensor quantized for an int8 consumer; layout nodes the
      // importer added (NCHW <-> NHWC) commute with quantization.
      NodeValue v = n->input(0);
      while (!index.tensorByKey.count(tensorName(v)) &&
             (v.node->kind() == OpKind::Transpose || v.node->kind() == OpKind::Reshape))
        v = v.node->input(0);
      auto it = index.tensorByKey.find(tensorName(v));
      if (it != index.tensorByKey.end()) plan.tensors.emplace(it->second, quantOf(n->resultType()));
      continue;
    }
    if (!isQuantized(n->resultType().kind) || n->kind() == OpKind::Dequantize) continue;
    auto key = index.tensorByKey.find(n->name());
    auto nodeIt = index.nodeByName.find(n->name());
    if (key == index.tensorByKey.end() || nodeIt == index.nodeByName.end()) continue;
    const onnx::NodeProto& node = graph.node(int(nodeIt->second));
    plan.integerNodes.insert(nodeIt->second);
    std::string tensor = key->second, userName;
    // Nodes Ember folded into this one: MatMul's bias Add, then a ReLU or clip.
    if (n->kind() == OpKind::QuantizedMatMul && node.op_type() == "MatMul")
      if (const onnx::NodeProto* user = index.soleUser(tensor, &userName))
        if (user->op_type() == "Add" && !quantizedNames.count(userName)) {
          plan.integerNodes.insert(index.nodeByName.at(userName));
          tensor = user->output(0);
        }
    if (n->attrs().find("clip_min") || n->attrs().find("clip_max"))
      if (const onnx::NodeProto* user = index.soleUser(tensor, &userName))
        if ((user->op_type() == "Relu" || user->op_type() == "Clip") && !quantizedNames.count(userName)) {
          // Quantizing the node's output with the activation's parameters
          // and clamping (the ReLU on the dequantized grid, then quantized
          // again, a no-op) is exactly Ember's narrowed clamp (quantization.md
          // 2.4), and it gives ONNX Runtime the Q-DQ-Conv-Q shape it fuses.
          plan.tensors.emplace(tensor, quantOf(n->resultType()));
          plan.integerNodes.insert(index.nodeByName.at(userName));
          tensor = user->output(0);
        }
    plan.tensors.emplace(tensor, quantOf(n->resultType()));

    if (n->kind() == OpKind::QuantizedConv && node.op_type() == "Conv") {
      EMBER_ASSIGN_OR_RETURN(WeightQuant w, convWeights(*n, node, n->name(), index));
      plan.weights.emplace(nodeIt->second, std::move(w));
    } else if (n->kind() == OpKind::QuantizedMatMul && n->input(1).node->isConstant() &&
               (node.op_type() == "Gemm" || node.op_type() == "MatMul")) {
      plan.weights.emplace(nodeIt->second, matMulWeights(*n, node.op_type() == "Gemm"));
    }
  }
  return plan;
}

}  // namespace ember::qdq
