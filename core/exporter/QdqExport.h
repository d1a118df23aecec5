// Writes an int8 model as a standard ONNX QDQ model (docs/quantization.md,
// "Exporting to ONNX"): the original ONNX graph with QuantizeLinear /
// DequantizeLinear pairs carrying Ember's scales and zero points on every
// tensor Ember quantizes (int8 activations as uint8 with the zero point moved
// by 128: the same grid), int8 weights and int32 biases as initializers read
// through DequantizeLinear. ONNX Runtime fuses the pairs into its own int8
// kernels (Q-DQ-Conv-Q becomes QLinearConv).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "ember/Error.h"
#include "ember/Graph.h"

namespace ember {

/// What the export wrote.
struct QdqExportSummary {
  size_t quantizedTensors = 0;  ///< activation tensors with a Q/DQ pair
  size_t quantizedWeights = 0;  ///< Conv/Gemm/MatMul weights stored as int8
  /// ONNX nodes left float between DequantizeLinear and QuantizeLinear
  /// ("name (op)"): ops Ember keeps float, and the pieces of patterns Ember
  /// runs as one integer op (LayerNorm, GELU) that ONNX has no int8 form of.
  std::vector<std::string> floatNodes;
};

/// Rewrites the ONNX model at `modelPath` with the quantization of
/// `quantized` (the same model imported, optimized and converted by
/// quantizeFunction) and writes it to `outputPath`. Errors name the file, or
/// the node whose quantization cannot be expressed in ONNX.
Error exportQdqOnnx(const std::string& modelPath, const Function& quantized, const std::string& outputPath,
                    QdqExportSummary* summary = nullptr);

}  // namespace ember
