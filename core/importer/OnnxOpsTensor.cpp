// ONNX constants, shape ops and data movement. Every shape-like input
// (Reshape's shape, Slice's starts, ...) must be a constant once import-time
// folding has run: Ember shapes are static.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "OnnxImporter.h"

namespace ember::onnx_import {
namespace {

Tensor int64Tensor(Dims dims, const std::vector<int64_t>& values) {
  Tensor t(Type(ElemKind::I64, std::move(dims)));
  if (!values.empty()) std::memcpy(t.data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

Error importConstant(NodeBuilder& b) {
  if (b.hasAttr("value")) {
    EMBER_TRY(Tensor t, b.attrTensor("value"));
    return b.setOutput(0, b.constant(std::move(t)));
  }
  if (b.hasAttr("value_float")) {
    EMBER_TRY(double v, b.attrFloat("value_float"));
    return b.setOutput(0, b.scalar(ElemKind::F32, v));
  }
  if (b.hasAttr("value_int")) {
    EMBER_TRY(int64_t v, b.attrInt("value_int"));
    return b.setOutput(0, b.constant(int64Tensor({}, {v})));
  }
  if (b.hasAttr("value_floats")) {
    EMBER_TRY(std::vector<double> vs, b.attrFloats("value_floats"));
    return b.setOutput(0, b.constant(Tensor::fromValues<double>(ElemKind::F32, {int64_t(vs.size())}, vs)));
  }
  if (b.hasAttr("value_ints")) {
    EMBER_TRY(std::vector<int64_t> vs, b.attrInts("value_ints"));
    return b.setOutput(0, b.constant(int64Tensor({int64_t(vs.size())}, vs)));
  }
  return makeError("only tensor, float and int values are supported");
}

Error importConstantOfShape(NodeBuilder& b) {
  EMBER_TRY(std::vector<int64_t> shape, b.constInts(0, "input"));
  Dims dims(shape.begin(), shape.end());
  for (int64_t d : dims)
    if (d < 0) return makeError("negative dimension ", d, " in the shape");
  if (Error e = checkDims(dims, b.maxElements())) return e;
  Tensor fill = Tensor::fromValues<float>(ElemKind::F32, {}, std::vector<float>{0.0f});
  if (b.hasAttr("value")) {
    EMBER_TRY(fill, b.attrTensor("value"));
    if (fill.type().numElements() != 1) return makeError("attribute 'value' must hold one element");
  }
  EMBER_RETURN_IF_ERROR(b.reserveConstant(fill.type().withDims(dims)));
  Tensor out(fill.type().withDims(dims));
  const size_t size = elemSize(out.type().kind);
  auto* dst = static_cast<std::byte*>(out.data());
  for (int64_t i = 0; i < out.type().numElements(); ++i)
    std::memcpy(dst + size_t(i) * size, fill.data(), size);
  return b.setOutput(0, b.constant(std::move(out)));
}

Error importShape(NodeBuilder& b) {
  // Shapes are static, so Shape is always a constant.
  EMBER_TRY(Value x, b.input(0));
  const int64_t rank = int64_t(x.rank());
  EMBER_TRY(int64_t start, b.attrInt("start", 0));
  EMBER_TRY(int64_t end, b.attrInt("end", rank));
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(x.dims().begin() + start, x.dims().begin() + end);
  return b.setOutput(0, b.constant(int64Tensor({int64_t(dims.size())}, dims)));
}

Error importSize(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  return b.setOutput(0, b.constant(int64Tensor({}, {x.type.numElements()})));
}

/// HannWindow, HammingWindow, BlackmanWindow (opset 17): a constant of `size`
/// (a constant input) elements, a0 - a1 cos(2 pi n / D) + a2 cos(4 pi n / D)
/// with D = size (periodic) or size - 1 (symmetric).
OpHandler window(double a0, double a1, double a2) {
  return [a0, a1, a2](NodeBuilder& b) -> Error {
    EMBER_TRY(std::vector<int64_t> sizes, b.constInts(0, "size"));
    if (sizes.size() != 1) return makeError("input 'size' must hold one value");
    const int64_t n = sizes[0];
    if (n < 0 || n > b.maxElements()) return makeError("size ", n, " is out of range");
    EMBER_TRY(int64_t periodic, b.attrInt("periodic", 1));
    EMBER_TRY(int64_t dataType, b.attrInt("output_datatype", 1));
    EMBER_TRY(Type type, typeFromOnnx(int32_t(dataType), {n}));
    EMBER_RETURN_IF_ERROR(b.reserveConstant(type));
    Tensor t(type);
    const double denominator = double(periodic ? n : n - 1);
    for (int64_t i = 0; i < n; ++i) {
      const double phase = 2 * M_PI * double(i) / denominator;
      t.setElementFromDouble(i, a0 - a1 * std::cos(phase) + a2 * std::cos(2 * phase));
    }
    return b.setOutput(0, b.constant(std::move(t)));
  };
}

/// Component c (0: real, 1: imaginary) of the first `used` samples of
/// `moved` [..., component, in] as [rows, used].
Expected<Value> signalComponent(NodeBuilder& b, const Value& moved, int64_t c, int64_t used) {
  const Dims& movedDims = moved.dims();
  const size_t rank = movedDims.size();
  std::vector<int64_t> starts(rank, 0), ends = movedDims, steps(rank, 1);
  starts[rank - 2] = c;
  ends[rank - 2] = c + 1;
  ends[rank - 1] = used;
  EMBER_TRY(Value part,
            b.emit(OpKind::Slice, {moved}, Attributes{{"starts", starts}, {"ends", ends}, {"steps", steps}},
                   c == 0 ? "real" : "imag"));
  return b.reshape(part, {product(movedDims, 0, rank - 2), used}, c == 0 ? "real_rows" : "imag_rows");
}

/// cos (or sin) of 2 pi k t / n for t < used (zero padding adds nothing),
/// k < out, as [used, out]; scaled by 1 / n for the inverse.
Tensor dftTable(int64_t used, int64_t out, int64_t n, bool inverse, bool sine) {
  Tensor t(Type(ElemKind::F32, {used, out}));
  const double scale = inverse ? 1.0 / double(n) : 1.0;
  for (int64_t s = 0; s < used; ++s)
    for (int64_t k = 0; k < out; ++k) {
      const double angle = 2 * M_PI * double((s * k) % n) / double(n);
      t.as<float>()[s * out + k] = float(scale * (sine ? std::sin(angle) : std::cos(angle)));
    }
  return t;
}

/// The real and imaginary parts of a DFT, [rows, out] each.
struct ComplexRows {
  Value re, im;
};

/// The DFT of the rows of `moved` [..., component, in] from the cosine and
/// sine tables. Forward: Yr = xr cos + xi sin, Yi = xi cos - xr sin; the
/// inverse flips the sine's sign.
Expected<ComplexRows> dftRows(NodeBuilder& b, const Value& moved, const Value& cosines, const Value& sines,
                              int64_t used, bool inverse) {
  EMBER_TRY(Value re, signalComponent(b, moved, 0, used));
  ComplexRows y;
  EMBER_TRY(y.re, b.emit(OpKind::MatMul, {re, cosines}, {}, "re_cos"));
  EMBER_TRY(Value reSin, b.emit(OpKind::MatMul, {re, sines}, {}, "re_sin"));
  y.im = reSin;
  if (!inverse) {
    EMBER_TRY(y.im, b.emit(OpKind::Neg, {reSin}, {}, "im_from_re"));
  }
  if (moved.dims()[moved.rank() - 2] == 2) {
    EMBER_TRY(Value im, signalComponent(b, moved, 1, used));
    EMBER_TRY(Value imCos, b.emit(OpKind::MatMul, {im, cosines}, {}, "im_cos"));
    EMBER_TRY(Value imSin, b.emit(OpKind::MatMul, {im, sines}, {}, "im_sin"));
    EMBER_TRY(y.re, b.emit(inverse ? OpKind::Sub : OpKind::Add, {y.re, imSin}, {}, "re_total"));
    EMBER_TRY(y.im, b.emit(OpKind::Add, {y.im, imCos}, {}, "im_total"));
  }
  return y;
}

/// The DFT of `x` [..., 1 or 2] along `axis` at `n` points (zero-padded or
/// truncated), as MatMuls with constant cosine and sine tables; the result is
/// [..., out at axis, ..., 2] with out = n, or n / 2 + 1 when onesided.
Expected<Value> dftAlongAxis(NodeBuilder& b, const Value& x, int64_t axis, int64_t n, bool inverse,
                             bool onesided) {
  const size_t rank = x.rank();
  const int64_t in = x.dims()[size_t(axis)], used = std::min(in, n);
  const int64_t out = onesided ? n / 2 + 1 : n;
  if (n > 16384) return makeError("DFT length ", n, " is too long for the MatMul form (at most 16384)");
  // Move the signal axis last: [..., component, in].
  std::vector<int64_t> perm;
  for (size_t d = 0; d < rank - 1; ++d)
    if (int64_t(d) != axis) perm.push_back(int64_t(d));
  perm.push_back(int64_t(rank) - 1);
  perm.push_back(axis);
  EMBER_TRY(Value moved, b.transpose(x, perm, "axis_last"));
  const Dims& movedDims = moved.dims();
  EMBER_RETURN_IF_ERROR(b.reserveConstant(Type(ElemKind::F32, {2, used, out})));
  const Value cosines = b.constant(dftTable(used, out, n, inverse, false));
  const Value sines = b.constant(dftTable(used, out, n, inverse, true));
  EMBER_TRY(ComplexRows y, dftRows(b, moved, cosines, sines, used, inverse));
  Value yr = y.re, yi = y.im;
  // Back to [..., out (at axis), 2].
  Dims partDims(movedDims.begin(), movedDims.end() - 2);
  partDims.push_back(1);
  partDims.push_back(out);
  EMBER_TRY(yr, b.reshape(yr, partDims, "re_nd"));
  EMBER_TRY(yi, b.reshape(yi, partDims, "im_nd"));
  EMBER_TRY(Value both, b.emit(OpKind::Concat, {yr, yi}, Attributes{{"axis", int64_t(rank) - 2}}, "complex"));
  std::vector<int64_t> inversePerm(rank);
  for (size_t d = 0; d < rank; ++d) inversePerm[size_t(perm[d])] = int64_t(d);
  return b.transpose(both, inversePerm, "");
}

Error checkSignal(const Value& x) {
  if (x.rank() < 3 || (x.dims().back() != 1 && x.dims().back() != 2))
    return makeError("input must be [batch, ..., 1 or 2], got ", x.type.str());
  if (x.type.kind != ElemKind::F32) return makeError("unsupported element type ", elemKindName(x.type.kind));
  return Error::success();
}

/// DFT (opset 17): `axis`, `inverse`, `onesided`, `dft_length` (a constant).
Error importDFT(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_RETURN_IF_ERROR(checkSignal(x));
  EMBER_TRY(int64_t axis, b.attrInt("axis", 1));
  EMBER_TRY(axis, normalizeAxis(axis, int64_t(x.rank()) - 1));
  if (axis == 0) return makeError("axis 0 is the batch axis");
  EMBER_TRY(int64_t inverse, b.attrInt("inverse", 0));
  EMBER_TRY(int64_t onesided, b.attrInt("onesided", 0));
  int64_t n = x.dims()[size_t(axis)];
  if (b.hasInput(1)) {
    EMBER_TRY(std::vector<int64_t> lengths, b.constInts(1, "dft_length"));
    if (lengths.size() != 1 || lengths[0] < 1) return makeError("dft_length must be one positive value");
    n = lengths[0];
  }
  EMBER_TRY(Value y, dftAlongAxis(b, x, axis, n, inverse != 0, onesided != 0));
  return b.setOutput(0, y);
}

/// STFT's optional window and the frame length (the window's, or the
/// constant frame_length input, which must agree).
struct StftWindow {
  std::optional<Value> window;
  int64_t frameLength = 0;
};

Expected<StftWindow> readStftWindow(NodeBuilder& b) {
  StftWindow w;
  if (b.hasInput(2)) {
    EMBER_TRY(w.window, b.input(2));
    if (w.window->rank() != 1) return makeError("window must be 1-D, got ", w.window->type.str());
    w.frameLength = w.window->dims()[0];
  }
  if (b.hasInput(3)) {
    EMBER_TRY(std::vector<int64_t> lengths, b.constInts(3, "frame_length"));
    if (lengths.size() != 1) return makeError("frame_length must be one value");
    if (w.window && lengths[0] != w.frameLength)
      return makeError("frame_length and the window's length differ");
    w.frameLength = lengths[0];
  }
  return w;
}

/// STFT (opset 17): frames of `frame_length` every `frame_step` (constants)
/// gathered into [batch, frames, frame_length, 1|2], times the optional
/// window, then the DFT of each frame (onesided by default).
Error importSTFT(NodeBuilder& b) {
  EMBER_TRY(Value signal, b.input(0));
  EMBER_RETURN_IF_ERROR(checkSignal(signal));
  if (signal.rank() != 3) return makeError("signal must be [batch, length, 1 or 2], got ", signal.type.str());
  EMBER_TRY(std::vector<int64_t> steps, b.constInts(1, "frame_step"));
  if (steps.size() != 1 || steps[0] < 1) return makeError("frame_step must be one positive value");
  EMBER_TRY(StftWindow stftWindow, readStftWindow(b));
  const std::optional<Value>& window = stftWindow.window;
  const int64_t frameLength = stftWindow.frameLength;
  const int64_t length = signal.dims()[1];
  if (frameLength < 1 || frameLength > length)
    return makeError("frame length ", frameLength, " does not fit the signal of ", length);
  EMBER_TRY(int64_t onesided, b.attrInt("onesided", 1));
  const int64_t frames = (length - frameLength) / steps[0] + 1;
  EMBER_RETURN_IF_ERROR(b.reserveConstant(Type(ElemKind::I64, {frames, frameLength})));
  Tensor positions(Type(ElemKind::I64, {frames, frameLength}));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t t = 0; t < frameLength; ++t) positions.as<int64_t>()[f * frameLength + t] = f * steps[0] + t;
  EMBER_TRY(Value framed, b.emit(OpKind::Gather, {signal, b.constant(std::move(positions))},
                                 Attributes{{"axis", int64_t(1)}}, "frames"));
  if (window) {
    EMBER_TRY(Value w, b.reshape(*window, {1, 1, frameLength, 1}, "window"));
    EMBER_TRY(framed, b.emit(OpKind::Mul, {framed, w}, {}, "windowed"));
  }
  EMBER_TRY(Value y, dftAlongAxis(b, framed, 2, frameLength, false, onesided != 0));
  return b.setOutput(0, y);
}

/// Range of i32 or i64 in exact arithmetic (doubles lose precision beyond 2^53).
Expected<Tensor> integerRange(NodeBuilder& b, ElemKind kind) {
  EMBER_TRY(std::vector<int64_t> si, b.constInts(0, "start"));
  EMBER_TRY(std::vector<int64_t> li, b.constInts(1, "limit"));
  EMBER_TRY(std::vector<int64_t> di, b.constInts(2, "delta"));
  const __int128 span = __int128(li[0]) - si[0];
  __int128 exact = span / di[0];
  if (exact * di[0] != span) ++exact;  // ceil when the signs agree; negative otherwise
  if (exact > b.maxElements()) return makeError("range has more than ", b.maxElements(), " elements");
  const int64_t n = int64_t(std::max<__int128>(exact, 0));
  EMBER_RETURN_IF_ERROR(b.reserveConstant(Type(kind, {n})));
  Tensor t(Type(kind, {n}));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = int64_t(si[0] + __int128(i) * di[0]);
    if (kind == ElemKind::I64)
      t.as<int64_t>()[i] = v;
    else
      t.as<int32_t>()[i] = int32_t(v);
  }
  return t;
}

Error importRange(NodeBuilder& b) {
  EMBER_TRY(Value start, b.input(0));
  const ElemKind kind = start.type.kind;
  if (kind != ElemKind::I64 && kind != ElemKind::I32 && kind != ElemKind::F32)
    return makeError("unsupported element type ", elemKindName(kind));
  EMBER_TRY(std::vector<double> s, b.constFloats(0, "start"));
  EMBER_TRY(std::vector<double> l, b.constFloats(1, "limit"));
  EMBER_TRY(std::vector<double> d, b.constFloats(2, "delta"));
  if (s.size() != 1 || l.size() != 1 || d.size() != 1) return makeError("inputs must be scalars");
  if (d[0] == 0) return makeError("delta is zero");
  const double count = std::ceil((l[0] - s[0]) / d[0]);
  if (!std::isfinite(count)) return makeError("range is not finite");
  if (count > double(b.maxElements())) return makeError("range has more than ", b.maxElements(), " elements");
  const int64_t n = count > 0 ? int64_t(count) : 0;
  if (kind == ElemKind::F32) {
    EMBER_RETURN_IF_ERROR(b.reserveConstant(Type(kind, {n})));
    Tensor t(Type(kind, {n}));
    // ONNX accumulates start + i * delta in the element type.
    for (int64_t i = 0; i < n; ++i) t.as<float>()[i] = float(s[0]) + float(i) * float(d[0]);
    return b.setOutput(0, b.constant(std::move(t)));
  }
  EMBER_TRY(Tensor t, integerRange(b, kind));
  return b.setOutput(0, b.constant(std::move(t)));
}

Error importReshape(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  std::vector<int64_t> shape;
  if (b.opset() < 5) {
    EMBER_TRY(shape, b.attrInts("shape"));
  } else {
    EMBER_TRY(shape, b.constInts(1, "shape"));
  }
  EMBER_TRY(int64_t allowZero, b.attrInt("allowzero", 0));
  const Dims& in = x.dims();
  Dims dims;
  std::optional<size_t> inferred;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == 0 && !allowZero) {
      if (i >= in.size()) return makeError("shape entry ", i, " is 0 but the input has rank ", in.size());
      d = in[i];
    } else if (d == -1) {
      if (inferred) return makeError("shape has more than one -1");
      inferred = i;
      d = 1;
    } else if (d < 0) {
      return makeError("shape has negative entry ", d);
    }
    if (Error e = checkDims({known, d}, b.maxElements())) return e.withContext("shape");
    known *= d;
    dims.push_back(d);
  }
  const int64_t total = x.type.numElements();
  if (inferred) {
    if (known == 0 || total % known != 0)
      return makeError("cannot reshape ", dimsStr(in), " to ", dimsStr(dims), " with -1");
    dims[*inferred] = total / known;
  }
  if (product(dims, 0, dims.size()) != total)
    return makeError("cannot reshape ", dimsStr(in), " (", total, " elements) to ", dimsStr(dims));
  EMBER_TRY(Value out, b.reshape(x, dims, ""));
  return b.setOutput(0, out);
}

Error importFlatten(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  const int64_t rank = int64_t(x.rank());
  EMBER_TRY(int64_t axis, b.attrInt("axis", 1));
  if (axis < -rank || axis > rank) return makeError("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  const Dims& d = x.dims();
  EMBER_TRY(Value out, b.reshape(x, {product(d, 0, size_t(axis)), product(d, size_t(axis), d.size())}, ""));
  return b.setOutput(0, out);
}

Error importSqueeze(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  std::vector<int64_t> axes;
  if (b.opset() < 13) {
    EMBER_TRY(axes, b.attrInts("axes", std::vector<int64_t>{}));
  } else if (b.hasInput(1)) {
    EMBER_TRY(axes, b.constInts(1, "axes"));
  }
  const Dims& in = x.dims();
  EMBER_TRY(axes, normalizeAxes(axes, int64_t(in.size())));
  Dims dims;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool listed = std::binary_search(axes.begin(), axes.end(), int64_t(i));
    if (listed && in[i] != 1) return makeError("cannot squeeze axis ", i, " of size ", in[i]);
    if (listed || (axes.empty() && in[i] == 1)) continue;
    dims.push_back(in[i]);
  }
  EMBER_TRY(Value out, b.reshape(x, dims, ""));
  return b.setOutput(0, out);
}

Error importUnsqueeze(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  std::vector<int64_t> axes;
  if (b.opset() < 13) {
    EMBER_TRY(axes, b.attrInts("axes"));
  } else {
    EMBER_TRY(axes, b.constInts(1, "axes"));
  }
  const Dims& in = x.dims();
  const int64_t outRank = int64_t(in.size() + axes.size());
  EMBER_TRY(axes, normalizeAxes(axes, outRank));
  Dims dims;
  size_t next = 0;
  for (int64_t i = 0; i < outRank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i))
      dims.push_back(1);
    else
      dims.push_back(in[next++]);
  }
  EMBER_TRY(Value out, b.reshape(x, dims, ""));
  return b.setOutput(0, out);
}

Error importConcat(NodeBuilder& b) {
  EMBER_TRY(std::vector<Value> ins, b.inputs());
  if (ins.empty()) return makeError("needs at least one input");
  // axis was optional (default 1) before opset 4.
  EMBER_TRY(int64_t axis, b.opset() < 4 ? b.attrInt("axis", 1) : b.attrInt("axis"));
  EMBER_TRY(axis, normalizeAxis(axis, int64_t(ins[0].rank())));
  EMBER_TRY(Value out, b.emit(OpKind::Concat, ins, Attributes{{"axis", axis}}));
  return b.setOutput(0, out);
}

/// A Slice of `x` taking [begin, begin + size) along `axis`.
Expected<Value> sliceAxis(NodeBuilder& b, const Value& x, size_t axis, int64_t begin, int64_t size,
                          std::string_view suffix) {
  std::vector<int64_t> starts(x.rank(), 0), ends(x.dims()), steps(x.rank(), 1);
  starts[axis] = begin;
  ends[axis] = begin + size;
  return b.emit(OpKind::Slice, {x}, Attributes{{"starts", starts}, {"ends", ends}, {"steps", steps}}, suffix);
}

/// Split's n part sizes along an axis of `dim`: the split input (opset 13)
/// or attribute, num_outputs equal chunks (opset 18), or n equal parts.
Expected<std::vector<int64_t>> splitSizes(NodeBuilder& b, int64_t dim, int64_t n) {
  std::vector<int64_t> sizes;
  if (b.opset() >= 13 && b.hasInput(1)) {
    EMBER_TRY(sizes, b.constInts(1, "split"));
  } else if (b.opset() < 13 && b.hasAttr("split")) {
    EMBER_TRY(sizes, b.attrInts("split"));
  } else if (b.hasAttr("num_outputs")) {
    // Opset 18: equal chunks, the last one smaller.
    EMBER_TRY(int64_t parts, b.attrInt("num_outputs"));
    if (parts != n || n <= 0) return makeError("num_outputs ", parts, " does not match ", n, " outputs");
    const int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
  } else {
    if (n <= 0 || dim % n != 0) return makeError("cannot split size ", dim, " into ", n, " equal parts");
    sizes.assign(size_t(n), dim / n);
  }
  if (int64_t(sizes.size()) != n) return makeError("split has ", sizes.size(), " sizes for ", n, " outputs");
  int64_t offset = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > dim - offset) return makeError("split sizes do not add up to ", dim);
    offset += s;
  }
  if (offset != dim) return makeError("split sizes add up to ", offset, ", not ", dim);
  return sizes;
}

Error importSplit(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(int64_t axis, b.attrInt("axis", 0));
  EMBER_TRY(axis, normalizeAxis(axis, int64_t(x.rank())));
  const int64_t dim = x.dims()[size_t(axis)];
  const int64_t n = int64_t(b.numOutputs());
  EMBER_TRY(std::vector<int64_t> sizes, splitSizes(b, dim, n));
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    EMBER_TRY(Value part, sliceAxis(b, x, size_t(axis), offset, sizes[size_t(i)], std::to_string(i)));
    EMBER_RETURN_IF_ERROR(b.setOutput(size_t(i), part));
    offset += sizes[size_t(i)];
  }
  return Error::success();
}

/// Slice's starts, ends, axes and steps (attributes before opset 10,
/// constant inputs since), of one length; axes and steps defaulted.
struct SliceSpec {
  std::vector<int64_t> starts, ends, axes, steps;
};

Expected<SliceSpec> readSliceSpec(NodeBuilder& b) {
  SliceSpec s;
  if (b.opset() < 10) {
    EMBER_TRY(s.starts, b.attrInts("starts"));
    EMBER_TRY(s.ends, b.attrInts("ends"));
    if (b.hasAttr("axes")) {
      EMBER_TRY(s.axes, b.attrInts("axes"));
    }
  } else {
    EMBER_TRY(s.starts, b.constInts(1, "starts"));
    EMBER_TRY(s.ends, b.constInts(2, "ends"));
    if (b.hasInput(3)) {
      EMBER_TRY(s.axes, b.constInts(3, "axes"));
    }
    if (b.hasInput(4)) {
      EMBER_TRY(s.steps, b.constInts(4, "steps"));
    }
  }
  if (s.axes.empty() && !(b.hasInput(3) || b.hasAttr("axes")))
    for (size_t i = 0; i < s.starts.size(); ++i) s.axes.push_back(int64_t(i));
  if (s.steps.empty()) s.steps.assign(s.starts.size(), 1);
  if (s.ends.size() != s.starts.size() || s.axes.size() != s.starts.size() ||
      s.steps.size() != s.starts.size())
    return makeError("starts, ends, axes and steps have different lengths");
  return s;
}

/// One axis of Ember's Slice: start and end clamped into the axis, an empty
/// slice as end == start, and a step no longer than the axis.
struct AxisSlice {
  int64_t start, end, step;
};

AxisSlice clampedSlice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  // A step longer than the axis takes at most one element: only its sign matters.
  const int64_t longest = std::max<int64_t>(dim, 1);
  step = std::clamp<int64_t>(step, -longest, longest);
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  int64_t extent = 0;
  if (dim == 0) {
    start = end = 0;
  } else if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    extent = end > start ? 1 + (end - start - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    extent = start > end ? 1 + (start - end - 1) / -step : 0;
  }
  if (extent == 0) end = start;
  return {start, end, step};
}

Error importSlice(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  const Dims& in = x.dims();
  const int64_t rank = int64_t(in.size());
  EMBER_TRY(SliceSpec spec, readSliceSpec(b));
  const auto& [starts, ends, axes, steps] = spec;

  std::vector<int64_t> fullStarts(size_t(rank), 0), fullEnds(in), fullSteps(size_t(rank), 1);
  std::vector<bool> seen(size_t(rank), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    EMBER_TRY(int64_t axis, normalizeAxis(axes[i], rank));
    if (seen[size_t(axis)]) return makeError("axis ", axis, " is sliced twice");
    seen[size_t(axis)] = true;
    if (steps[i] == 0) return makeError("step is zero");
    const AxisSlice slice = clampedSlice(in[size_t(axis)], starts[i], ends[i], steps[i]);
    fullStarts[size_t(axis)] = slice.start;
    fullEnds[size_t(axis)] = slice.end;
    fullSteps[size_t(axis)] = slice.step;
  }
  EMBER_TRY(Value out, b.emit(OpKind::Slice, {x},
                              Attributes{{"starts", fullStarts}, {"ends", fullEnds}, {"steps", fullSteps}}));
  return b.setOutput(0, out);
}

Error importTranspose(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  std::vector<int64_t> reversed;
  for (int64_t i = int64_t(x.rank()) - 1; i >= 0; --i) reversed.push_back(i);
  EMBER_TRY(std::vector<int64_t> perm, b.attrInts("perm", reversed));
  EMBER_TRY(Value out, b.transpose(x, perm, ""));
  return b.setOutput(0, out);
}

Error importExpand(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(std::vector<int64_t> shape, b.constInts(1, "shape"));
  EMBER_TRY(Value out, b.emit(OpKind::Broadcast, {x}, Attributes{{"shape", shape}}));
  return b.setOutput(0, out);
}

Error importTile(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(std::vector<int64_t> repeats, b.constInts(1, "repeats"));
  EMBER_TRY(Value out, b.emit(OpKind::Tile, {x}, Attributes{{"repeats", repeats}}));
  return b.setOutput(0, out);
}

Error importPad(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  const int64_t rank = int64_t(x.rank());
  EMBER_TRY(std::string mode, b.attrString("mode", "constant"));
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return makeError("unsupported mode '", mode, "'");
  std::vector<int64_t> pads;
  double value = 0;
  if (b.opset() < 11) {
    if (b.hasAttr("paddings")) return makeError("attribute 'paddings' (opset 1) is unsupported");
    EMBER_TRY(pads, b.attrInts("pads"));
    EMBER_TRY(value, b.attrFloat("value", 0.0));
  } else {
    EMBER_TRY(pads, b.constInts(1, "pads"));
    if (b.hasInput(2)) {
      EMBER_TRY(std::vector<double> v, b.constFloats(2, "constant_value"));
      if (v.size() != 1) return makeError("input 'constant_value' must hold one value");
      value = v[0];
    }
    if (b.hasInput(3)) {
      // Opset 18: pads for the listed axes only.
      EMBER_TRY(std::vector<int64_t> axes, b.constInts(3, "axes"));
      if (pads.size() != 2 * axes.size()) return makeError("pads must hold two values per axis");
      std::vector<int64_t> full(size_t(2 * rank), 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        EMBER_TRY(int64_t a, normalizeAxis(axes[i], rank));
        full[size_t(a)] = pads[i];
        full[size_t(a + rank)] = pads[i + axes.size()];
      }
      pads = full;
    }
  }
  if (int64_t(pads.size()) != 2 * rank)
    return makeError("pads has ", pads.size(), " values for rank ", rank, " (needs ", 2 * rank, ")");
  EMBER_TRY(Value out,
            b.emit(OpKind::Pad, {x}, Attributes{{"pads", pads}, {"mode", mode}, {"value", value}}));
  return b.setOutput(0, out);
}

/// Dropout is the identity at inference, and in training mode with ratio 0
/// (PyTorch exports that for some models); its mask is then all true.
/// Training mode with a positive ratio is random and is declined.
Error importDropout(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  if (b.hasInput(2)) {
    EMBER_TRY(std::vector<double> training, b.constFloats(2, "training_mode"));
    double ratio = 0.5;
    if (b.hasInput(1)) {
      EMBER_TRY(std::vector<double> ratios, b.constFloats(1, "ratio"));
      if (ratios.size() != 1) return makeError("input 'ratio' must hold one value");
      ratio = ratios[0];
    }
    if (!training.empty() && training[0] != 0 && ratio != 0)
      return makeError("training_mode=1 with ratio ", ratio,
                       " is unsupported (random dropout); export the model in eval mode");
  }
  if (b.outputUsed(1)) {
    EMBER_RETURN_IF_ERROR(b.reserveConstant(Type(ElemKind::Bool, x.dims())));
    Tensor mask(Type(ElemKind::Bool, x.dims()));
    for (int64_t i = 0; i < mask.type().numElements(); ++i) mask.as<uint8_t>()[i] = 1;
    EMBER_RETURN_IF_ERROR(b.setOutput(1, b.constant(std::move(mask))));
  }
  return b.setOutput(0, x);
}

/// DepthToSpace and SpaceToDepth: a reshape to rank 6, a transpose, and a reshape back.
OpHandler depthSpace(bool toSpace) {
  return [toSpace](NodeBuilder& b) -> Error {
    EMBER_TRY(Value x, b.input(0));
    if (x.rank() != 4) return makeError("input must have rank 4, not ", x.rank());
    EMBER_TRY(int64_t bs, b.attrInt("blocksize"));
    // Bounded so that bs * bs and c * bs * bs cannot overflow.
    if (bs <= 0 || bs > 4096) return makeError("blocksize ", bs, " is out of range [1, 4096]");
    const int64_t n = x.dims()[0], c = x.dims()[1], h = x.dims()[2], w = x.dims()[3];
    Dims split, out;
    std::vector<int64_t> perm;
    if (toSpace) {
      EMBER_TRY(std::string mode, b.attrString("mode", "DCR"));
      if (c % (bs * bs) != 0) return makeError("channels ", c, " are not divisible by blocksize^2");
      if (mode == "DCR") {
        split = {n, bs, bs, c / (bs * bs), h, w};
        perm = {0, 3, 4, 1, 5, 2};
      } else if (mode == "CRD") {
        split = {n, c / (bs * bs), bs, bs, h, w};
        perm = {0, 1, 4, 2, 5, 3};
      } else {
        return makeError("unknown mode '", mode, "'");
      }
      out = {n, c / (bs * bs), h * bs, w * bs};
    } else {
      if (h % bs != 0 || w % bs != 0) return makeError("spatial dims are not divisible by blocksize");
      split = {n, c, h / bs, bs, w / bs, bs};
      perm = {0, 3, 5, 1, 2, 4};
      out = {n, c * bs * bs, h / bs, w / bs};
    }
    EMBER_TRY(Value v, b.reshape(x, split, "split"));
    EMBER_TRY(v, b.transpose(v, perm, ""));
    EMBER_TRY(v, b.reshape(v, out, "merge"));
    return b.setOutput(0, v);
  };
}

}  // namespace

Error importGatherAlongAxis(NodeBuilder& b, OpKind kind) {
  EMBER_TRY(Value data, b.input(0));
  EMBER_TRY(Value indices, b.input(1));
  EMBER_TRY(int64_t axis, b.attrInt("axis", 0));
  EMBER_TRY(axis, normalizeAxis(axis, int64_t(data.rank())));
  EMBER_TRY(Value out, b.emit(kind, {data, indices}, Attributes{{"axis", axis}}));
  return b.setOutput(0, out);
}

void registerTensorOps(OpTable& t) {
  t["DepthToSpace"] = depthSpace(true);
  t["SpaceToDepth"] = depthSpace(false);
  t["Constant"] = importConstant;
  t["ConstantOfShape"] = importConstantOfShape;
  t["Shape"] = importShape;
  t["Size"] = importSize;
  t["Range"] = importRange;
  t["DFT"] = importDFT;
  t["STFT"] = importSTFT;
  t["HannWindow"] = window(0.5, 0.5, 0);
  t["HammingWindow"] = window(25.0 / 46, 1 - 25.0 / 46, 0);
  t["BlackmanWindow"] = window(0.42, 0.5, 0.08);
  t["Reshape"] = importReshape;
  t["Flatten"] = importFlatten;
  t["Squeeze"] = importSqueeze;
  t["Unsqueeze"] = importUnsqueeze;
  t["Concat"] = importConcat;
  t["Split"] = importSplit;
  t["Slice"] = importSlice;
  t["Gather"] = [](NodeBuilder& b) { return importGatherAlongAxis(b, OpKind::Gather); };
  t["Transpose"] = importTranspose;
  t["Expand"] = importExpand;
  t["Tile"] = importTile;
  t["Pad"] = importPad;
  t["Dropout"] = importDropout;
}

}  // namespace ember::onnx_import
