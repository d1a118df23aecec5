// Text assembly <-> bundles. The field names and widths come from Isa.h's
// tables, so the assembler and disassembler cannot disagree with the decoder.
#include "ember/npu/Assembler.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>
#include <vector>

#include "ember/TextEscape.h"

namespace ember::npu {
namespace {

using namespace isa;

/// The weight image lives in the NPU's DRAM, at most 4 GiB.
constexpr uint64_t kMaxIncbinBytes = uint64_t(1) << 32;

std::vector<std::string> splitWords(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream is(line);
  std::string w;
  while (is >> w) words.push_back(w);
  return words;
}

std::optional<int64_t> parseInt(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (v > uint64_t(INT64_MAX)) return std::nullopt;
  return negative ? -int64_t(v) : int64_t(v);
}

std::optional<int64_t> parseEnum(FieldKind kind, const std::string& text) {
  static const std::vector<std::string> kMem = {"spad", "acc"}, kPool = {"max", "avg"},
                                        kQueue = {"load", "compute", "store", "vector"};
  const std::vector<std::string>* names = kind == FieldKind::Memory     ? &kMem
                                          : kind == FieldKind::PoolMode ? &kPool
                                          : kind == FieldKind::QueueId  ? &kQueue
                                                                        : nullptr;
  if (names)
    for (size_t i = 0; i < names->size(); ++i)
      if ((*names)[i] == text) return int64_t(i);
  return parseInt(text);
}

std::string enumName(FieldKind kind, int64_t v) {
  if (kind == FieldKind::Memory) return v == 0 ? "spad" : "acc";
  if (kind == FieldKind::PoolMode) return v == 0 ? "max" : "avg";
  if (kind == FieldKind::QueueId) return std::string(queueName(Queue(v)));
  return std::to_string(v);
}

bool isEnum(FieldKind k) {
  return k == FieldKind::Memory || k == FieldKind::PoolMode || k == FieldKind::QueueId;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string formatFloat(float f) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", double(f));
  return buf;
}

class Assembler {
 public:
  Assembler(std::string origin, std::string baseDir)
      : origin_(std::move(origin)), baseDir_(std::move(baseDir)) {}

  Expected<Bundle> run(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      ++lineNo_;
      if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
      const auto words = splitWords(line);
      if (words.empty()) continue;
      Error e = words[0][0] == '.' ? directive(words) : instruction(words);
      if (e) return makeError(origin_, ":", lineNo_, ": ", e.message());
    }
    if (!dramSet_) {
      // Saturating: offsets and shapes are unchecked here, validate() reports them.
      auto add = [](uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; };
      uint64_t extent = add(bundle_.weightsOffset, bundle_.weights.size());
      for (const auto& s : bundle_.symbols) {
        const int64_t n = s.numElements();
        const uint64_t bytes = n < 0 || uint64_t(n) > UINT64_MAX / 4 ? UINT64_MAX : s.sizeInBytes();
        extent = std::max(extent, add(s.dramOffset, bytes));
      }
      bundle_.dramBytes = extent;
    }
    if (Error e = bundle_.validate()) return e.withContext(origin_);
    return std::move(bundle_);
  }

 private:
  Error configHash(const std::string& arg) {  // a full 64-bit value
    uint64_t hash = 0;
    const std::string_view t = std::string_view(arg).substr(arg.rfind("0x", 0) == 0 ? 2 : 0);
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), hash, 16);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size())
      return makeError(".config_hash: expected a hex value, got '", arg, "'");
    bundle_.configHash = hash;
    return Error::success();
  }
  Error bytes(const std::vector<std::string>& w) {
    for (size_t i = 1; i < w.size(); ++i) {
      const std::string& h = w[i];
      if (h.size() % 2) return makeError(".bytes: odd number of hex digits in '", h, "'");
      for (size_t j = 0; j < h.size(); j += 2) {
        unsigned v = 0;
        auto [end, ec] = std::from_chars(h.data() + j, h.data() + j + 2, v, 16);
        if (ec != std::errc() || end != h.data() + j + 2) return makeError(".bytes: bad hex '", h, "'");
        bundle_.weights.push_back(uint8_t(v));
      }
    }
    return Error::success();
  }
  Error incbin(std::string name) {
    if (name.size() >= 2 && name.front() == '"' && name.back() == '"') name = name.substr(1, name.size() - 2);
    if (baseDir_.empty()) return makeError(".incbin is not allowed when assembling text without a file");
    const std::filesystem::path path = std::filesystem::path(baseDir_) / name;
    // A device or pipe (/dev/zero) would never end; the DRAM is 4 GiB at most.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      return makeError(".incbin: '", path.string(), "' is not a regular file");
    const auto size = std::filesystem::file_size(path, ec);
    if (ec || size > kMaxIncbinBytes - bundle_.weights.size())
      return makeError(".incbin: '", path.string(), "' would make the weight image larger than ",
                       kMaxIncbinBytes, " bytes");
    std::ifstream f(path, std::ios::binary);
    if (!f) return makeError(".incbin: cannot open '", path.string(), "'");
    bundle_.weights.insert(bundle_.weights.end(), std::istreambuf_iterator<char>(f),
                           std::istreambuf_iterator<char>());
    return Error::success();
  }
  Error directive(const std::vector<std::string>& w) {
    const std::string& d = w[0];
    if (d == ".input" || d == ".output") return symbol(w);
    if (d == ".bytes") return bytes(w);
    static constexpr std::string_view kOneArgument[] = {".config_hash", ".dram",   ".isa",
                                                        ".weights",     ".incbin", ".layer"};
    const bool oneArgument =
        std::find(std::begin(kOneArgument), std::end(kOneArgument), d) != std::end(kOneArgument);
    if (!oneArgument && d != ".nolayer") return makeError("unknown directive '", d, "'");
    const size_t arguments = oneArgument ? 1 : 0;
    if (w.size() != arguments + 1) return makeError(d, " expects ", arguments, " argument(s)");
    if (!oneArgument) {  // .nolayer
      layer_ = 0;
      return Error::success();
    }
    return oneArgumentDirective(d, w[1]);
  }
  Error oneArgumentDirective(const std::string& d, const std::string& arg) {
    if (d == ".config_hash") return configHash(arg);
    if (d == ".incbin") return incbin(arg);
    if (d == ".layer") return layer(arg);
    if (d == ".dram") {
      auto v = parseInt(arg);
      if (!v || *v < 0) return makeError(d, ": bad value '", arg, "'");
      bundle_.dramBytes = uint64_t(*v);
      dramSet_ = true;
      return Error::success();
    }
    if (d == ".isa") {  // an older ISA version the program keeps to (isa.md "Versions")
      auto v = parseInt(arg);
      if (!v || *v < int64_t(isa::kOldestIsaVersion) || *v > int64_t(isa::kIsaVersion))
        return makeError(".isa: ISA version '", arg, "' is not supported (", isa::kOldestIsaVersion, " to ",
                         isa::kIsaVersion, ")");
      bundle_.isaVersion = uint32_t(*v);
      return Error::success();
    }
    // .weights
    auto v = arg[0] == '@' ? parseInt(arg.substr(1)) : std::nullopt;
    if (!v || *v < 0) return makeError(".weights expects @OFFSET, got '", arg, "'");
    bundle_.weightsOffset = uint64_t(*v);
    return Error::success();
  }
  Error layer(const std::string& name) {
    size_t i = 0;
    while (i < bundle_.layers.size() && bundle_.layers[i] != name) ++i;
    if (i == bundle_.layers.size()) {
      if (i >= kMaxLayers) return makeError("too many layers");
      bundle_.layers.push_back(name);
    }
    layer_ = uint16_t(i + 1);
    return Error::success();
  }

  // .input NAME TYPE [d0,d1] @OFFSET [scale=S] [zp=Z]
  Error symbol(const std::vector<std::string>& w) {
    if (w.size() < 5) return makeError(w[0], " expects NAME TYPE [DIMS] @OFFSET [scale=S] [zp=Z]");
    Symbol s;
    s.direction = w[0] == ".input" ? Symbol::Direction::Input : Symbol::Direction::Output;
    s.name = w[1];
    if (w[2] == "i8")
      s.type = SymbolType::I8;
    else if (w[2] == "u8")
      s.type = SymbolType::U8;
    else if (w[2] == "i32")
      s.type = SymbolType::I32;
    else
      return makeError("symbol '", s.name, "': unknown type '", w[2], "' (i8, u8 or i32)");
    const std::string& dims = w[3];
    if (dims.size() < 2 || dims.front() != '[' || dims.back() != ']')
      return makeError("symbol '", s.name, "': shape must be written [d0,d1,...] without spaces");
    std::string inner = dims.substr(1, dims.size() - 2);
    std::istringstream ds(inner);
    std::string part;
    while (std::getline(ds, part, ',')) {
      auto v = parseInt(part);
      if (!v || *v <= 0) return makeError("symbol '", s.name, "': bad dimension '", part, "'");
      s.shape.push_back(*v);
    }
    auto off = w[4][0] == '@' ? parseInt(w[4].substr(1)) : std::nullopt;
    if (!off || *off < 0) return makeError("symbol '", s.name, "': expected @OFFSET, got '", w[4], "'");
    s.dramOffset = uint64_t(*off);
    for (size_t i = 5; i < w.size(); ++i) {
      if (w[i].rfind("scale=", 0) == 0) {
        char* end = nullptr;
        const std::string v = w[i].substr(6);
        s.scale = std::strtof(v.c_str(), &end);
        if (v.empty() || *end || !std::isfinite(s.scale) || s.scale <= 0)
          return makeError("symbol '", s.name, "': bad scale '", v, "'");
      } else if (w[i].rfind("zp=", 0) == 0) {
        auto v = parseInt(w[i].substr(3));
        if (!v || *v < INT32_MIN || *v > INT32_MAX)
          return makeError("symbol '", s.name, "': bad zp '", w[i], "'");
        s.zeroPoint = int32_t(*v);
      } else {
        return makeError("symbol '", s.name, "': unexpected '", w[i], "'");
      }
    }
    bundle_.symbols.push_back(std::move(s));
    return Error::success();
  }

  Error instruction(const std::vector<std::string>& w) {
    const OpcodeSpec* spec = findOpcode(w[0]);
    if (!spec) return makeError("unknown mnemonic '", w[0], "'");
    Instruction instr;
    instr.opcode = spec->opcode;
    instr.layer = layer_;
    std::array<bool, kNumFields> given{};
    for (size_t i = 1; i < w.size(); ++i) {
      const std::string& word = w[i];
      if (word == "pop_prev")
        instr.deps.popPrev = true;
      else if (word == "pop_next")
        instr.deps.popNext = true;
      else if (word == "push_prev")
        instr.deps.pushPrev = true;
      else if (word == "push_next")
        instr.deps.pushNext = true;
      else if (word == "pop_side")
        instr.deps.popSide = true;
      else if (word == "push_side")
        instr.deps.pushSide = true;
      else if (word == "vq")
        instr.vectorQueue = true;
      else {
        const auto eq = word.find('=');
        if (eq == std::string::npos)
          return makeError(spec->mnemonic, ": expected field=value, got '", word, "'");
        const std::string name = word.substr(0, eq), value = word.substr(eq + 1);
        const FieldLayout* layout = nullptr;
        for (const auto& f : spec->fields)
          if (f.name == name) layout = &f;
        if (!layout) return makeError(spec->mnemonic, " has no field '", name, "'");
        if (given[size_t(layout->field)])
          return makeError(spec->mnemonic, ": field '", name, "' given twice");
        given[size_t(layout->field)] = true;
        auto v = parseEnum(layout->kind, value);
        if (!v) return makeError(spec->mnemonic, ": bad value '", value, "' for field '", name, "'");
        instr[layout->field] = *v;
      }
    }
    auto encoded = encode(instr);
    if (!encoded) return encoded.error();
    if (bundle_.program.size() >= kMaxInstructions) return makeError("too many instructions");
    bundle_.program.push_back(*encoded);
    return Error::success();
  }

  std::string origin_, baseDir_;
  Bundle bundle_;
  int lineNo_ = 0;
  uint16_t layer_ = 0;
  bool dramSet_ = false;
};

}  // namespace

Expected<Bundle> assemble(const std::string& text, const std::string& origin, const std::string& baseDir) {
  Expected<Bundle> b = Assembler(origin, baseDir).run(text);
  if (!b) return oneLineError(b.error());
  return b;
}

Expected<Bundle> assembleFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open the assembly file");
  std::ostringstream os;
  os << in.rdbuf();
  const auto dir = std::filesystem::path(path).parent_path();
  return assemble(os.str(), path, dir.empty() ? "." : dir.string());
}

std::string formatInstruction(const Instruction& instr) {
  const OpcodeSpec* spec = findOpcode(uint8_t(instr.opcode));
  if (!spec) return "?";
  std::string out(spec->mnemonic);
  for (const auto& f : spec->fields) {
    const int64_t v = instr[f.field];
    if (v == 0 && !isEnum(f.kind)) continue;
    out += ' ';
    out += f.name;
    out += '=';
    out += isEnum(f.kind)                 ? enumName(f.kind, v)
           : f.kind == FieldKind::Address ? hex(uint64_t(v))
                                          : std::to_string(v);
  }
  if (instr.deps.popPrev) out += " pop_prev";
  if (instr.deps.popNext) out += " pop_next";
  if (instr.deps.pushPrev) out += " push_prev";
  if (instr.deps.pushNext) out += " push_next";
  if (instr.deps.popSide) out += " pop_side";
  if (instr.deps.pushSide) out += " push_side";
  if (instr.vectorQueue) out += " vq";
  return out;
}

Expected<std::string> disassemble(const Bundle& b) {
  std::ostringstream os;
  os << "# Ember NPU bundle, ISA version " << b.isaVersion << ", " << b.program.size() << " instructions\n";
  if (b.isaVersion != isa::kIsaVersion) os << ".isa " << b.isaVersion << "\n";  // round trips
  if (b.configHash) os << ".config_hash " << hex(b.configHash) << "\n";
  os << ".dram " << hex(b.dramBytes) << "\n";
  for (const auto& s : b.symbols) {
    os << (s.direction == Symbol::Direction::Input ? ".input " : ".output ") << s.name << ' '
       << symbolTypeName(s.type) << " [";
    for (size_t i = 0; i < s.shape.size(); ++i) os << (i ? "," : "") << s.shape[i];
    os << "] @" << hex(s.dramOffset) << " scale=" << formatFloat(s.scale) << " zp=" << s.zeroPoint << "\n";
  }
  if (b.weightsOffset || !b.weights.empty()) {
    os << ".weights @" << hex(b.weightsOffset) << "\n";
    static const char* kHex = "0123456789abcdef";
    for (size_t i = 0; i < b.weights.size(); i += 64) {
      os << ".bytes ";
      for (size_t j = i; j < std::min(b.weights.size(), i + 64); ++j)
        os << kHex[b.weights[j] >> 4] << kHex[b.weights[j] & 15];
      os << "\n";
    }
  }
  for (const auto& layer : b.layers) os << ".layer " << layer << "\n";
  uint16_t current = uint16_t(b.layers.size());
  for (size_t i = 0; i < b.program.size(); ++i) {
    auto instr = decode(b.program[i]);
    if (!instr) return makeError("instruction ", i, ": ", instr.error().message());
    if (instr->layer != current) {
      if (instr->layer == 0)
        os << ".nolayer\n";
      else if (instr->layer <= b.layers.size())
        os << ".layer " << b.layers[instr->layer - 1] << "\n";
      else
        return makeError("instruction ", i, ": layer tag ", instr->layer, " out of range");
      current = instr->layer;
    }
    Instruction copy = *instr;
    os << formatInstruction(copy) << "\n";
  }
  return os.str();
}

}  // namespace ember::npu
