// MaxPool's Indices output from primitives, so every backend has it: the
// padded input is flattened per plane, a constant Gather lays out each output's
// window, ArgMax picks the window element, and constant tables map it to the
// input's flat index.

#include "OnnxPoolIndices.h"

#include <limits>

namespace ember::onnx_import {
namespace {

Value i64Constant(NodeBuilder& b, Dims dims, const std::vector<int64_t>& values) {
  Tensor t(Type(ElemKind::I64, std::move(dims)));
  std::copy(values.begin(), values.end(), t.as<int64_t>());
  return b.constant(std::move(t));
}

/// The input plane, its padding and the pooled plane.
struct PlaneGeometry {
  int64_t h, w, top, left, paddedWidth, oh, ow;
};

/// Per output position and window element: its offset in the padded plane,
/// and its flat index in the input's plane (row- or column-major).
struct WindowTables {
  std::vector<int64_t> gather, inputIndex;
};

WindowTables windowTables(const Window& win, const PlaneGeometry& g, bool columnMajor) {
  const int64_t kh = win.kernel[0], kw = win.kernel[1];
  WindowTables t;
  t.gather.reserve(size_t(g.oh * g.ow * kh * kw));
  t.inputIndex.reserve(size_t(g.oh * g.ow * kh * kw));
  for (int64_t y = 0; y < g.oh; ++y)
    for (int64_t x0 = 0; x0 < g.ow; ++x0)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          const int64_t py = y * win.strides[0] + i * win.dilations[0];
          const int64_t px = x0 * win.strides[1] + j * win.dilations[1];
          t.gather.push_back(py * g.paddedWidth + px);
          const int64_t iy = py - g.top, ix = px - g.left;
          t.inputIndex.push_back(columnMajor ? ix * g.h + iy : iy * g.w + ix);
        }
  return t;
}

/// The input's flat index [n, c, oh, ow] of each window's best element,
/// `best` [n, c, oh * ow] indexing the window's `windowSize` elements.
Expected<Value> flatInputIndex(NodeBuilder& b, const Value& best, const std::vector<int64_t>& inputIndex,
                               const PlaneGeometry& g, int64_t windowSize) {
  const int64_t n = best.dims()[0], c = best.dims()[1], positions = g.oh * g.ow;
  std::vector<int64_t> rowStart(static_cast<size_t>(positions));
  for (int64_t r = 0; r < positions; ++r) rowStart[size_t(r)] = r * windowSize;
  EMBER_TRY(Value entry,
            b.emit(OpKind::Add, {best, i64Constant(b, {positions}, rowStart)}, {}, "indices/entry"));
  EMBER_TRY(Value inPlane,
            b.emit(OpKind::Gather, {i64Constant(b, {positions * windowSize}, inputIndex), entry},
                   Attributes{{"axis", int64_t(0)}}, "indices/in_plane"));
  std::vector<int64_t> planeStart(size_t(n * c));
  for (int64_t p = 0; p < n * c; ++p) planeStart[size_t(p)] = p * g.h * g.w;
  EMBER_TRY(Value flat,
            b.emit(OpKind::Add, {inPlane, i64Constant(b, {n, c, 1}, planeStart)}, {}, "indices/flat"));
  return b.reshape(flat, {n, c, g.oh, g.ow}, "indices");
}

}  // namespace

Expected<Value> maxPoolIndices(NodeBuilder& b, const Value& x, const Window& win, const Dims& pooled) {
  if (x.rank() != 4) return makeError("output 'Indices' is supported for 2-D MaxPool only");
  if (!isFloat(x.type.kind)) return makeError("output 'Indices' needs a float input");
  EMBER_TRY(int64_t storageOrder, b.attrInt("storage_order", 0));
  if (storageOrder != 0 && storageOrder != 1) return makeError("storage_order must be 0 or 1");
  const int64_t n = x.dims()[0], c = x.dims()[1], h = x.dims()[2], w = x.dims()[3];
  const int64_t oh = pooled[2], ow = pooled[3];
  const int64_t kh = win.kernel[0], kw = win.kernel[1], k = kh * kw;
  const int64_t top = win.pads[0], left = win.pads[1];
  // Pad far enough for ceil_mode's last windows; padding never wins (-inf).
  const int64_t bottom =
      std::max(win.pads[2], (oh - 1) * win.strides[0] + (kh - 1) * win.dilations[0] + 1 - h - top);
  const int64_t right =
      std::max(win.pads[3], (ow - 1) * win.strides[1] + (kw - 1) * win.dilations[1] + 1 - w - left);
  const int64_t hp = h + top + bottom, wp = w + left + right;
  const int64_t entries = oh * ow * k;
  EMBER_RETURN_IF_ERROR(b.reserveConstant(Type(ElemKind::I64, {2 * entries + oh * ow + n * c})));

  EMBER_TRY(Value padded,
            b.emit(OpKind::Pad, {x},
                   Attributes{{"pads", std::vector<int64_t>{0, 0, top, left, 0, 0, bottom, right}},
                              {"mode", std::string("constant")},
                              {"value", -std::numeric_limits<double>::infinity()}},
                   "indices/pad"));
  EMBER_TRY(Value planes, b.reshape(padded, {n, c, hp * wp}, "indices/planes"));
  const PlaneGeometry geometry{h, w, top, left, wp, oh, ow};
  const WindowTables tables = windowTables(win, geometry, storageOrder != 0);
  EMBER_TRY(Value windows, b.emit(OpKind::Gather, {planes, i64Constant(b, {entries}, tables.gather)},
                                  Attributes{{"axis", int64_t(2)}}, "indices/windows"));
  EMBER_TRY(windows, b.reshape(windows, {n, c, oh * ow, k}, "indices/window_rows"));
  EMBER_TRY(
      Value best,
      b.emit(OpKind::ArgMax, {windows},
             Attributes{{"axis", int64_t(3)}, {"keepdims", int64_t(0)}, {"select_last_index", int64_t(0)}},
             "indices/argmax"));
  return flatInputIndex(b, best, tables.inputIndex, geometry, k);
}

}  // namespace ember::onnx_import
