// The NPU bundle (docs/npu/bundle.md): program, weight image and I/O symbols
// in one little-endian file that starts with a magic number and a version.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/Error.h"
#include "ember/npu/Isa.h"

namespace ember::npu {

inline constexpr char kBundleMagic[8] = {'E', 'M', 'B', 'R', 'N', 'P', 'U', '\0'};
inline constexpr uint32_t kBundleVersion = 1;
inline constexpr size_t kBundleHeaderBytes = 64;
/// Upper bounds the loader enforces before allocating anything.
inline constexpr uint64_t kMaxInstructions = uint64_t(1) << 26;
inline constexpr uint64_t kMaxSymbols = 1 << 16;
inline constexpr uint64_t kMaxLayers = 0xffff;
inline constexpr size_t kMaxNameBytes = 1024;
/// Rank of an I/O symbol's shape (the compiler's kMaxRank is larger).
inline constexpr size_t kMaxSymbolRank = 6;

/// Element types of I/O symbols.
enum class SymbolType : uint8_t { I8 = 0, U8 = 1, I32 = 2 };
std::string_view symbolTypeName(SymbolType t);
size_t symbolTypeBytes(SymbolType t);

struct Symbol {
  enum class Direction : uint8_t { Input = 0, Output = 1 };
  Direction direction = Direction::Input;
  std::string name;
  SymbolType type = SymbolType::I8;
  std::vector<int64_t> shape;  ///< rank <= 6
  uint64_t dramOffset = 0;
  float scale = 1.0f;  ///< quantization: real = scale * (q - zeroPoint)
  int32_t zeroPoint = 0;

  int64_t numElements() const;
  uint64_t sizeInBytes() const { return uint64_t(numElements()) * symbolTypeBytes(type); }
};

struct Bundle {
  uint32_t isaVersion = isa::kIsaVersion;
  uint64_t configHash = 0;  ///< 0: runs on any config
  uint64_t dramBytes = 0;   ///< DRAM the program uses, from address 0
  std::vector<isa::EncodedInstruction> program;
  std::vector<std::string> layers;  ///< layer tag i+1 names layers[i]
  std::vector<Symbol> symbols;
  uint64_t weightsOffset = 0;  ///< DRAM address of the weight image
  std::vector<uint8_t> weights;

  /// Checks what the loader checks: symbol and weight ranges inside dramBytes,
  /// unique names, valid shapes, layer tags in range, FINISH present and every
  /// instruction decodable. Errors name the symbol or instruction index.
  Error validate() const;

 private:
  Error validateInstruction(size_t index, const isa::Instruction& instr) const;
  Error validateTables(bool finished) const;
};

std::vector<uint8_t> serializeBundle(const Bundle& bundle);
/// Parses untrusted bytes: every size and offset is checked before use.
Expected<Bundle> parseBundle(const std::vector<uint8_t>& bytes, const std::string& origin);
Expected<Bundle> readBundle(const std::string& path);
Error writeBundle(const std::string& path, const Bundle& bundle);

}  // namespace ember::npu
