// Fuzz target: the .npy writer. The input chooses an element kind, a shape
// and the array's bytes; what serializeNpy writes must be a NumPy file whose
// header ends on a 64-byte boundary and that parseNpy reads back with the same
// shape and the same bytes (bf16, which NumPy lacks, widened to f32).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "FuzzCheck.h"
#include "ember/Npy.h"
#include "ember/Tensor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  size_t at = 0;
  auto next = [&]() -> uint8_t { return at < size ? data[at++] : 0; };
  const ElemKind kind = ElemKind(next() % (uint8_t(ElemKind::F64) + 1));
  Dims dims;
  const int rank = next() % 6;
  for (int i = 0; i < rank; ++i) {
    const uint8_t d = next();
    dims.push_back(d & 0x80 ? int64_t(d & 0x7f) * 7 : int64_t(d % 9));  // mostly small, some up to 889
  }
  if (Type(kind, dims).numElements() > (int64_t(1) << 16)) return 0;
  const bool quantized = kind == ElemKind::Int8Q || kind == ElemKind::UInt8Q || kind == ElemKind::Int32Q;
  Tensor tensor(quantized ? Type(kind, dims, 0.5f, kind == ElemKind::Int32Q ? 0 : 3) : Type(kind, dims));
  auto* bytes = static_cast<uint8_t*>(tensor.data());
  const size_t n = tensor.type().sizeInBytes();
  for (size_t i = 0; i < n; ++i) {
    const uint8_t b = at < size ? data[at + i % (size - at)] : uint8_t(i);
    bytes[i] = kind == ElemKind::Bool ? b & 1 : b;  // a bool element is 0 or 1
  }

  const std::string file = serializeNpy(tensor);
  EMBER_FUZZ_CHECK(file.size() >= n + 10 && file.compare(0, 6, "\x93NUMPY") == 0, "no .npy magic");
  Expected<Tensor> back = parseNpy(file, "written.npy");
  EMBER_FUZZ_CHECK(back.hasValue(), back.error().message());
  EMBER_FUZZ_CHECK((file.size() - back->type().sizeInBytes()) % 64 == 0,
                   "the data does not start on a 64-byte boundary");
  EMBER_FUZZ_CHECK(back->type().dims == dims, "the shape changed: " + back->type().str());
  const auto* got = static_cast<const uint8_t*>(back->data());
  if (kind == ElemKind::BF16) {
    for (int64_t i = 0; i < tensor.type().numElements(); ++i) {
      uint16_t half;
      uint32_t wide;
      std::memcpy(&half, bytes + 2 * i, 2);
      std::memcpy(&wide, got + 4 * i, 4);
      EMBER_FUZZ_CHECK(wide == uint32_t(half) << 16, "bf16 element " + std::to_string(i) + " changed");
    }
  } else {
    EMBER_FUZZ_CHECK(back->type().sizeInBytes() == n, "the size changed: " + back->type().str());
    EMBER_FUZZ_CHECK(n == 0 || std::memcmp(got, bytes, n) == 0, "the bytes changed: " + tensor.type().str());
  }
  return 0;
}
