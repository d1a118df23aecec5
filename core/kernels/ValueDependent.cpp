// Ops whose output shape depends on input values (NonZero, Unique,
// NonMaxSuppression). Each writes its results at their static upper bound,
// zero past the valid entries, and the number of valid entries as an i64
// scalar in its last result (Ops.def). The importer slices the results to the
// exact shape when the inputs are constants (docs/importer.md).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "KernelUtil.h"
#include "ember/OpAttrs.h"

namespace ember::kernels {
namespace {

void zeroFill(const TensorRef& t) {
  if (t.numElements() > 0) std::memset(t.data, 0, t.type.sizeInBytes());
}

/// Element i as a double (raw integers for quantized kinds), for comparisons.
double elementAt(const ConstTensorRef& t, int64_t i) {
  switch (t.type.kind) {
    case ElemKind::F32:
      return double(t.as<float>()[i]);
    case ElemKind::F16:
      return double(halfToFloat(t.as<uint16_t>()[i]));
    case ElemKind::BF16:
      return double(bfloat16ToFloat(t.as<uint16_t>()[i]));
    case ElemKind::Int8Q:
      return double(t.as<int8_t>()[i]);
    case ElemKind::UInt8Q:
    case ElemKind::Bool:
      return double(t.as<uint8_t>()[i]);
    case ElemKind::Int32Q:
    case ElemKind::I32:
      return double(t.as<int32_t>()[i]);
    case ElemKind::I64:
      return double(t.as<int64_t>()[i]);
    default: {
      // Kinds added later (f64) are compared through their bytes' double value.
      double v = 0;
      if (elemSize(t.type.kind) == sizeof(double))
        std::memcpy(&v, static_cast<const char*>(t.data) + i * int64_t(sizeof(double)), sizeof(double));
      return v;
    }
  }
}

Error nonZero(Inputs in, Outputs out) {
  const ConstTensorRef& x = in[0];
  zeroFill(out[0]);
  const Dims& dims = x.type.dims;
  const int64_t rank = int64_t(dims.size()), numel = x.numElements();
  int64_t* indices = out[0].as<int64_t>();
  const size_t size = elemSize(x.type.kind);
  const auto* bytes = static_cast<const unsigned char*>(x.data);
  int64_t count = 0;
  for (int64_t i = 0; i < numel; ++i) {
    // Non-zero: any non-zero byte, except float -0.0, which is zero.
    bool nonzero = std::any_of(bytes + i * int64_t(size), bytes + (i + 1) * int64_t(size),
                               [](unsigned char c) { return c != 0; });
    if (nonzero && isFloat(x.type.kind)) nonzero = elementAt(x, i) != 0;
    if (!nonzero) continue;
    int64_t rest = i;
    for (int64_t d = rank; d-- > 0;) {
      indices[d * numel + count] = rest % dims[size_t(d)];
      rest /= dims[size_t(d)];
    }
    ++count;
  }
  *out[1].as<int64_t>() = count;
  return Error::success();
}

/// The input of Unique as [outer, n, inner]: slice j is x[:, j, :].
struct UniqueSlices {
  const ConstTensorRef& x;
  int64_t n, outer, inner;

  double element(int64_t slice, int64_t k) const {  // k in [0, outer * inner)
    return elementAt(x, ((k / inner) * n + slice) * inner + k % inner);
  }
  /// Lexicographic: <0, 0, >0.
  int compare(int64_t a, int64_t b) const {
    for (int64_t k = 0; k < outer * inner; ++k) {
      double va = element(a, k), vb = element(b, k);
      if (va < vb) return -1;
      if (va > vb) return 1;
    }
    return 0;
  }
};

/// Slices grouped by value: the group of each slice, and each group's first
/// (lowest) slice in value order.
struct SliceGroups {
  std::vector<int64_t> groupOf, groupFirst;
};

SliceGroups groupEqualSlices(const UniqueSlices& slices) {
  std::vector<int64_t> order(static_cast<size_t>(slices.n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return slices.compare(a, b) < 0; });
  SliceGroups g;
  g.groupOf.resize(static_cast<size_t>(slices.n));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || slices.compare(order[i - 1], order[i]) != 0) g.groupFirst.push_back(order[i]);
    g.groupOf[size_t(order[i])] = int64_t(g.groupFirst.size()) - 1;
  }
  // groupFirst is in value order; its entries are the lowest index of each
  // group because the sort is stable.
  return g;
}

Error unique(const Attributes& attrs, Inputs in, Outputs out) {
  const ConstTensorRef& x = in[0];
  for (const TensorRef& t : out) zeroFill(t);
  const Dims& dims = x.type.dims;
  const size_t rank = dims.size();
  const UniqueAttrs a = UniqueAttrs::from(attrs);
  const int64_t axis = a.axis;
  const bool sorted = a.sorted != 0;
  const bool flat = axis == int64_t(rank);
  const UniqueSlices slices{x, flat ? x.numElements() : dims[size_t(axis)],
                            flat ? 1 : product(dims, 0, size_t(axis)),
                            flat ? 1 : product(dims, size_t(axis) + 1)};
  const int64_t n = slices.n, outer = slices.outer, inner = slices.inner;
  // First occurrences in input order, then (sorted) ordered by value.
  const SliceGroups g = groupEqualSlices(slices);
  std::vector<int64_t> groups(g.groupFirst.size());
  std::iota(groups.begin(), groups.end(), 0);
  if (!sorted)
    std::sort(groups.begin(), groups.end(),
              [&](int64_t a, int64_t b) { return g.groupFirst[size_t(a)] < g.groupFirst[size_t(b)]; });
  std::vector<int64_t> rankOfGroup(groups.size());
  for (size_t r = 0; r < groups.size(); ++r) rankOfGroup[size_t(groups[r])] = int64_t(r);
  const int64_t unique = int64_t(groups.size());
  std::vector<int64_t> inverse(static_cast<size_t>(n)), counts(size_t(unique), 0);
  for (int64_t i = 0; i < n; ++i) {
    inverse[size_t(i)] = rankOfGroup[size_t(g.groupOf[size_t(i)])];
    ++counts[size_t(inverse[size_t(i)])];
  }
  // Values: slice groupFirst[groups[r]] goes to position r.
  const size_t size = elemSize(x.type.kind);
  const auto* src = static_cast<const char*>(x.data);
  auto* dst = static_cast<char*>(out[0].data);
  for (int64_t r = 0; r < unique; ++r) {
    const int64_t from = g.groupFirst[size_t(groups[size_t(r)])];
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + ((o * n + r) * inner) * int64_t(size), src + ((o * n + from) * inner) * int64_t(size),
                  size_t(inner) * size);
    out[1].as<int64_t>()[r] = from;
    out[3].as<int64_t>()[r] = counts[size_t(r)];
  }
  std::copy(inverse.begin(), inverse.end(), out[2].as<int64_t>());
  *out[4].as<int64_t>() = unique;
  return Error::success();
}

struct Box {
  float y1, x1, y2, x2;
  float area() const { return (y2 - y1) * (x2 - x1); }
};

Box boxAt(const float* b, bool centerPoint) {
  if (centerPoint) {
    // [x_center, y_center, width, height]
    return {b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

/// Whether IoU(a, b) > threshold (a degenerate box never suppresses).
bool suppresses(const Box& a, const Box& b, float threshold) {
  const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const float iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (ih <= 0 || iw <= 0) return false;
  const float intersection = ih * iw;
  const float areaA = a.area(), areaB = b.area();
  if (areaA <= 0 || areaB <= 0) return false;
  return intersection / (areaA + areaB - intersection) > threshold;
}

Error nonMaxSuppression(const Attributes& attrs, Inputs in, Outputs out) {
  zeroFill(out[0]);
  const Dims& bd = in[0].type.dims;
  const int64_t batches = bd[0], boxes = bd[1], classes = in[1].type.dims[1];
  const NonMaxSuppressionAttrs a = NonMaxSuppressionAttrs::from(attrs);
  const bool centerPoint = a.centerPointBox != 0;
  const int64_t maxPerClass = std::min(a.maxOutputBoxesPerClass, boxes);
  const float iouThreshold = float(a.iouThreshold);
  const bool hasScoreThreshold = a.scoreThreshold.has_value();
  const float scoreThreshold = float(a.scoreThreshold.value_or(0.0));
  const float* boxData = in[0].as<float>();
  const float* scoreData = in[1].as<float>();
  int64_t* selected = out[0].as<int64_t>();
  int64_t count = 0;
  std::vector<int64_t> candidates;
  std::vector<Box> kept;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const float* scores = scoreData + (b * classes + c) * boxes;
      candidates.clear();
      for (int64_t i = 0; i < boxes; ++i)
        if (!hasScoreThreshold || scores[i] > scoreThreshold) candidates.push_back(i);
      std::stable_sort(candidates.begin(), candidates.end(),
                       [scores](int64_t i, int64_t j) { return scores[i] > scores[j]; });
      kept.clear();
      for (int64_t i : candidates) {
        if (int64_t(kept.size()) >= maxPerClass) break;
        const Box box = boxAt(boxData + (b * boxes + i) * 4, centerPoint);
        if (std::any_of(kept.begin(), kept.end(),
                        [&](const Box& k) { return suppresses(k, box, iouThreshold); }))
          continue;
        kept.push_back(box);
        selected[count * 3] = b;
        selected[count * 3 + 1] = c;
        selected[count * 3 + 2] = i;
        ++count;
      }
    }
  *out[1].as<int64_t>() = count;
  return Error::success();
}

}  // namespace

Error runValueDependent(OpKind kind, const Attributes& attrs, Inputs in, Outputs out) {
  switch (kind) {
    case OpKind::NonZero:
      return nonZero(in, out);
    case OpKind::Unique:
      return unique(attrs, in, out);
    case OpKind::NonMaxSuppression:
      return nonMaxSuppression(attrs, in, out);
    default:
      return makeError(opName(kind), ": not a value-dependent op");
  }
}

}  // namespace ember::kernels
