// The ONNX importer.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/Tensor.h"

namespace ember {

struct ImportOptions {
  /// Values for symbolic dimensions (--dim NAME=VALUE).
  std::map<std::string, int64_t> dimValues;
  /// Refuse tensors bigger than this many elements.
  int64_t maxElements = int64_t(1) << 32;
  /// Refuse any one tensor (initializer, input, folded constant or node
  /// result) whose storage exceeds this many bytes.
  int64_t maxTensorBytes = int64_t(16) << 30;
  /// Refuse a model whose import-time constants (initializers, Constant nodes
  /// and folded values) exceed this many bytes in total.
  int64_t maxConstantBytes = int64_t(32) << 30;
  /// Values of graph inputs known at compile time (`ember run --input`).
  /// Shape specialisation: an input whose value decides a shape (it feeds an
  /// operand Ember needs as a constant, such as Reshape's `shape` or Slice's
  /// `starts`) is bound to its value and imported as a constant, so the
  /// function no longer has that input; the other inputs stay inputs. Finding
  /// them re-imports the model once per newly bound input.
  std::map<std::string, Tensor> inputValues;
  /// Graph inputs bound to constants unconditionally (`ember compile --bind`).
  std::map<std::string, Tensor> boundInputs;
};

/// Imports an ONNX model file (opsets 7-17) into `module` as one Function
/// named "main". Errors name the file and, where it applies, the node and op.
Expected<Function*> importOnnxFile(const std::string& path, Module& module,
                                   const ImportOptions& options = {});
/// Same, from serialized bytes (`origin` names them in errors).
Expected<Function*> importOnnxBytes(const std::string& bytes, const std::string& origin, Module& module,
                                    const ImportOptions& options = {});

/// Whether the ONNX operator `opType` draws random values (RandomUniform,
/// RandomNormal, their Like forms, Bernoulli, Multinomial). Ember's are seeded
/// and reproducible but are not numpy's, so ONNX's test data for them cannot
/// be matched value for value (docs/importer.md, "Random operators").
bool isRandomOnnxOp(std::string_view opType);

}  // namespace ember
