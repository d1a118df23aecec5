// Field tables of the NPU ISA (the layout documented in docs/npu/isa.md).
#include "ember/npu/Isa.h"

#include <bit>
#include <cassert>
#include <cstring>

#include "ember/npu/IsaHeader.h"
#include "ember/npu/IsaTables.h"

namespace ember::npu::isa {
namespace {

// The tables are checked at compile time: fields stay inside one word, above
// the header, and do not overlap.
constexpr bool layoutIsValid(std::span<const FieldLayout> fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& a = fields[i];
    if (a.width == 0 || a.lsb < kFieldsFirstBit || a.lsb + a.width > 256) return false;
    if (a.lsb / 64 != (a.lsb + a.width - 1) / 64) return false;
    for (size_t j = i + 1; j < fields.size(); ++j) {
      const auto& b = fields[j];
      if (a.lsb < b.lsb + b.width && b.lsb < a.lsb + a.width) return false;
    }
  }
  return true;
}
constexpr bool allLayoutsValid() {
  for (const auto& spec : kOpcodeSpecs)
    if (!layoutIsValid(spec.fields)) return false;
  return true;
}
static_assert(allLayoutsValid(), "an NPU instruction field overlaps another or crosses a word");

uint64_t readWord(std::span<const uint8_t, kInstructionBytes> bytes, int word) {
  uint64_t value = 0;
  if constexpr (std::endian::native == std::endian::little)
    std::memcpy(&value, bytes.data() + word * 8, 8);
  else
    for (int b = 7; b >= 0; --b) value = (value << 8) | bytes[size_t(word) * 8 + size_t(b)];
  return value;
}

uint64_t mask(unsigned width) { return width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1; }

// A token bit toward a link the queue does not have.
std::optional<Link> missingLink(const Instruction& in) {
  for (Link l : kLinks)
    if ((in.deps.pops(l) || in.deps.pushes(l)) && !linkedQueue(in.queue(), l)) return l;
  return std::nullopt;
}

std::string_view linkName(Link l) { return l == Link::Prev ? "prev" : l == Link::Next ? "next" : "side"; }
std::string_view linkNoun(Link l) { return l == Link::Prev ? "previous" : linkName(l); }

constexpr uint64_t kVectorQueueBit = uint64_t(1) << header::kVectorQueueBit,
                   kReservedHeaderBit = uint64_t(1) << header::kReservedBit;
constexpr bool headerBit(uint64_t word0, unsigned bit) { return (word0 >> bit & 1) != 0; }

}  // namespace

std::optional<Queue> linkedQueue(Queue q, Link link) {
  switch (link) {
    case Link::Prev:
      if (q == Queue::Load) return std::nullopt;
      return q == Queue::Store || q == Queue::Vector ? Queue::Compute : Queue::Load;
    case Link::Next:
      if (q == Queue::Store) return std::nullopt;
      return q == Queue::Load ? Queue::Compute : Queue::Store;
    case Link::Side:
      return q == Queue::Vector ? Queue::Load : Queue::Vector;
  }
  return std::nullopt;
}

uint32_t Instruction::minIsaVersion() const {
  if (opcode == Opcode::Softmax || opcode == Opcode::LayerNorm) return 4;
  if (deps.popSide || deps.pushSide || vectorQueue || queue() == Queue::Vector) return 3;
  if (opcode == Opcode::Gemm && ((*this)[Field::BiasInit] != 0 || (*this)[Field::BiasAddr] != 0)) return 3;
  if (opcode == Opcode::Gemm && (*this)[Field::WeightBuffer] != 0) return 2;
  return 1;
}

std::string_view queueName(Queue q) {
  switch (q) {
    case Queue::Load:
      return "load";
    case Queue::Compute:
      return "compute";
    case Queue::Store:
      return "store";
    case Queue::Vector:
      return "vector";
  }
  return "?";
}

const OpcodeSpec* findOpcode(uint8_t value) {
  // Indexed by the opcode byte: encode, decode and the program checks look
  // up every instruction of programs of millions.
  static const std::array<const OpcodeSpec*, 256> byValue = [] {
    std::array<const OpcodeSpec*, 256> table{};
    for (const auto& spec : kOpcodeSpecs)
      if (!table[uint8_t(spec.opcode)]) table[uint8_t(spec.opcode)] = &spec;
    return table;
  }();
  return byValue[value];
}

const OpcodeSpec* findOpcode(std::string_view mnemonic) {
  for (const auto& spec : kOpcodeSpecs)
    if (spec.mnemonic == mnemonic) return &spec;
  return nullptr;
}

std::span<const OpcodeSpec> allOpcodes() { return kOpcodeSpecs; }

Queue Instruction::queue() const {
  if (opcode == Opcode::Sync) return Queue((*this)[Field::QueueSel]);
  if (vectorQueue) return Queue::Vector;
  const OpcodeSpec* spec = findOpcode(uint8_t(opcode));
  return spec ? spec->queue : Queue::Compute;
}

Expected<EncodedInstruction> encode(const Instruction& instr) {
  const OpcodeSpec* spec = findOpcode(uint8_t(instr.opcode));
  if (!spec) return makeError("unknown opcode ", int(instr.opcode));
  std::array<uint64_t, 4> words{};
  words[0] = uint64_t(instr.opcode) | uint64_t(header::tokenBits(instr.deps)) << 8 |
             (instr.vectorQueue ? kVectorQueueBit : 0) | uint64_t(instr.layer) << header::kLayerLsb;
  if (instr.vectorQueue && !isVectorOpcode(instr.opcode))
    return makeError(spec->mnemonic,
                     ": only vector instructions (requant, vadd, vclip, lut, pool, eadd) take vq");
  std::array<bool, kNumFields> present{};
  for (const auto& f : spec->fields) {
    present[size_t(f.field)] = true;
    const int64_t v = instr[f.field];
    if (v < fieldMin(f) || v > fieldMax(f))
      return makeError(spec->mnemonic, ": field '", f.name, "' value ", v, " does not fit [", fieldMin(f),
                       ", ", fieldMax(f), "]");
    words[f.lsb / 64] |= (uint64_t(v) & mask(f.width)) << (f.lsb % 64);
  }
  for (size_t i = 0; i < kNumFields; ++i)
    if (!present[i] && instr.values[i] != 0)
      return makeError(spec->mnemonic, ": has no field number ", i, " (value ", instr.values[i], ")");
  if (const auto l = missingLink(instr))
    return makeError(spec->mnemonic, ": the ", queueName(instr.queue()), " queue has no ", linkNoun(*l),
                     " queue (pop_", linkName(*l), "/push_", linkName(*l), ")");
  EncodedInstruction out{};
  if constexpr (std::endian::native == std::endian::little)
    std::memcpy(out.data(), words.data(), out.size());
  else
    for (int w = 0; w < 4; ++w)
      for (int b = 0; b < 8; ++b) out[size_t(w) * 8 + size_t(b)] = uint8_t(words[size_t(w)] >> (8 * b));
  return out;
}

namespace {

std::array<uint64_t, 4> readWords(std::span<const uint8_t, kInstructionBytes> bytes) {
  std::array<uint64_t, 4> words{};
  for (int w = 0; w < 4; ++w) words[size_t(w)] = readWord(bytes, w);
  return words;
}

/// The header and the fields of `spec` from `words`, without any check.
void extract(const std::array<uint64_t, 4>& words, const OpcodeSpec& spec, Instruction& instr) {
  instr.opcode = spec.opcode;
  instr.deps = {headerBit(words[0], header::kPopPrevBit),  headerBit(words[0], header::kPopNextBit),
                headerBit(words[0], header::kPushPrevBit), headerBit(words[0], header::kPushNextBit),
                headerBit(words[0], header::kPopSideBit),  headerBit(words[0], header::kPushSideBit)};
  instr.vectorQueue = (words[0] & kVectorQueueBit) != 0;
  instr.layer = uint16_t(words[0] >> header::kLayerLsb);
  for (const auto& f : spec.fields) {
    const uint64_t raw = (words[f.lsb / 64] >> (f.lsb % 64)) & mask(f.width);
    int64_t v = int64_t(raw);
    if (f.kind == FieldKind::Signed && (raw >> (f.width - 1)) & 1) v = int64_t(raw | ~mask(f.width));
    instr[f.field] = v;
  }
}

}  // namespace

Expected<Instruction> decode(std::span<const uint8_t, kInstructionBytes> bytes) {
  const std::array<uint64_t, 4> words = readWords(bytes);
  const OpcodeSpec* spec = findOpcode(uint8_t(words[0] & 0xff));
  if (!spec) return makeError("malformed instruction: unknown opcode ", words[0] & 0xff);
  if (words[0] & kReservedHeaderBit) return makeError("malformed instruction: reserved header bit 15 is set");
  Instruction instr;
  extract(words, *spec, instr);
  if (instr.vectorQueue && !isVectorOpcode(instr.opcode))
    return makeError("malformed instruction: ", spec->mnemonic, " sets vq but is not a vector instruction");
  std::array<uint64_t, 4> used{0xffffffffu, 0, 0, 0};  // the header bits
  for (const auto& f : spec->fields) {
    used[f.lsb / 64] |= mask(f.width) << (f.lsb % 64);
    if (instr[f.field] > fieldMax(f))
      return makeError("malformed instruction: ", spec->mnemonic, " field '", f.name, "' has invalid value ",
                       instr[f.field]);
  }
  for (int w = 0; w < 4; ++w)
    if (words[size_t(w)] & ~used[size_t(w)])
      return makeError("malformed instruction: ", spec->mnemonic, " has bits set outside its fields (word ",
                       w, ")");
  if (const auto l = missingLink(instr))
    return makeError("malformed instruction: ", spec->mnemonic, " in the ", queueName(instr.queue()),
                     " queue uses pop_", linkName(*l), "/push_", linkName(*l), " but that queue has no ",
                     linkNoun(*l), " queue");
  return instr;
}

Instruction decodeAccepted(std::span<const uint8_t, kInstructionBytes> bytes) {
  const std::array<uint64_t, 4> words = readWords(bytes);
  const OpcodeSpec* spec = findOpcode(uint8_t(words[0] & 0xff));
  assert(spec && "decodeAccepted: bytes that decode() refuses");
  Instruction instr;
  if (spec) extract(words, *spec, instr);
  return instr;
}

}  // namespace ember::npu::isa
