// Bundle serialisation and the untrusted-input loader (docs/npu/bundle.md).
#include "ember/npu/Bundle.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>

#include "ember/TextEscape.h"

namespace ember::npu {
namespace {

class Writer {
 public:
  void u8(uint8_t v) { out.push_back(v); }
  void u16(uint16_t v) { le(v, 2); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  std::vector<uint8_t> out;

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(uint8_t(v >> (8 * i)));
  }
};

// Reads little-endian values; every read is bounds-checked.
class Reader {
 public:
  Reader(const std::vector<uint8_t>& data, std::string origin) : data_(data), origin_(std::move(origin)) {}
  size_t remaining() const { return data_.size() - pos_; }
  size_t pos() const { return pos_; }

  Error need(uint64_t n, const char* what) const {
    if (n > remaining())
      return makeError(origin_, ": truncated bundle: ", what, " needs ", n, " bytes at offset ", pos_,
                       " but only ", remaining(), " remain");
    return Error::success();
  }
  uint64_t le(int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | data_[pos_ + size_t(i)];
    pos_ += size_t(n);
    return v;
  }
  const uint8_t* take(size_t n) {
    const uint8_t* p = data_.data() + pos_;
    pos_ += n;
    return p;
  }

 private:
  const std::vector<uint8_t>& data_;
  std::string origin_;
  size_t pos_ = 0;
};

// '#' starts a comment in assembly, so a name holding it could not be
// disassembled and assembled back.
/// DRAM addresses are 32 bits (docs/npu/isa.md).
constexpr uint64_t kMaxDramBytes = uint64_t(1) << 32;

bool validName(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  for (unsigned char c : name)
    if (c <= ' ' || c >= 127 || c == '#') return false;
  return true;
}

}  // namespace

std::string_view symbolTypeName(SymbolType t) {
  switch (t) {
    case SymbolType::I8:
      return "i8";
    case SymbolType::U8:
      return "u8";
    case SymbolType::I32:
      return "i32";
  }
  return "?";
}

size_t symbolTypeBytes(SymbolType t) { return t == SymbolType::I32 ? 4 : 1; }

int64_t Symbol::numElements() const {
  // Shapes come from files: saturate instead of overflowing (validate() rejects
  // anything near this bound).
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > INT64_MAX / d) return INT64_MAX;
    n *= d;
  }
  return n;
}

namespace {

/// The checks of both validate()s that come before the instructions: a
/// supported ISA version and a program of 1 to kMaxInstructions words.
Error validateVersionAndSize(uint32_t isaVersion, size_t programSize) {
  if (isaVersion < isa::kOldestIsaVersion || isaVersion > isa::kIsaVersion)
    return makeError("ISA version ", isaVersion, " is not supported (this simulator implements versions ",
                     isa::kOldestIsaVersion, " to ", isa::kIsaVersion, ")");
  if (programSize == 0) return makeError("the program is empty (it must end with FINISH)");
  if (programSize > kMaxInstructions) return makeError("too many instructions: ", programSize);
  return Error::success();
}

}  // namespace

Error Bundle::validate() const {
  EMBER_RETURN_IF_ERROR(validateVersionAndSize(isaVersion, program.size()));
  bool finished = false;
  for (size_t i = 0; i < program.size(); ++i) {
    auto instr = isa::decode(program[i]);
    if (!instr) return makeError("instruction ", i, ": ", instr.error().message());
    EMBER_RETURN_IF_ERROR(validateInstruction(i, *instr));
    if (instr->opcode == isa::Opcode::Finish) finished = true;
  }
  return validateTables(finished);
}

Error Bundle::validateInstruction(size_t i, const isa::Instruction& instr) const {
  if (instr.layer > layers.size())
    return makeError("instruction ", i, ": layer tag ", instr.layer, " but the bundle has ", layers.size(),
                     " layers");
  if (isaVersion < 2 && instr.opcode == isa::Opcode::Gemm && instr[isa::Field::WeightBuffer] != 0)
    return makeError("instruction ", i, ": gemm field 'wbuf' is ISA version 2, but the bundle is version ",
                     isaVersion);
  if (isaVersion < 4 && instr.minIsaVersion() >= 4)
    return makeError("instruction ", i, ": ", isa::findOpcode(uint8_t(instr.opcode))->mnemonic,
                     " is ISA version 4, but the bundle is version ", isaVersion);
  if (isaVersion < 3 && instr.minIsaVersion() >= 3)
    return makeError("instruction ", i,
                     ": the vector queue (pop_side, push_side, vq, sync q=vector) and gemm bias_init are ISA "
                     "version 3, but the bundle is version ",
                     isaVersion);
  return Error::success();
}

Error Bundle::validateTables(bool finished) const {
  if (!finished) return makeError("the program has no FINISH instruction");
  std::set<std::string> names;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!validName(layers[i])) return makeError("layer ", i, ": invalid name '", layers[i], "'");
    if (!names.insert(layers[i]).second) return makeError("layer ", i, ": duplicate name '", layers[i], "'");
  }
  names.clear();
  for (const auto& s : symbols) {
    if (!validName(s.name)) return makeError("invalid symbol name '", s.name, "'");
    if (!names.insert(s.name).second) return makeError("duplicate symbol '", s.name, "'");
    if (s.shape.size() > 6) return makeError("symbol '", s.name, "': rank ", s.shape.size(), " exceeds 6");
    // Checked before multiplying: 2^32 * 2^32 would wrap to 0 and pass.
    constexpr uint64_t kMaxElements = uint64_t(1) << 34;
    uint64_t elements = 1;
    for (int64_t d : s.shape) {
      if (d <= 0 || uint64_t(d) > (uint64_t(1) << 32))
        return makeError("symbol '", s.name, "': bad dimension ", d);
      if (elements > kMaxElements / uint64_t(d))
        return makeError("symbol '", s.name, "': more than ", kMaxElements, " elements");
      elements *= uint64_t(d);
    }
    if (!std::isfinite(s.scale) || !(s.scale > 0))
      return makeError("symbol '", s.name, "': scale ", s.scale, " is not a positive finite number");
    const uint64_t bytes = elements * symbolTypeBytes(s.type);
    if (s.dramOffset > dramBytes || bytes > dramBytes - s.dramOffset)
      return makeError("symbol '", s.name, "': DRAM range [", s.dramOffset, ", ", s.dramOffset + bytes,
                       ") exceeds the bundle's DRAM size ", dramBytes);
  }
  if (dramBytes > kMaxDramBytes)
    return makeError("DRAM size ", dramBytes, " exceeds the 4 GiB address space");
  if (weightsOffset > dramBytes || weights.size() > dramBytes - weightsOffset)
    return makeError("weight image [", weightsOffset, ", ", weightsOffset + weights.size(),
                     ") exceeds the bundle's DRAM size ", dramBytes);
  return Error::success();
}

namespace {

static_assert(sizeof(isa::EncodedInstruction) == isa::kInstructionBytes,
              "a program's instructions are written as one block");

/// The bundle's bytes in file order, as four pieces (header, program, layer
/// and symbol tables, weights) passed to `emit(data, size)`: the program and
/// the weights, tens of megabytes for ResNet-50, are never copied.
template <typename Emit>
void forEachPiece(const Bundle& b, Emit&& emit) {
  Writer w;
  w.bytes(kBundleMagic, 8);
  w.u32(kBundleVersion);
  w.u32(b.isaVersion);
  w.u64(b.configHash);
  w.u64(b.dramBytes);
  w.u32(uint32_t(b.program.size()));
  w.u32(uint32_t(b.layers.size()));
  w.u32(uint32_t(b.symbols.size()));
  w.u32(0);
  w.u64(b.weightsOffset);
  w.u64(b.weights.size());
  emit(w.out.data(), w.out.size());
  emit(b.program.data(), b.program.size() * isa::kInstructionBytes);
  w.out.clear();
  for (const auto& layer : b.layers) {
    w.u16(uint16_t(layer.size()));
    w.bytes(layer.data(), layer.size());
  }
  for (const auto& s : b.symbols) {
    w.u8(uint8_t(s.direction));
    w.u8(uint8_t(s.type));
    w.u8(uint8_t(s.shape.size()));
    w.u8(0);
    w.u16(uint16_t(s.name.size()));
    w.bytes(s.name.data(), s.name.size());
    for (int64_t d : s.shape) w.u64(uint64_t(d));
    w.u64(s.dramOffset);
    uint32_t scaleBits = 0;
    std::memcpy(&scaleBits, &s.scale, 4);
    w.u32(scaleBits);
    w.u32(uint32_t(s.zeroPoint));
  }
  emit(w.out.data(), w.out.size());
  emit(b.weights.data(), b.weights.size());
}

}  // namespace

std::vector<uint8_t> serializeBundle(const Bundle& b) {
  std::vector<uint8_t> out;
  forEachPiece(b, [&](const void* data, size_t size) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    out.insert(out.end(), bytes, bytes + size);
  });
  return out;
}

namespace {
/// The sizes of a bundle's tables, from its header.
struct BundleCounts {
  uint64_t instructions = 0, layers = 0, symbols = 0, weightBytes = 0;
};

/// The header after the magic number into `b`, checked; the table sizes.
Expected<BundleCounts> readHeader(Reader& r, Bundle& b, const std::string& origin) {
  const auto version = uint32_t(r.le(4));
  if (version != kBundleVersion)
    return makeError(origin, ": bundle format version ", version, " is not supported (expected ",
                     kBundleVersion, ")");
  b.isaVersion = uint32_t(r.le(4));
  if (b.isaVersion < isa::kOldestIsaVersion || b.isaVersion > isa::kIsaVersion)
    return makeError(origin, ": ISA version ", b.isaVersion, " is not supported (expected ",
                     isa::kOldestIsaVersion, " to ", isa::kIsaVersion, ")");
  b.configHash = r.le(8);
  b.dramBytes = r.le(8);
  BundleCounts counts;
  counts.instructions = r.le(4), counts.layers = r.le(4), counts.symbols = r.le(4);
  if (r.le(4) != 0) return makeError(origin, ": reserved header field is not zero");
  b.weightsOffset = r.le(8);
  counts.weightBytes = r.le(8);
  if (b.dramBytes > kMaxDramBytes)
    return makeError(origin, ": DRAM size ", b.dramBytes, " exceeds the 4 GiB address space");
  if (counts.instructions > kMaxInstructions)
    return makeError(origin, ": instruction count ", counts.instructions, " too large");
  if (counts.layers > kMaxLayers) return makeError(origin, ": layer count ", counts.layers, " too large");
  if (counts.symbols > kMaxSymbols) return makeError(origin, ": symbol count ", counts.symbols, " too large");
  return counts;
}

Error readLayers(Reader& r, uint64_t numLayers, Bundle& b) {
  for (uint64_t i = 0; i < numLayers; ++i) {
    EMBER_RETURN_IF_ERROR(r.need(2, "a layer name"));
    const size_t len = size_t(r.le(2));
    EMBER_RETURN_IF_ERROR(r.need(len, "a layer name"));
    const uint8_t* p = r.take(len);
    b.layers.emplace_back(reinterpret_cast<const char*>(p), len);
  }
  return Error::success();
}

/// Symbol `index` of the symbol table at the reader's position.
Expected<Symbol> readSymbol(Reader& r, uint64_t index, const std::string& origin) {
  EMBER_RETURN_IF_ERROR(r.need(6, "a symbol"));
  Symbol s;
  const auto direction = uint8_t(r.le(1)), type = uint8_t(r.le(1)), rank = uint8_t(r.le(1));
  const auto reserved = uint8_t(r.le(1));
  const size_t nameLen = size_t(r.le(2));
  if (direction > 1 || type > 2 || rank > 6 || reserved != 0 || nameLen > kMaxNameBytes)
    return makeError(origin, ": symbol ", index, " has an invalid direction, type, rank or name length");
  s.direction = Symbol::Direction(direction);
  s.type = SymbolType(type);
  EMBER_RETURN_IF_ERROR(r.need(nameLen + 8 * rank + 16, "a symbol"));
  s.name.assign(reinterpret_cast<const char*>(r.take(nameLen)), nameLen);
  for (int d = 0; d < rank; ++d) s.shape.push_back(int64_t(r.le(8)));
  s.dramOffset = r.le(8);
  const auto scaleBits = uint32_t(r.le(4));
  std::memcpy(&s.scale, &scaleBits, 4);
  s.zeroPoint = int32_t(uint32_t(r.le(4)));
  return s;
}

Expected<Bundle> parseBundleImpl(const std::vector<uint8_t>& bytes, const std::string& origin) {
  Reader r(bytes, origin);
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kBundleMagic, 8) != 0)
    return makeError(origin, ": not an Ember NPU bundle (bad magic number)");
  EMBER_RETURN_IF_ERROR(r.need(kBundleHeaderBytes, "the header"));
  r.take(8);
  Bundle b;
  auto counts = readHeader(r, b, origin);
  if (!counts) return counts.error();
  const auto [numInstructions, numLayers, numSymbols, weightBytes] = *counts;
  EMBER_RETURN_IF_ERROR(r.need(numInstructions * isa::kInstructionBytes, "the program"));
  b.program.resize(numInstructions);
  for (auto& instr : b.program) std::memcpy(instr.data(), r.take(instr.size()), instr.size());
  EMBER_RETURN_IF_ERROR(readLayers(r, numLayers, b));
  for (uint64_t i = 0; i < numSymbols; ++i) {
    auto symbol = readSymbol(r, i, origin);
    if (!symbol) return symbol.error();
    b.symbols.push_back(std::move(*symbol));
  }
  EMBER_RETURN_IF_ERROR(r.need(weightBytes, "the weight image"));
  const uint8_t* w = r.take(size_t(weightBytes));
  b.weights.assign(w, w + weightBytes);
  if (r.remaining() != 0) return makeError(origin, ": ", r.remaining(), " unexpected trailing bytes");
  if (Error e = b.validate()) return e.withContext(origin);
  return b;
}
}  // namespace

Expected<Bundle> parseBundle(const std::vector<uint8_t>& bytes, const std::string& origin) {
  Expected<Bundle> b = parseBundleImpl(bytes, origin);
  if (!b) return oneLineError(b.error());
  return b;
}

Expected<Bundle> readBundle(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open the bundle");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parseBundle(bytes, path);
}

Error writeBundle(const std::string& path, const Bundle& bundle) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return makeError(path, ": cannot write the bundle");
  forEachPiece(bundle, [&](const void* data, size_t size) {
    out.write(static_cast<const char*>(data), std::streamsize(size));
  });
  if (!out) return makeError(path, ": write failed");
  return Error::success();
}

}  // namespace ember::npu
