// The table from ONNX op type to handler, and helpers shared by the handlers.

#include <algorithm>

#include "OnnxImporter.h"

namespace ember::onnx_import {

const OpHandler* findOpHandler(const std::string& opType) {
  static const OpTable table = [] {
    OpTable t;
    registerMathOps(t);
    registerTensorOps(t);
    registerNNOps(t);
    registerIndexingOps(t);
    registerLossOps(t);
    registerRecurrentOps(t);
    registerValueDependentOps(t);
    registerQuantizeOps(t);
    registerRoiAlignOps(t);
    registerBitShiftOps(t);
    registerRandomOps(t);
    return t;
  }();
  auto it = table.find(opType);
  return it == table.end() ? nullptr : &it->second;
}

Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || axis >= rank) return makeError(what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

Expected<std::vector<int64_t>> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> result;
  for (int64_t a : axes) {
    EMBER_TRY(int64_t n, normalizeAxis(a, rank));
    result.push_back(n);
  }
  std::sort(result.begin(), result.end());
  if (std::adjacent_find(result.begin(), result.end()) != result.end())
    return makeError("axes contain a duplicate");
  return result;
}

int64_t product(const Dims& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) p *= dims[i];
  return p;
}

}  // namespace ember::onnx_import
