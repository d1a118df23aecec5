#include "ember/Tensor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "ember/TensorHash.h"

namespace ember {

namespace {

// Every payload is preceded by a header saying how to release it, which keeps
// the deleter stateless and the payload 64-byte aligned.
struct StorageHeader {
  void* base;          ///< what was allocated
  size_t mappedBytes;  ///< the mapping's length, or 0 for aligned_alloc
};
constexpr size_t kHeaderBytes = 64;
static_assert(sizeof(StorageHeader) <= kHeaderBytes);

// Large payloads (a model's weights) are mapped directly, 2 MiB aligned, with
// transparent huge pages requested: the kernel hands out zeroed pages anyway,
// so nothing is memset, and one 2 MiB fault replaces 512 small ones. Page
// faults dominated importing and quantizing ResNet-50 on virtual machines.
constexpr size_t kHugePageBytes = size_t(2) << 20;
// Under AddressSanitizer every payload stays on the heap, where overflows past
// its end are caught (a private mapping has no redzone).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMapLargePayloads = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kMapLargePayloads = false;
#else
constexpr bool kMapLargePayloads = true;
#endif
#else
constexpr bool kMapLargePayloads = true;
#endif

StorageHeader& headerOf(std::byte* payload) {
  return *reinterpret_cast<StorageHeader*>(payload - kHeaderBytes);
}

std::byte* mapStorage(size_t rounded) {
  // Room for the header before a 2 MiB boundary at any page-aligned base.
  const size_t mappedBytes = rounded + kHugePageBytes;
  void* base = ::mmap(nullptr, mappedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();
  // The first 2 MiB boundary at least kHeaderBytes past the base, found as an
  // offset so the payload pointer derives from the mapping (no int-to-pointer).
  const auto address = reinterpret_cast<uintptr_t>(base) + kHeaderBytes;
  const size_t offset = kHeaderBytes + ((kHugePageBytes - address % kHugePageBytes) % kHugePageBytes);
  std::byte* payload = static_cast<std::byte*>(base) + offset;
  // Advice only: without transparent huge pages the mapping still works.
  (void)::madvise(payload, rounded, MADV_HUGEPAGE);
  headerOf(payload) = {base, mappedBytes};
  return payload;
}

/// 64-byte aligned storage for `bytes`, zeroed from byte `zeroFrom` on.
std::byte* allocateStorage(size_t bytes, size_t zeroFrom) {
  // Round up to whole cache lines; never allocate zero bytes so data() is
  // always a valid pointer.
  size_t rounded = ((bytes + 63) / 64) * 64;
  if (rounded == 0) rounded = 64;
  if (kMapLargePayloads && rounded >= kHugePageBytes) return mapStorage(rounded);  // zeroed by the kernel
  void* base = std::aligned_alloc(64, kHeaderBytes + rounded);
  if (!base) throw std::bad_alloc();
  std::byte* payload = static_cast<std::byte*>(base) + kHeaderBytes;
  headerOf(payload) = {base, 0};
  std::memset(payload + zeroFrom, 0, rounded - zeroFrom);
  return payload;
}

}  // namespace

void Tensor::FreeAligned::operator()(std::byte* payload) const {
  const StorageHeader header = headerOf(payload);
  if (header.mappedBytes)
    ::munmap(header.base, header.mappedBytes);
  else
    std::free(header.base);
}

Tensor::Tensor(Type type) : type_(std::move(type)) {
  storage_.reset(allocateStorage(type_.sizeInBytes(), 0));
}

Tensor Tensor::forOverwrite(Type type) {
  Tensor t;
  t.type_ = std::move(type);
  t.storage_.reset(allocateStorage(t.sizeInBytes(), t.sizeInBytes()));
  return t;
}

Tensor::Tensor(const Tensor& other) : type_(other.type_) {
  // The copy overwrites the payload: only the padding is zeroed.
  const size_t bytes = other.storage_ ? sizeInBytes() : 0;
  storage_.reset(allocateStorage(sizeInBytes(), bytes));
  if (bytes) std::memcpy(data(), other.data(), bytes);
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

void Tensor::reshape(Dims dims) {
  Type t = type_.withDims(std::move(dims));
  assert(t.numElements() == type_.numElements());
  type_ = std::move(t);
}

bool Tensor::bitwiseEqual(const Tensor& other) const {
  if (type_ != other.type_) return false;
  return std::memcmp(data(), other.data(), sizeInBytes()) == 0;
}

namespace {

// Not the standard FNV basis (14695981039346656037, one digit longer): the
// hash keys quantization profiles already written, so it stays as it is.
constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t fnvFeed(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * kFnvPrime;
  return h;
}

/// The hash state after the type, before the payload.
uint64_t fnvHeader(const Type& type) {
  auto kind = static_cast<uint8_t>(type.kind);
  uint64_t h = fnvFeed(kFnvOffset, &kind, 1);
  return fnvFeed(h, type.dims.data(), type.dims.size() * sizeof(int64_t));
}

/// One payload chain of hashTensors.
struct FnvLane {
  const unsigned char* bytes;
  size_t remaining;
  uint64_t h;
  size_t index;
};

/// Advances the first `Lanes` lanes by `n` bytes each, interleaved so that
/// the independent multiplies overlap.
template <int Lanes>
void feedLanes(FnvLane* lanes, size_t n) {
  const unsigned char* bytes[Lanes];
  uint64_t h[Lanes];
  for (int l = 0; l < Lanes; ++l) bytes[l] = lanes[l].bytes, h[l] = lanes[l].h;
  for (size_t i = 0; i < n; ++i)
    for (int l = 0; l < Lanes; ++l) h[l] = (h[l] ^ bytes[l][i]) * kFnvPrime;
  for (int l = 0; l < Lanes; ++l) {
    lanes[l].bytes += n;
    lanes[l].remaining -= n;
    lanes[l].h = h[l];
  }
}

}  // namespace

uint64_t Tensor::hash() const {
  uint64_t h = fnvHeader(type_);
  return data() ? fnvFeed(h, data(), sizeInBytes()) : h;
}

std::vector<uint64_t> hashTensors(std::span<const Tensor* const> tensors) {
  constexpr int kLanes = 8;
  std::vector<uint64_t> hashes(tensors.size());
  // Largest first, so that the last lanes to finish are short ones.
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tensors[a]->sizeInBytes() > tensors[b]->sizeInBytes(); });
  size_t next = 0;
  FnvLane lanes[kLanes];
  int active = 0;
  for (;;) {
    // Refill the empty lanes; a tensor without payload is finished at once.
    while (active < kLanes && next < order.size()) {
      const size_t index = order[next++];
      const Tensor& t = *tensors[index];
      uint64_t h = fnvHeader(t.type());
      if (!t.data() || t.sizeInBytes() == 0)
        hashes[index] = h;
      else
        lanes[active++] = {static_cast<const unsigned char*>(t.data()), t.sizeInBytes(), h, index};
    }
    if (active == 0) break;
    size_t n = lanes[0].remaining;
    for (int l = 1; l < active; ++l) n = std::min(n, lanes[l].remaining);
    using Feed = void (*)(FnvLane*, size_t);
    static constexpr Feed kFeeds[kLanes + 1] = {nullptr,      feedLanes<1>, feedLanes<2>,
                                                feedLanes<3>, feedLanes<4>, feedLanes<5>,
                                                feedLanes<6>, feedLanes<7>, feedLanes<8>};
    kFeeds[active](lanes, n);
    // Retire the finished lanes, keeping the active ones at the front.
    int kept = 0;
    for (int l = 0; l < active; ++l) {
      if (lanes[l].remaining == 0)
        hashes[lanes[l].index] = lanes[l].h;
      else
        lanes[kept++] = lanes[l];
    }
    active = kept;
  }
  return hashes;
}

double Tensor::elementAsDouble(int64_t i) const {
  switch (type_.kind) {
    case ElemKind::F32:
      return as<float>()[i];
    case ElemKind::F16:
      return halfToFloat(as<uint16_t>()[i]);
    case ElemKind::BF16:
      return bfloat16ToFloat(as<uint16_t>()[i]);
    case ElemKind::Int8Q:
      return as<int8_t>()[i];
    case ElemKind::UInt8Q:
      return as<uint8_t>()[i];
    case ElemKind::Int32Q:
    case ElemKind::I32:
      return as<int32_t>()[i];
    case ElemKind::I64:
      return double(as<int64_t>()[i]);
    case ElemKind::Bool:
      return as<uint8_t>()[i] ? 1.0 : 0.0;
    case ElemKind::F64:
      return as<double>()[i];
  }
  return 0;
}

namespace {
/// Converts with saturation and NaN -> 0, so out-of-range values never invoke UB.
template <typename Int>
Int saturatingCast(double v) {
  if (std::isnan(v)) return 0;
  constexpr double lo = double(std::numeric_limits<Int>::min());
  constexpr double hi = double(std::numeric_limits<Int>::max());
  if (v <= lo) return std::numeric_limits<Int>::min();
  if (v >= hi) return std::numeric_limits<Int>::max();
  return static_cast<Int>(v);
}
}  // namespace

void Tensor::setElementFromDouble(int64_t i, double v) {
  switch (type_.kind) {
    case ElemKind::F32:
      as<float>()[i] = float(v);
      break;
    case ElemKind::F16:
      as<uint16_t>()[i] = doubleToHalf(v);
      break;
    case ElemKind::BF16:
      as<uint16_t>()[i] = doubleToBFloat16(v);
      break;
    case ElemKind::Int8Q:
      as<int8_t>()[i] = saturatingCast<int8_t>(v);
      break;
    case ElemKind::UInt8Q:
      as<uint8_t>()[i] = saturatingCast<uint8_t>(v);
      break;
    case ElemKind::Int32Q:
    case ElemKind::I32:
      as<int32_t>()[i] = saturatingCast<int32_t>(v);
      break;
    case ElemKind::I64:
      as<int64_t>()[i] = saturatingCast<int64_t>(v);
      break;
    case ElemKind::Bool:
      as<uint8_t>()[i] = v != 0 ? 1 : 0;
      break;
    case ElemKind::F64:
      as<double>()[i] = v;
      break;
  }
}

namespace {
/// double -> float rounded to odd: truncated, with the last bit set when
/// inexact. Rounding that to 13 or more fewer bits (half, bfloat16) then
/// equals rounding the double directly to nearest even.
float roundToOddFloat(double d) {
  float f = float(d);
  if (std::isnan(d) || double(f) == d) return f;
  if (std::fabs(double(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1u;
  std::memcpy(&f, &bits, 4);
  return f;
}
}  // namespace

uint16_t doubleToHalf(double d) { return floatToHalf(roundToOddFloat(d)); }
uint16_t doubleToBFloat16(double d) { return floatToBFloat16(roundToOddFloat(d)); }

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mant = x & 0x7fffffu;
  int32_t exp = int32_t((x >> 23) & 0xffu);
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0));  // inf / nan
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return uint16_t(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {
    if (e < -10) return uint16_t(sign);  // underflow -> signed zero
    mant |= 0x800000u;
    uint32_t shift = uint32_t(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exponent: correct
  return uint16_t(half);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int32_t e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t floatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return uint16_t((x + rounding) >> 16);
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t x = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace ember
