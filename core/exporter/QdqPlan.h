// Which tensors and weights of an ONNX graph Ember quantizes, and how: read
// from the quantized Ember function of the same model (quantized nodes keep
// the ONNX node names, docs/quantization.md 5).
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ember/Error.h"
#include "ember/Graph.h"

namespace ember::qdq {

/// The quantization of one activation tensor (an 8-bit kind).
struct ActivationQuant {
  ElemKind kind = ElemKind::Int8Q;
  float scale = 1;
  int32_t offset = 0;
};

/// Ember's int8 weights (and int32 bias) of one Conv, Gemm or MatMul node, in
/// ONNX layout.
struct WeightQuant {
  std::vector<int8_t> values;
  std::vector<int64_t> dims;
  std::vector<float> scales;  ///< per channel along `axis`
  int64_t axis = 0;
  std::vector<int32_t> bias;  ///< empty: the node keeps its float bias
  std::vector<float> biasScales;
  bool gemm = false;  ///< Gemm: B becomes [K, N] with alpha and beta folded
};

struct Plan {
  std::map<std::string, ActivationQuant> tensors;  ///< by ONNX tensor name
  std::map<size_t, WeightQuant> weights;           ///< by ONNX node index
  /// ONNX nodes Ember runs as int8: by name, or folded into an int8
  /// neighbour (a fused ReLU, MatMul's bias Add).
  std::set<size_t> integerNodes;
};

/// The name Ember's importer gives ONNX node `index`.
std::string onnxNodeName(const onnx::GraphProto& graph, size_t index);

/// The plan for `graph` from `quantized`. Errors name the node whose
/// weights Ember changed (the optimizer folded something into them), which
/// the ONNX graph cannot express.
Expected<Plan> planQdq(const onnx::GraphProto& graph, const Function& quantized);

}  // namespace ember::qdq
