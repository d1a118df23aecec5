#include "ember/Type.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace ember {

size_t elemSize(ElemKind kind) {
  switch (kind) {
    case ElemKind::Int8Q:
    case ElemKind::UInt8Q:
    case ElemKind::Bool:
      return 1;
    case ElemKind::F16:
    case ElemKind::BF16:
      return 2;
    case ElemKind::F32:
    case ElemKind::Int32Q:
    case ElemKind::I32:
      return 4;
    case ElemKind::I64:
    case ElemKind::F64:
      return 8;
  }
  return 1;
}

namespace {
struct KindName {
  ElemKind kind;
  std::string_view name;
};
constexpr KindName kKindNames[] = {
    {ElemKind::F32, "f32"},    {ElemKind::F16, "f16"},     {ElemKind::BF16, "bf16"}, {ElemKind::Int8Q, "i8q"},
    {ElemKind::UInt8Q, "u8q"}, {ElemKind::Int32Q, "i32q"}, {ElemKind::I32, "i32"},   {ElemKind::I64, "i64"},
    {ElemKind::Bool, "bool"},  {ElemKind::F64, "f64"},
};
}  // namespace

std::string_view elemKindName(ElemKind kind) {
  for (const auto& k : kKindNames)
    if (k.kind == kind) return k.name;
  return "?";
}

std::optional<ElemKind> elemKindFromName(std::string_view name) {
  for (const auto& k : kKindNames)
    if (k.name == name) return k.kind;
  return std::nullopt;
}

bool isQuantized(ElemKind kind) {
  return kind == ElemKind::Int8Q || kind == ElemKind::UInt8Q || kind == ElemKind::Int32Q;
}

bool isFloat(ElemKind kind) {
  return kind == ElemKind::F32 || kind == ElemKind::F16 || kind == ElemKind::BF16 || kind == ElemKind::F64;
}

int64_t Type::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Dims Type::strides() const {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

std::string dimsStr(const Dims& dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(dims[i]);
  }
  return s;
}

std::string Type::str() const {
  std::ostringstream os;
  os << elemKindName(kind) << '<' << dimsStr(dims);
  if (isQuantized(kind)) os << ':' << scale << ',' << offset;
  os << '>';
  return os.str();
}

bool Type::operator==(const Type& other) const {
  if (kind != other.kind || dims != other.dims) return false;
  if (!isQuantized(kind)) return true;
  return scale == other.scale && offset == other.offset;
}

Error checkDims(const Dims& dims, int64_t maxElements) {
  if (dims.size() > kMaxRank) return makeError("rank ", dims.size(), " exceeds the maximum rank ", kMaxRank);
  int64_t product = 1;
  for (int64_t d : dims) {
    if (d < 0) return makeError("negative dimension ", d, " in shape [", dimsStr(dims), "]");
    if (d != 0 && product > maxElements / d)
      return makeError("shape [", dimsStr(dims), "] has more than ", maxElements, " elements");
    product *= d;
  }
  return Error::success();
}

Error checkTensorBytes(const Type& type, int64_t maxBytes) {
  const int64_t size = int64_t(elemSize(type.kind));
  EMBER_RETURN_IF_ERROR(checkDims(type.dims, std::numeric_limits<int64_t>::max() / size));
  const int64_t bytes = type.numElements() * size;
  if (bytes > maxBytes)
    return makeError("tensor ", type.str(), " needs ", bytes, " bytes, more than the limit of ", maxBytes,
                     " bytes");
  return Error::success();
}

Expected<Dims> broadcastDims(const Dims& a, const Dims& b) {
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return makeError("shapes [", dimsStr(a), "] and [", dimsStr(b), "] do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace ember
