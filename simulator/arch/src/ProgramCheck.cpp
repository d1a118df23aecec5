// Static checks of NPU programs (ProgramCheck.h, docs/npu/architecture.md
// "Static program checks"). Both program checks execute the token protocol
// abstractly: no timing, each queue in program order, counting semaphores.
// Because every semaphore has exactly one consumer queue and tokens only ever
// accumulate, the state reached when no unit can move is the same for every
// interleaving, so one greedy pass decides deadlock exactly.
#include "ember/npu/ProgramCheck.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <span>
#include <sstream>

#include "ember/npu/IsaHeader.h"

namespace ember::npu {
namespace {

using isa::Field;
using isa::Instruction;
using isa::Opcode;
using isa::Queue;

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// One semaphore per ordered pair of linked queues (isa.md "Dependency
// tokens"): index from * kNumQueues + to.
using Semaphore = uint8_t;
constexpr int kNumSemaphores = isa::kNumQueues * isa::kNumQueues;
constexpr Semaphore semaphore(Queue from, Queue to) {
  return Semaphore(int(from) * isa::kNumQueues + int(to));
}
Queue semaphoreSource(Semaphore s) { return Queue(s / isa::kNumQueues); }
std::string semaphoreName(Semaphore s) {
  return std::string(isa::queueName(semaphoreSource(s))) + "->" +
         std::string(isa::queueName(Queue(s % isa::kNumQueues)));
}
/// Forward semaphores announce data (load->compute, compute->vector, ...);
/// backward ones return buffer credits.
bool isDataReady(Semaphore s) {
  return isa::pipelineRank(semaphoreSource(s)) < isa::pipelineRank(Queue(s % isa::kNumQueues));
}
/// The semaphore `q` pops over `link` (from the linked queue to q).
Semaphore inbound(Queue q, isa::Link link) { return semaphore(*isa::linkedQueue(q, link), q); }
/// The semaphore `q` pushes over `link`.
Semaphore outbound(Queue q, isa::Link link) { return semaphore(q, *isa::linkedQueue(q, link)); }

std::string describe(uint8_t opcode, uint32_t index) {
  const auto* spec = isa::findOpcode(opcode);
  std::ostringstream os;
  os << "instruction " << index << " (" << (spec ? spec->mnemonic : "?") << ")";
  return os.str();
}

}  // namespace

/// The executed part of a program (everything before the first FINISH),
/// split into its queues, with each instruction's opcode and tokens: the
/// token machine reads only these, never the instructions themselves.
struct detail::QueueView {
  size_t end = 0;                                            ///< index of the first FINISH
  std::array<std::vector<uint32_t>, isa::kNumQueues> order;  ///< instruction indices per queue
  std::vector<uint8_t> queueOf;                              ///< queue of each instruction
  std::vector<uint8_t> opcode;                               ///< opcode of each instruction
  std::vector<isa::DepFlags> deps;                           ///< token bits of each instruction
  std::vector<uint32_t> position;                            ///< position within its queue
  std::array<uint64_t, kNumSemaphores> totalPushes{};        ///< in the whole executed program

  std::string describe(uint32_t index) const { return npu::describe(opcode[index], index); }
};

namespace {

using detail::QueueView;

/// A program held decoded: instruction i as it is.
struct DecodedProgram {
  std::span<const Instruction> instructions;
  size_t size() const { return instructions.size(); }
  uint8_t opcode(size_t i) const { return uint8_t(instructions[i].opcode); }
  Expected<Instruction> at(size_t i) const { return instructions[i]; }
  const Instruction& accepted(size_t i) const { return instructions[i]; }
};

/// A program held encoded: instruction i decoded when it is read.
struct EncodedProgram {
  std::span<const isa::EncodedInstruction> instructions;
  size_t size() const { return instructions.size(); }
  uint8_t opcode(size_t i) const { return isa::header::opcodeByte(instructions[i]); }
  Expected<Instruction> at(size_t i) const {
    auto decoded = isa::decode(instructions[i]);
    if (!decoded) return makeError("instruction ", i, ": ", decoded.error().message());
    return decoded;
  }
};

template <typename Program>
Expected<QueueView> viewProgram(const Program& program) {
  QueueView v;
  while (v.end < program.size() && program.opcode(v.end) != uint8_t(Opcode::Finish)) ++v.end;
  if (v.end == program.size()) return makeError("the program has no FINISH instruction");
  if (v.end >= kNone) return makeError("the program has ", v.end, " instructions before FINISH (too many)");
  v.queueOf.resize(v.end);
  v.opcode.resize(v.end);
  v.deps.resize(v.end);
  v.position.resize(v.end);
  for (uint32_t i = 0; i < v.end; ++i) {
    EMBER_ASSIGN_OR_RETURN(const Instruction in, program.at(i));
    const auto* spec = isa::findOpcode(uint8_t(in.opcode));
    if (!spec) return makeError("instruction ", i, ": undefined opcode");
    // Decoded instructions always pass; this bounds every product below.
    for (const auto& layout : spec->fields)
      if (in[layout.field] < isa::fieldMin(layout) || in[layout.field] > isa::fieldMax(layout))
        return makeError(describe(uint8_t(in.opcode), i), ": field '", layout.name, "' = ", in[layout.field],
                         " does not fit its ", int(layout.width), " bits");
    if (in.opcode == Opcode::Sync && (in[Field::QueueSel] < 0 || in[Field::QueueSel] >= isa::kNumQueues))
      return makeError(describe(uint8_t(in.opcode), i), ": q=", in[Field::QueueSel], " names no queue");
    if (in.vectorQueue && !isa::isVectorOpcode(in.opcode))
      return makeError(describe(uint8_t(in.opcode), i),
                       ": vq on an instruction that is not a vector instruction");
    const Queue q = in.queue();
    for (isa::Link l : isa::kLinks)
      if ((in.deps.pops(l) || in.deps.pushes(l)) && !isa::linkedQueue(q, l))
        return makeError(describe(uint8_t(in.opcode), i), ": the ", isa::queueName(q), " queue has no ",
                         l == isa::Link::Prev ? "previous" : "next", " queue");
    v.queueOf[i] = uint8_t(q);
    v.opcode[i] = uint8_t(in.opcode);
    v.deps[i] = in.deps;
    v.position[i] = uint32_t(v.order[int(q)].size());
    v.order[int(q)].push_back(i);
    for (isa::Link l : isa::kLinks)
      if (in.deps.pushes(l)) ++v.totalPushes[outbound(q, l)];
  }
  return v;
}

/// The abstract execution: fetch in program order into queues that hold at
/// most `depth` waiting instructions (the unit's own instruction is no longer
/// in its queue, as in the simulator), each unit executing its head as soon as
/// its tokens are there.
struct TokenMachine {
  TokenMachine(const QueueView& view, std::array<int64_t, isa::kNumQueues> depth)
      : view(view), depth(depth) {}

  const QueueView& view;
  std::array<int64_t, isa::kNumQueues> depth;

  size_t fetchNext = 0;
  std::array<size_t, isa::kNumQueues> fetched{}, executed{};
  std::array<std::vector<uint32_t>, kNumSemaphores> pushers;  ///< pushing instructions, in push order
  std::array<size_t, kNumSemaphores> popped{};

  bool canFetch(Queue q) const {
    const size_t inFlight = fetched[int(q)] - executed[int(q)];
    const int64_t waiting = int64_t(inFlight > 0 ? inFlight - 1 : 0);
    return waiting < depth[int(q)];
  }

  /// The first link whose token `in` still waits for, if any.
  std::optional<isa::Link> missingToken(const isa::DepFlags& deps, Queue q) const {
    for (isa::Link l : isa::kLinks)
      if (deps.pops(l) && popped[inbound(q, l)] >= pushers[inbound(q, l)].size()) return l;
    return std::nullopt;
  }

  /// Runs until nothing can move. `onExecute(index, pushers)` sees every
  /// executed instruction with the instructions whose pushes it consumed
  /// (one per link, kNone where it pops nothing); it returns an Error to stop.
  template <typename OnExecute>
  Error run(OnExecute&& onExecute) {
    for (bool progress = true; progress;) {
      progress = false;
      while (fetchNext < view.end && canFetch(Queue(view.queueOf[fetchNext]))) {
        ++fetched[view.queueOf[fetchNext++]];
        progress = true;
      }
      for (int qi = 0; qi < isa::kNumQueues; ++qi) {
        const Queue q = Queue(qi);
        while (executed[qi] < fetched[qi]) {
          const uint32_t index = view.order[qi][executed[qi]];
          const isa::DepFlags& deps = view.deps[index];
          if (missingToken(deps, q)) break;
          std::array<uint32_t, 3> from{kNone, kNone, kNone};
          for (isa::Link l : isa::kLinks)
            if (deps.pops(l)) from[size_t(l)] = pushers[inbound(q, l)][popped[inbound(q, l)]++];
          EMBER_RETURN_IF_ERROR(onExecute(index, from));
          for (isa::Link l : isa::kLinks)
            if (deps.pushes(l)) pushers[outbound(q, l)].push_back(index);
          ++executed[qi];
          progress = true;
        }
      }
    }
    return Error::success();
  }

  bool finished() const {
    if (fetchNext < view.end) return false;
    for (int q = 0; q < isa::kNumQueues; ++q)
      if (executed[q] < fetched[q]) return false;
    return true;
  }

  std::string deadlockMessage() const {
    std::ostringstream os;
    os << "deadlock:";
    const char* separator = " ";
    for (int qi = 0; qi < isa::kNumQueues; ++qi) {
      if (executed[qi] >= fetched[qi]) continue;
      const Queue q = Queue(qi);
      const uint32_t index = view.order[qi][executed[qi]];
      const Semaphore s = inbound(q, *missingToken(view.deps[index], q));
      os << separator << "the " << isa::queueName(q) << " queue waits at " << view.describe(index)
         << " for a token from " << isa::queueName(semaphoreSource(s)) << " (semaphore " << semaphoreName(s)
         << ": pop #" << popped[s] + 1 << ", the program pushes " << view.totalPushes[s] << " in all)";
      separator = "; ";
    }
    if (fetchNext < view.end) {
      const Queue q = Queue(view.queueOf[fetchNext]);
      os << separator << "fetch waits at " << view.describe(uint32_t(fetchNext)) << " for space in the full "
         << isa::queueName(q) << " queue (depth " << depth[int(q)] << ")";
    }
    os << " (no token can arrive)";
    return os.str();
  }
};

// ---- SRAM footprints ----

/// `rows` rows of `length` elements, `stride` apart, from `base`: scratchpad
/// bytes or accumulator entries.
struct Footprint {
  const char* operand;
  bool accumulator;
  bool write;
  int64_t base, rows, length, stride;
};

/// Every SRAM read and write of an instruction, from isa.md's semantics.
/// Returns the number of footprints written to `out`.
size_t footprints(const Instruction& in, std::array<Footprint, 4>& out) {
  size_t n = 0;
  auto add = [&](const char* operand, bool acc, bool write, int64_t base, int64_t rows, int64_t length,
                 int64_t stride) { out[n++] = {operand, acc, write, base, rows, length, stride}; };
  switch (in.opcode) {
    case Opcode::Load:
    case Opcode::Store: {
      const bool acc = in[Field::Mem] == int64_t(isa::Memory::Accumulator);
      const int64_t planes = std::max<int64_t>(1, in[Field::ZSize]);
      const bool load = in.opcode == Opcode::Load;
      // Loads also write the padding rows and columns.
      const int64_t rowsPerPlane = in[Field::YSize] + (load ? in[Field::PadTop] + in[Field::PadBottom] : 0);
      const int64_t length = in[Field::XSize] + (load ? in[Field::PadLeft] + in[Field::PadRight] : 0);
      add("sram", acc, load, in[Field::SramAddr], planes * rowsPerPlane, length, in[Field::SramStride]);
      break;
    }
    case Opcode::Gemm: {
      const int64_t m = in[Field::M], k = in[Field::K], n = in[Field::N];
      add("inp", false, false, in[Field::InpAddr], m, k, in[Field::InpStride]);
      // Without preload the weights come from the array, not the scratchpad.
      if (in[Field::Preload]) add("wgt", false, false, in[Field::WgtAddr], k, n, in[Field::WgtStride]);
      if (in[Field::Accumulate]) add("acc", true, false, in[Field::AccAddr], m, n, in[Field::AccStride]);
      if (in[Field::BiasInit]) add("bias", true, false, in[Field::BiasAddr], 1, n, 0);
      add("acc", true, true, in[Field::AccAddr], m, n, in[Field::AccStride]);
      break;
    }
    case Opcode::Requant:
      add("src", true, false, in[Field::Src], in[Field::Rows], in[Field::Cols], in[Field::SrcStride]);
      add("dst", false, true, in[Field::Dst], in[Field::Rows], in[Field::Cols], in[Field::DstStride]);
      break;
    case Opcode::VAdd:
      add("src", true, false, in[Field::Src], in[Field::Rows], in[Field::Cols], in[Field::SrcStride]);
      add("dst", true, false, in[Field::Dst], in[Field::Rows], in[Field::Cols], in[Field::DstStride]);
      add("dst", true, true, in[Field::Dst], in[Field::Rows], in[Field::Cols], in[Field::DstStride]);
      break;
    case Opcode::VClip:
      add("dst", true, false, in[Field::Dst], in[Field::Rows], in[Field::Cols], in[Field::DstStride]);
      add("dst", true, true, in[Field::Dst], in[Field::Rows], in[Field::Cols], in[Field::DstStride]);
      break;
    case Opcode::Lut:
      add("src", false, false, in[Field::Src], in[Field::Rows], in[Field::Cols], in[Field::SrcStride]);
      add("table", false, false, in[Field::LutAddr], 1, int64_t(isa::kLutTableBytes), 0);
      add("dst", false, true, in[Field::Dst], in[Field::Rows], in[Field::Cols], in[Field::DstStride]);
      break;
    case Opcode::Pool: {
      const int64_t oh = in[Field::OutH], ow = in[Field::OutW], c = in[Field::Channels];
      const int64_t inH = oh > 0 ? (oh - 1) * in[Field::StrideH] + in[Field::KernelH] : 0;
      const int64_t inW = ow > 0 ? (ow - 1) * in[Field::StrideW] + in[Field::KernelW] : 0;
      add("src", false, false, in[Field::Src], inH, inW * c, in[Field::SrcStride]);
      add("dst", false, true, in[Field::Dst], oh, ow * c, in[Field::DstStride]);
      break;
    }
    case Opcode::Softmax:
      add("params", false, false, in[Field::ParamAddr], 1, int64_t(isa::kSoftmaxParamBytes), 0);
      add("src", false, false, in[Field::Src], in[Field::Rows], in[Field::Cols], in[Field::SrcStride]);
      if (in[Field::Masked])
        add("mask", false, false, in[Field::Src2], in[Field::Rows], in[Field::Cols], in[Field::Src2Stride]);
      add("dst", false, true, in[Field::Dst], in[Field::Rows], in[Field::Cols], in[Field::DstStride]);
      break;
    case Opcode::LayerNorm:
      add("params", false, false, in[Field::ParamAddr], 1, int64_t(isa::layerNormParamBytes(in[Field::Cols])),
          0);
      add("src", false, false, in[Field::Src], in[Field::Rows], in[Field::Cols], in[Field::SrcStride]);
      add("dst", false, true, in[Field::Dst], in[Field::Rows], in[Field::Cols], in[Field::DstStride]);
      break;
    case Opcode::EAdd:
      add("params", false, false, in[Field::ParamAddr], 1, int64_t(isa::kEAddParamBytes), 0);
      add("a", false, false, in[Field::Src], in[Field::Rows], in[Field::Cols], in[Field::SrcStride]);
      add("b", false, false, in[Field::Src2], in[Field::Rows], in[Field::Cols], in[Field::Src2Stride]);
      add("dst", false, true, in[Field::Dst], in[Field::Rows], in[Field::Cols], in[Field::DstStride]);
      break;
    default:  // sync: tokens only
      break;
  }
  return n;
}

/// A footprint with rows that neither overlap nor touch: rows == 1 or
/// stride > length. Rows that do (stride <= length) merge into one range.
Footprint normalize(Footprint f) {
  if (f.rows > 1 && f.stride <= f.length) {
    f.length += (f.rows - 1) * f.stride;
    f.rows = 1;
  }
  if (f.rows == 1) f.stride = 0;
  return f;
}

int64_t endOf(const Footprint& f) { return f.base + (f.rows - 1) * f.stride + f.length; }

/// Whether two normalized footprints share an element; if so [first, end) is
/// the intersection of the first pair of rows that overlap. Costs O(rows of
/// the smaller one) when the bounding ranges overlap, O(1) otherwise.
bool overlap(const Footprint& a, const Footprint& b, int64_t& first, int64_t& end) {
  if (endOf(a) <= b.base || endOf(b) <= a.base) return false;
  const Footprint& few = a.rows <= b.rows ? a : b;
  const Footprint& many = a.rows <= b.rows ? b : a;
  for (int64_t r = 0; r < few.rows; ++r) {
    const int64_t x = few.base + r * few.stride, xEnd = x + few.length;
    // The first row of `many` that ends after x (rows are sorted and disjoint).
    const int64_t behind = x - many.base - many.length;
    const int64_t i = many.rows == 1 || behind < 0 ? 0 : behind / many.stride + 1;
    if (i >= many.rows) break;
    const int64_t start = many.base + i * many.stride;
    if (start < xEnd) {
      first = std::max(x, start);
      end = std::min(xEnd, start + many.length);
      return true;
    }
  }
  return false;
}

std::string rangeText(bool accumulator, int64_t first, int64_t end) {
  std::ostringstream os;
  os << (accumulator ? "accumulator entries [0x" : "scratchpad bytes [0x") << std::hex << first << ", 0x"
     << end << ")";
  return os.str();
}

/// Happens-before by vector clocks over the queues, and per queue a
/// window of its recent SRAM accesses. An access only needs comparing with
/// the accesses of other queues that do not happen before it, which are the
/// tail of each window (positions >= the clock's component). Accesses that
/// happen before every future instruction of every other queue leave the
/// window, so its size follows the instructions in flight, not the program.
class RaceChecker {
 public:
  RaceChecker(const ProgramView& program, const QueueView& view, const NpuConfig& config)
      : program_(program),
        view_(view),
        scratchpadBytes_(config.scratchpadBytes),
        accumulatorEntries_(config.accumulatorEntries()),
        clocks_(view.end) {}

  Error execute(uint32_t index, const std::array<uint32_t, 3>& pushers) {
    // clocks_[i][q]: how many instructions of queue q happen before or at i.
    const int q = view_.queueOf[index];
    auto& clock = clocks_[index];
    const uint32_t pos = view_.position[index];
    if (pos > 0) clock = clocks_[view_.order[q][pos - 1]];
    for (uint32_t from : pushers)
      if (from != kNone)
        for (int k = 0; k < isa::kNumQueues; ++k) clock[k] = std::max(clock[k], clocks_[from][k]);
    clock[q] = pos + 1;

    std::array<Footprint, 4> accesses{};
    const size_t count = footprints(program_.at(index), accesses);
    for (size_t a = 0; a < count; ++a) {
      EMBER_RETURN_IF_ERROR(checkBounds(index, accesses[a]));
      accesses[a] = normalize(accesses[a]);
    }
    for (size_t a = 0; a < count; ++a) {
      if (accesses[a].rows == 0 || accesses[a].length == 0) continue;
      for (int other = 0; other < isa::kNumQueues; ++other)
        if (other != q) EMBER_RETURN_IF_ERROR(checkAgainst(index, accesses[a], other));
    }
    for (size_t a = 0; a < count; ++a)
      if (accesses[a].rows > 0 && accesses[a].length > 0) window_[q].push_back({index, pos, accesses[a]});
    ++executed_[q];
    prune();
    return Error::success();
  }

 private:
  struct Access {
    uint32_t index, position;
    Footprint footprint;
  };

  Error checkBounds(uint32_t index, const Footprint& f) const {
    if (f.rows == 0 || f.length == 0) return Error::success();
    const int64_t size = f.accumulator ? accumulatorEntries_ : scratchpadBytes_;
    if (endOf(f) > size)
      return makeError(view_.describe(index), ": operand '", f.operand, "' accesses ",
                       rangeText(f.accumulator, f.base, endOf(f)), " outside the ", size,
                       f.accumulator ? "-entry accumulator" : "-byte scratchpad");
    return Error::success();
  }

  Error checkAgainst(uint32_t index, const Footprint& f, int other) const {
    const auto& window = window_[other];
    const uint32_t ordered = clocks_[index][other];  // positions below this happen before `index`
    for (auto it = window.rbegin(); it != window.rend() && it->position >= ordered; ++it) {
      const Footprint& g = it->footprint;
      int64_t first = 0, end = 0;
      if (g.accumulator != f.accumulator || !(g.write || f.write) || !overlap(f, g, first, end)) continue;
      return makeError("SRAM race: ", view_.describe(it->index), " on the ", isa::queueName(Queue(other)),
                       " queue ", g.write ? "writes" : "reads", " (operand '", g.operand, "') and ",
                       view_.describe(index), " on the ", isa::queueName(Queue(view_.queueOf[index])),
                       " queue ", f.write ? "writes" : "reads", " (operand '", f.operand, "') ",
                       rangeText(f.accumulator, first, end), " with no dependency token ordering them");
    }
    return Error::success();
  }

  /// Drops the accesses of each queue that happen before every instruction
  /// the other queues have yet to execute (their clocks only grow).
  void prune() {
    for (int q = 0; q < isa::kNumQueues; ++q) {
      uint32_t safe = kNone;
      for (int r = 0; r < isa::kNumQueues; ++r) {
        if (r == q || executed_[r] == view_.order[r].size()) continue;  // r has nothing left to run
        safe = std::min(safe, executed_[r] ? clocks_[view_.order[r][executed_[r] - 1]][q] : 0u);
      }
      auto& window = window_[q];
      while (!window.empty() && window.front().position < safe) window.pop_front();
    }
  }

  const ProgramView& program_;
  const QueueView& view_;
  int64_t scratchpadBytes_, accumulatorEntries_;
  std::vector<std::array<uint32_t, isa::kNumQueues>> clocks_;
  std::array<std::deque<Access>, isa::kNumQueues> window_;
  std::array<size_t, isa::kNumQueues> executed_{};
};

}  // namespace

ProgramView::ProgramView(std::span<const isa::Instruction> decoded,
                         std::span<const isa::EncodedInstruction> encoded, std::unique_ptr<QueueView> queues)
    : decoded_(decoded), encoded_(encoded), queues_(std::move(queues)) {}
ProgramView::ProgramView(ProgramView&&) noexcept = default;
ProgramView& ProgramView::operator=(ProgramView&&) noexcept = default;
ProgramView::~ProgramView() = default;

Expected<ProgramView> ProgramView::of(const std::vector<isa::Instruction>& program) {
  EMBER_ASSIGN_OR_RETURN(QueueView queues, viewProgram(DecodedProgram{program}));
  return ProgramView(program, {}, std::make_unique<QueueView>(std::move(queues)));
}

Expected<ProgramView> ProgramView::of(std::span<const isa::EncodedInstruction> program) {
  EMBER_ASSIGN_OR_RETURN(QueueView queues, viewProgram(EncodedProgram{program}));
  return ProgramView({}, program, std::make_unique<QueueView>(std::move(queues)));
}

isa::Instruction ProgramView::at(size_t index) const {
  // of() decoded every instruction below FINISH once already.
  return encoded_.empty() ? decoded_[index] : isa::decodeAccepted(encoded_[index]);
}

Error checkTokens(const std::vector<isa::Instruction>& program, const NpuConfig& config) {
  EMBER_ASSIGN_OR_RETURN(const ProgramView view, ProgramView::of(program));
  return checkTokens(view, config);
}

Error checkTokens(const ProgramView& programView, const NpuConfig& config) {
  const QueueView& view = programView.queues();
  TokenMachine machine{
      view,
      {config.loadQueueDepth, config.computeQueueDepth, config.storeQueueDepth, config.vectorQueueDepth}};
  EMBER_RETURN_IF_ERROR(
      machine.run([](uint32_t, const std::array<uint32_t, 3>&) { return Error::success(); }));
  if (!machine.finished()) return Error::make(machine.deadlockMessage());
  // Data-ready semaphores (forward: load->compute, compute->store and the
  // vector queue's load->vector, compute->vector, vector->store) must end
  // empty: a token left there announces data that nobody consumes.
  // Buffer-free semaphores (backward) may keep the credits that a
  // double-buffered schedule returns after the last use of each buffer; a
  // missing pop on them lets a unit overwrite a buffer in use, which
  // checkSramRaces reports as a race.
  for (int si = 0; si < kNumSemaphores; ++si) {
    const Semaphore s = Semaphore(si);
    if (!isDataReady(s)) continue;
    const auto& pushers = machine.pushers[s];
    const size_t left = pushers.size() - machine.popped[s];
    if (left == 0) continue;
    return makeError("unbalanced tokens: semaphore ", semaphoreName(s), " keeps ", left,
                     " token(s) that no instruction pops: first unpopped push by ",
                     view.describe(pushers[machine.popped[s]]), ", last push by ",
                     view.describe(pushers.back()));
  }
  return Error::success();
}

namespace {

/// The instructions of a view: those below its FINISH, all decodable.
struct ViewedProgram {
  const ProgramView& view;
  size_t size() const { return view.queues().end; }
  uint8_t opcode(size_t i) const { return view.queues().opcode[i]; }
  Instruction accepted(size_t i) const { return view.at(i); }
};

/// checkWeightBuffers over a DecodedProgram or a ViewedProgram: only the
/// gemms are read (decoded), up to the first FINISH.
template <typename Program>
Error checkWeightBuffersOf(const Program& program, const NpuConfig& config) {
  struct Kept {
    int64_t k = 0, n = 0;
    uint32_t preloadedBy = kNone;
  };
  auto describe = [&](uint32_t i) { return npu::describe(program.opcode(i), i); };
  std::array<Kept, 2> buffers;
  for (uint32_t i = 0; i < program.size(); ++i) {
    if (program.opcode(i) == uint8_t(Opcode::Finish)) break;
    if (program.opcode(i) != uint8_t(Opcode::Gemm)) continue;
    const Instruction& in = program.accepted(i);
    const int64_t wbuf = in[Field::WeightBuffer];
    if (wbuf >= config.weightBuffers)
      return makeError(describe(i), ": wbuf=", wbuf,
                       " but the config has matrix_engine.weight_buffers: ", config.weightBuffers);
    Kept& kept = buffers[size_t(wbuf)];
    const int64_t k = in[Field::K], n = in[Field::N];
    if (in[Field::Preload]) {
      kept = {k, n, i};
      continue;
    }
    if (kept.preloadedBy == kNone)
      return makeError(describe(i), ": streams ", k, "x", n, " weights from buffer ", wbuf,
                       ", which no earlier gemm preloaded");
    if (kept.k != k || kept.n != n)
      return makeError(describe(i), ": streams ", k, "x", n, " weights from buffer ", wbuf, ", which holds ",
                       kept.k, "x", kept.n, " from ", describe(kept.preloadedBy));
  }
  return Error::success();
}

}  // namespace

Error checkWeightBuffers(const std::vector<isa::Instruction>& program, const NpuConfig& config) {
  return checkWeightBuffersOf(DecodedProgram{program}, config);
}

Error checkWeightBuffers(const ProgramView& program, const NpuConfig& config) {
  return checkWeightBuffersOf(ViewedProgram{program}, config);
}

Error checkSramRaces(const std::vector<isa::Instruction>& program, const NpuConfig& config) {
  EMBER_ASSIGN_OR_RETURN(const ProgramView view, ProgramView::of(program));
  return checkSramRaces(view, config);
}

Error checkSramRaces(const ProgramView& programView, const NpuConfig& config) {
  const QueueView& view = programView.queues();
  // Queue depths only delay fetch; they never order execution, so the
  // happens-before relation is built with unbounded queues.
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  TokenMachine machine{view, {kUnbounded, kUnbounded, kUnbounded, kUnbounded}};
  RaceChecker checker(programView, view, config);
  EMBER_RETURN_IF_ERROR(machine.run([&](uint32_t index, const std::array<uint32_t, 3>& pushers) {
    return checker.execute(index, pushers);
  }));
  if (!machine.finished())
    return Error::make("cannot order the SRAM accesses: the tokens deadlock even with unbounded queues (" +
                       machine.deadlockMessage() + ")");
  return Error::success();
}

Error checkAllocation(const std::vector<SramBuffer>& buffers, const NpuConfig& config) {
  auto where = [](const SramBuffer& b) {
    std::ostringstream os;
    os << "'" << b.name << "' (" << rangeText(b.accumulator, int64_t(b.address), int64_t(b.address + b.size))
       << ", instructions " << b.firstInstruction << ".." << b.lastInstruction << ")";
    return os.str();
  };
  std::vector<size_t> live;  // buffers that hold memory, by first instruction
  for (size_t i = 0; i < buffers.size(); ++i) {
    const SramBuffer& b = buffers[i];
    const uint64_t capacity =
        uint64_t(std::max<int64_t>(0, b.accumulator ? config.accumulatorEntries() : config.scratchpadBytes));
    if (b.firstInstruction > b.lastInstruction)
      return makeError("SRAM allocation: buffer ", where(b), " ends before it starts");
    if (b.address > capacity || b.size > capacity - b.address)
      return makeError("SRAM allocation: buffer ", where(b), " does not fit the ", capacity,
                       b.accumulator ? "-entry accumulator" : "-byte scratchpad", " of config '", config.name,
                       "'");
    if (b.size > 0) live.push_back(i);
  }
  std::sort(live.begin(), live.end(),
            [&](size_t a, size_t b) { return buffers[a].firstInstruction < buffers[b].firstInstruction; });
  // Sweep over time. The buffers live at one instruction are pairwise
  // disjoint (or we already failed), so a new buffer only needs comparing
  // with its neighbours by address.
  using Active = std::pair<uint64_t, size_t>;  // address, buffer
  std::array<std::set<Active>, 2> active;      // scratchpad, accumulator
  auto endsFirst = [&](size_t a, size_t b) {
    return buffers[a].lastInstruction > buffers[b].lastInstruction;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(endsFirst)> expiring(endsFirst);
  for (size_t i : live) {
    const SramBuffer& b = buffers[i];
    while (!expiring.empty() && buffers[expiring.top()].lastInstruction < b.firstInstruction) {
      const SramBuffer& done = buffers[expiring.top()];
      active[done.accumulator].erase({done.address, expiring.top()});
      expiring.pop();
    }
    auto& set = active[b.accumulator];
    const auto next = set.lower_bound({b.address, 0});
    if (next != set.end() && next->first < b.address + b.size)
      return makeError("SRAM allocation: buffers ", where(buffers[next->second]), " and ", where(b),
                       " overlap while both are live");
    if (next != set.begin()) {
      const SramBuffer& prev = buffers[std::prev(next)->second];
      if (prev.address + prev.size > b.address)
        return makeError("SRAM allocation: buffers ", where(prev), " and ", where(b),
                         " overlap while both are live");
    }
    set.insert({b.address, i});
    expiring.push(i);
  }
  return Error::success();
}

}  // namespace ember::npu
