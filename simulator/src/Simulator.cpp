// The SystemC/TLM-2.0 model of the Ember NPU (docs/npu/architecture.md and
// docs/npu/timing-model.md).
//
// Structure: one NpuTop module per process, elaborated on the first run and
// reused afterwards (SystemC 2.3 cannot elaborate a second hierarchy after
// sc_start). Each simulate() call loads a program into it, notifies the fetch
// thread and calls sc_start(), which returns when no event is pending: either
// every queue drained after FINISH (success), a unit reported an illegal
// instruction, or every unit is blocked (deadlock).
//
// Time is kept in cycles: 1 cycle = 1 ns of SystemC time whatever the clock
// (the clock only converts cycles to seconds). Units advance time once per
// instruction; the DMA makes one b_transport per row and synchronises with
// SystemC time every `quantum_cycles` (temporal decoupling).
#include "ember/npu/Simulator.h"

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <systemc>
#include <tlm>
#include <utility>

#include "Functional.h"
#include "SimKernel.h"
#include "ember/Arithmetic.h"
#include "ember/npu/MatrixEngine.h"
#include "ember/npu/Timing.h"

// libsystemc references sc_main; the simulator is a library and never calls
// sc_elab_and_sim, so a weak definition satisfies the linker and lets a
// program that has its own sc_main win.
extern "C" __attribute__((weak)) int sc_main(int, char**) { return 0; }

namespace ember::npu {
namespace {

using namespace sc_core;
using isa::Field;
using isa::Instruction;
using isa::Opcode;
using isa::Queue;

// A one-chip run: 1 cycle = 1 ns of SystemC time. A co-simulated chip's
// cycle is its clock period (RunState::unitsPerCycle). from_value avoids
// sc_time's slow double path.
uint64_t timeUnitsPerNanosecond() {
  static const uint64_t units = sc_time(1, SC_NS).value();
  return units;
}

// Reserves a shared port first-come first-served: an access asking at `at`
// for `cycles` starts when the port is free.
struct Port {
  uint64_t freeAt = 0;
  uint64_t reserve(uint64_t at, uint64_t cycles, uint64_t& waited) {
    const uint64_t start = std::max(at, freeAt);
    waited += start - at;
    freeAt = start + cycles;
    return start;
  }
};

/// Timing side channel of a transaction: for TLM_IGNORE_COMMAND the initiator
/// asks to occupy the port for `occupyCycles`; the target reports when the
/// access started and how long it waited for the port.
struct TimingExtension : tlm::tlm_extension<TimingExtension> {
  uint64_t occupyCycles = 0;
  uint64_t startCycle = 0;
  uint64_t waited = 0;
  tlm_extension_base* clone() const override { return new TimingExtension(*this); }
  void copy_from(const tlm_extension_base& other) override {
    *this = static_cast<const TimingExtension&>(other);
  }
};

/// DRAM, scratchpad and accumulator: a byte array behind a TLM target socket
/// with `banks` ports, each moving `bytesPerCycle`.
class MemoryTarget : public sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<MemoryTarget> socket;

  // NOLINTNEXTLINE(performance-unnecessary-value-param): SystemC passes module names by value
  explicit MemoryTarget(sc_module_name name) : sc_module(name), socket("socket") {
    socket.register_b_transport(this, &MemoryTarget::bTransport);
    socket.register_get_direct_mem_ptr(this, &MemoryTarget::getDirectMemPtr);
  }

  void configure(uint8_t* data, uint64_t size, uint64_t banks, uint64_t bytesPerCycle, const uint64_t* t0,
                 uint64_t unitsPerCycle) {
    data_ = data;
    size_ = size;
    bankBytes_ = std::max<uint64_t>(1, size / banks);
    bytesPerCycle_ = bytesPerCycle;
    ports_.assign(banks, Port{});
    t0_ = t0;
    unitsPerCycle_ = unitsPerCycle;
    readBytes = writeBytes = 0;
    written_.assign(ceilDiv(size, 64), false);
    writtenLines_ = 0;
  }

  uint64_t bankOf(uint64_t address) const {
    return std::min<uint64_t>(address / bankBytes_, ports_.size() - 1);
  }
  void markWritten(uint64_t address, uint64_t bytes) {
    if (bytes == 0) return;
    for (uint64_t line = address / 64; line <= (address + bytes - 1) / 64 && line < written_.size(); ++line)
      if (!written_[line]) {
        written_[line] = true;
        ++writtenLines_;
      }
  }
  uint64_t peakBytes() const { return std::min(size_, writtenLines_ * 64); }

  /// Co-simulated with a shared DRAM: every data transaction also reserves
  /// its bytes' time on the system's calendar (null: this memory alone).
  void shareWith(detail::SharedDramCalendar* calendar) {
    shared_ = calendar;
    sharedWaitCycles = 0;
  }

  uint64_t readBytes = 0, writeBytes = 0;
  uint64_t sharedWaitCycles = 0;  ///< cycles transactions waited for the shared DRAM

 private:
  uint64_t nowCycle() const { return (sc_time_stamp().value() - *t0_) / unitsPerCycle_; }

  /// A data transaction on a shared DRAM: it starts on this memory's port as
  /// usual and also takes its bytes' time on the shared DRAM from then (or
  /// once the DRAM is free); it ends when both are done, in whole cycles.
  /// `occupy` grows by what the shared DRAM adds: a DRAM stall (`waited`),
  /// also counted in sharedWaitCycles.
  uint64_t reserveShared(Port& port, uint64_t at, uint64_t length, uint64_t& occupy, uint64_t& waited) {
    const uint64_t start = port.reserve(at, occupy, waited);
    const uint64_t sharedStart = shared_->reserve(*t0_ + start * unitsPerCycle_, length);
    const uint64_t sharedEnd = ceilDiv(sharedStart + shared_->holdUnits(length) - *t0_, unitsPerCycle_);
    if (sharedEnd > start + occupy) {
      waited += sharedEnd - (start + occupy);
      sharedWaitCycles += sharedEnd - (start + occupy);
      occupy = sharedEnd - start;
      port.freeAt = sharedEnd;
    }
    return start;
  }

  void bTransport(int, tlm::tlm_generic_payload& p, sc_time& delay) {
    auto* ext = p.get_extension<TimingExtension>();
    const uint64_t address = p.get_address(), length = p.get_data_length();
    if (address > size_ || length > size_ - address) {  // initiators check ranges first
      p.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    const uint64_t now = nowCycle();
    const uint64_t at = now + delay.value() / unitsPerCycle_;
    const bool data = p.get_command() != tlm::TLM_IGNORE_COMMAND;
    uint64_t occupy = !data && ext ? ext->occupyCycles : timing::portCycles(length, bytesPerCycle_);
    uint64_t waited = 0;
    Port& port = ports_[bankOf(address)];
    const uint64_t start =
        shared_ && data ? reserveShared(port, at, length, occupy, waited) : port.reserve(at, occupy, waited);
    if (p.get_command() == tlm::TLM_READ_COMMAND) {
      std::memcpy(p.get_data_ptr(), data_ + address, length);
      readBytes += length;
    } else if (p.get_command() == tlm::TLM_WRITE_COMMAND) {
      std::memcpy(data_ + address, p.get_data_ptr(), length);
      writeBytes += length;
      markWritten(address, length);
    }
    if (ext) {
      ext->startCycle = start;
      ext->waited = waited;
    }
    delay = sc_time::from_value((start + occupy - now) * unitsPerCycle_);
    p.set_response_status(tlm::TLM_OK_RESPONSE);
  }

  bool getDirectMemPtr(int, tlm::tlm_generic_payload&, tlm::tlm_dmi& dmi) {
    dmi.set_dmi_ptr(data_);
    dmi.set_start_address(0);
    dmi.set_end_address(size_ ? size_ - 1 : 0);
    dmi.allow_read_write();
    return true;
  }

  uint8_t* data_ = nullptr;
  uint64_t size_ = 0, bankBytes_ = 1, bytesPerCycle_ = 1;
  std::vector<Port> ports_;
  const uint64_t* t0_ = nullptr;
  uint64_t unitsPerCycle_ = 1;
  std::vector<bool> written_;
  uint64_t writtenLines_ = 0;
  detail::SharedDramCalendar* shared_ = nullptr;
};

// Dependency-token counters, one per ordered pair of linked queues
// (isa.md "Dependency tokens"): index from * kNumQueues + to.
using Token = int;
constexpr int kNumTokens = isa::kNumQueues * isa::kNumQueues;
Token inboundToken(Queue q, isa::Link l) { return int(*isa::linkedQueue(q, l)) * isa::kNumQueues + int(q); }
Token outboundToken(Queue q, isa::Link l) { return int(q) * isa::kNumQueues + int(*isa::linkedQueue(q, l)); }
std::string_view tokenSource(Token t) { return isa::queueName(Queue(t / isa::kNumQueues)); }

/// Everything one simulate() call owns.
struct RunState {
  const Bundle* bundle = nullptr;
  const NpuConfig* config = nullptr;
  const SimOptions* options = nullptr;
  std::vector<Instruction> program;
  std::vector<uint8_t> scratchpad, accumulator;  // accumulator: int32 entries as bytes
  uint8_t* dram = nullptr;
  uint64_t dramBytes = 0;
  uint64_t t0 = 0;             ///< SystemC time units at the run's start
  uint64_t unitsPerCycle = 1;  ///< SystemC time units per cycle
  bool signalDone = false;     ///< co-simulated: notify the top's doneEvent once drained
  detail::SharedDramCalendar* sharedDram = nullptr;  ///< co-simulated on a shared DRAM
  int activeUnits = 0;  ///< units holding an instruction (popped, not yet parked again)

  std::deque<uint32_t> queues[isa::kNumQueues];
  uint64_t tokens[kNumTokens] = {};
  bool fetchDone = false;
  bool aborted = false;
  std::optional<Error> error;

  // For the deadlock report.
  struct Blocked {
    bool onToken = false;
    uint32_t index = 0;
    Token token = 0;
    bool busy = false;
  } blocked[isa::kNumQueues];
  std::optional<std::pair<uint32_t, Queue>> fetchBlocked;

  std::unique_ptr<MatrixEngine> engine;  // fast model or verilated RTL
  SimStats stats;
  std::chrono::steady_clock::time_point hostStart;
  std::chrono::steady_clock::time_point lastProgress;
};

class NpuTop : public sc_module {
 public:
  MemoryTarget dram{"dram"}, scratchpad{"scratchpad"}, accumulator{"accumulator"};
  tlm_utils::simple_initiator_socket<NpuTop> loadDram{"load_dram"}, loadSpad{"load_spad"},
      loadAcc{"load_acc"};
  tlm_utils::simple_initiator_socket<NpuTop> storeDram{"store_dram"}, storeSpad{"store_spad"},
      storeAcc{"store_acc"};
  tlm_utils::simple_initiator_socket<NpuTop> computeSpad{"compute_spad"}, computeAcc{"compute_acc"};

  SC_HAS_PROCESS(NpuTop);
  // NOLINTNEXTLINE(performance-unnecessary-value-param): SystemC passes module names by value
  explicit NpuTop(sc_module_name name) : sc_module(name) {
    loadDram.bind(dram.socket);
    storeDram.bind(dram.socket);
    loadSpad.bind(scratchpad.socket);
    storeSpad.bind(scratchpad.socket);
    computeSpad.bind(scratchpad.socket);
    loadAcc.bind(accumulator.socket);
    storeAcc.bind(accumulator.socket);
    computeAcc.bind(accumulator.socket);
    SC_THREAD(fetchThread);
    set_stack_size(256 * 1024);
    SC_THREAD(loadThread);
    set_stack_size(256 * 1024);
    SC_THREAD(computeThread);
    set_stack_size(256 * 1024);
    SC_THREAD(storeThread);
    set_stack_size(256 * 1024);
    SC_THREAD(vectorThread);
    set_stack_size(256 * 1024);
    for (auto& p : payloads_) p.set_extension(new TimingExtension);
  }

  /// Runs one program; returns when SystemC has no event left.
  void run(RunState& state) {
    begin(state);
    sc_start();
  }

  /// Loads the program and starts the fetch; the run proceeds as SystemC time does.
  void begin(RunState& state) {
    run_ = &state;
    state.t0 = sc_time_stamp().value();
    const uint64_t scale = state.unitsPerCycle;
    dram.configure(state.dram, state.dramBytes, 1, uint64_t(state.config->dramBytesPerCycle), &state.t0,
                   scale);
    dram.shareWith(state.sharedDram);
    scratchpad.configure(state.scratchpad.data(), state.scratchpad.size(),
                         uint64_t(state.config->scratchpadBanks), uint64_t(state.config->bankWidthBytes),
                         &state.t0, scale);
    accumulator.configure(state.accumulator.data(), state.accumulator.size(),
                          uint64_t(state.config->accumulatorBanks),
                          uint64_t(state.config->accumulatorPortBytes), &state.t0, scale);
    startEvent_.notify(SC_ZERO_TIME);
  }

  /// Co-simulated (called from another SystemC thread): runs one program and
  /// returns once every queue drained after FINISH, or on an error.
  void runHere(RunState& state) {
    state.signalDone = true;
    begin(state);
    while (!state.aborted && !drained(state)) wait(doneEvent_ | abortEvent_);
  }

  /// Co-simulated, after an error or deadlock: lets every unit see the abort
  /// and park, so that the next program starts clean.
  void unwindHere(RunState& state) {
    state.aborted = true;
    abortEvent_.notify(SC_ZERO_TIME);
    while (!state.fetchDone || state.activeUnits > 0) wait(idleEvent_);
    for (auto& q : state.queues) q.clear();
    run_ = nullptr;
  }

  /// The fetch finished, no unit holds an instruction and every queue is
  /// empty: the program ran to FINISH.
  static bool drained(const RunState& r) {
    if (!r.fetchDone || r.activeUnits > 0) return false;
    return std::all_of(std::begin(r.queues), std::end(r.queues), [](const auto& q) { return q.empty(); });
  }
  /// Co-simulated: wakes the driver waiting for the end of the run or of its unwinding.
  void signalIdle() {
    if (!run_ || !run_->signalDone) return;  // a one-chip run ends when sc_start returns
    idleEvent_.notify(SC_ZERO_TIME);
    if (drained(*run_)) doneEvent_.notify(SC_ZERO_TIME);
  }
  /// The run on this top, if any (the co-simulation's deadlock check).
  RunState* currentRun() const { return run_; }
  /// Stops a run that can make no progress (co-simulated deadlock).
  void abortRun() {
    if (!run_) return;
    run_->aborted = true;
    abortEvent_.notify(SC_ZERO_TIME);
  }

  /// Unblocks every thread after an error or deadlock so the next run starts clean.
  void unwind(RunState& state) {
    state.aborted = true;
    abortEvent_.notify(SC_ZERO_TIME);
    sc_start();
    for (auto& q : state.queues) q.clear();
    run_ = nullptr;
  }

  void finish() { run_ = nullptr; }

 private:
  uint64_t now() const { return (sc_time_stamp().value() - run_->t0) / run_->unitsPerCycle; }
  sc_time cycles(uint64_t n) const { return sc_time::from_value(n * run_->unitsPerCycle); }
  uint64_t toCycles(const sc_time& t) const { return t.value() / run_->unitsPerCycle; }
  void waitUntil(uint64_t cycle) {
    const uint64_t n = now();
    if (cycle > n) wait(cycles(cycle - n));
  }
  int64_t depth(Queue q) const {
    const NpuConfig& c = *run_->config;
    return q == Queue::Load      ? c.loadQueueDepth
           : q == Queue::Compute ? c.computeQueueDepth
           : q == Queue::Vector  ? c.vectorQueueDepth
                                 : c.storeQueueDepth;
  }

  void fail(uint32_t index, const Error& e) {
    if (run_->aborted) return;
    const auto* spec = isa::findOpcode(uint8_t(run_->program[index].opcode));
    run_->error = makeError("instruction ", index, " (", spec ? spec->mnemonic : "?", "): ", e.message());
    run_->aborted = true;
    abortEvent_.notify(SC_ZERO_TIME);
  }

  void fetchThread() {
    for (;;) {
      wait(startEvent_);
      RunState& r = *run_;
      UnitStats& fetch = r.stats.units[size_t(Unit::Fetch)];
      for (uint32_t i = 0; i < r.program.size() && !r.aborted; ++i) {
        const Instruction& in = r.program[i];
        if (in.opcode == Opcode::Finish) break;
        const Queue q = in.queue();
        const uint64_t before = now();
        while (int64_t(r.queues[int(q)].size()) >= depth(q) && !r.aborted) {
          r.fetchBlocked = {i, q};
          wait(spaceEvent_[int(q)] | abortEvent_);
        }
        r.fetchBlocked.reset();
        if (r.aborted) break;
        fetch.stallCycles[size_t(StallReason::QueueFull)] += now() - before;
        wait(cycles(timing::kFetchCycles));  // fetch and decode, one instruction at a time
        ++fetch.busyCycles;
        if (r.options && r.options->maxCycles && now() > r.options->maxCycles) {
          r.error = makeError("exceeded the cycle budget of ", r.options->maxCycles, " cycles at cycle ",
                              now(), " (instruction ", i, " of ", r.program.size(), ")");
          r.aborted = true;
          abortEvent_.notify(SC_ZERO_TIME);
          break;
        }
        r.queues[int(q)].push_back(i);
        queueEvent_[int(q)].notify(SC_ZERO_TIME);
        if ((i & 1023) == 0) {
          reportProgress(i);
          if (r.options && r.options->cancelled && r.options->cancelled()) {
            r.error = makeError("interrupted after ", i, " of ", r.program.size(), " instructions");
            r.aborted = true;
            abortEvent_.notify(SC_ZERO_TIME);
            break;
          }
        }
      }
      r.fetchDone = true;
      signalIdle();
    }
  }

  void reportProgress(uint32_t index) {
    RunState& r = *run_;
    if (!r.options || r.options->progressAfterSeconds < 0) return;
    const auto t = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(t - r.hostStart).count();
    if (elapsed < r.options->progressAfterSeconds ||
        std::chrono::duration<double>(t - r.lastProgress).count() < 1)
      return;
    r.lastProgress = t;
    std::ostringstream os;
    os << "ember sim: " << (100 * uint64_t(index) / r.program.size()) << "% (" << index << "/"
       << r.program.size() << " instructions fetched, " << now() << " cycles, " << int(elapsed) << " s)";
    if (r.options->progress)
      r.options->progress(os.str());
    else
      std::cerr << os.str() << std::endl;
  }

  void loadThread() { unitLoop(Queue::Load); }
  void computeThread() { unitLoop(Queue::Compute); }
  void storeThread() { unitLoop(Queue::Store); }
  void vectorThread() { unitLoop(Queue::Vector); }

  bool acquire(Queue q, uint32_t index, Token t) {
    RunState& r = *run_;
    while (r.tokens[t] == 0 && !r.aborted) {
      r.blocked[int(q)] = {true, index, t, false};
      wait(tokenEvent_[t] | abortEvent_);
    }
    if (r.aborted) return false;
    --r.tokens[t];
    return true;
  }

  void release(Token t) {
    ++run_->tokens[t];
    tokenEvent_[t].notify(SC_ZERO_TIME);
  }

  /// Counts a unit out of RunState::activeUnits when its instruction ends.
  struct UnitActivity {
    NpuTop& top;
    RunState& run;
    UnitActivity(NpuTop& t, RunState& r) : top(t), run(r) {}
    UnitActivity(const UnitActivity&) = delete;
    UnitActivity& operator=(const UnitActivity&) = delete;
    ~UnitActivity() {
      --run.activeUnits;
      top.signalIdle();
    }
  };

  void unitLoop(Queue q) {
    for (;;) {
      while (!run_ || run_->aborted || run_->queues[int(q)].empty()) wait(queueEvent_[int(q)]);
      RunState& r = *run_;
      const uint32_t index = r.queues[int(q)].front();
      r.queues[int(q)].pop_front();
      // Until the end of this iteration (any `continue`), the unit holds an instruction.
      ++r.activeUnits;
      const UnitActivity activity{*this, r};
      spaceEvent_[int(q)].notify(SC_ZERO_TIME);
      const Instruction& in = r.program[index];
      InstructionRecord rec;
      rec.index = index;
      rec.opcode = uint8_t(in.opcode);
      rec.layer = in.layer;
      rec.unit = q == Queue::Load     ? Unit::Load
                 : q == Queue::Store  ? Unit::Store
                 : q == Queue::Vector ? Unit::VectorUnit
                                      : Unit::Compute;
      rec.issueCycle = now();
      bool popped = true;
      for (isa::Link l : isa::kLinks)
        if (popped && in.deps.pops(l)) popped = acquire(q, index, inboundToken(q, l));
      if (!popped) continue;
      r.blocked[int(q)] = {false, index, 0, true};
      rec.startCycle = now();
      // A sync may sit on any queue (its `q` field); it only moves tokens.
      Error e = q == Queue::Compute || q == Queue::Vector || in.opcode == Opcode::Sync
                    ? executeCompute(in, rec, q == Queue::Vector)
                    : executeDma(q == Queue::Load, in, rec);
      if (r.aborted) continue;
      if (e) {
        fail(index, e);
        continue;
      }
      rec.endCycle = std::max(rec.endCycle, now());  // a chained gemm sets its drain end
      for (isa::Link l : isa::kLinks)
        if (in.deps.pushes(l)) release(outboundToken(q, l));
      r.blocked[int(q)] = {};
      r.stats.records.push_back(rec);
    }
  }

  // ---- DMA (load and store queues) ----

  Error checkRange(const char* memory, uint64_t firstByte, uint64_t endByte, uint64_t size) {
    if (endByte <= size) return Error::success();
    std::ostringstream os;
    os << std::hex << "[0x" << firstByte << ", 0x" << endByte << ") exceeds the " << std::dec << size
       << "-byte " << memory;
    if (std::string(memory) == "accumulator") return makeError("accumulator overrun: bytes ", os.str());
    return makeError(memory, " address out of range: bytes ", os.str());
  }

  /// Sends one row through `socket`; the target moves the data and returns the
  /// time the row completes in `cursor` (cycles).
  bool transfer(tlm_utils::simple_initiator_socket<NpuTop>& socket, tlm::tlm_generic_payload& p,
                tlm::tlm_command cmd, uint64_t address, uint8_t* data, uint64_t bytes, uint64_t& cursor,
                uint64_t& waited) {
    p.set_command(cmd);
    p.set_address(address);
    p.set_data_ptr(data);
    p.set_data_length(unsigned(bytes));
    p.set_streaming_width(unsigned(bytes));
    p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    const uint64_t n = now();
    sc_time delay = cycles(cursor > n ? cursor - n : 0);
    socket->b_transport(p, delay);
    cursor = n + toCycles(delay);
    waited += p.get_extension<TimingExtension>()->waited;
    return p.is_response_ok();
  }

  /// A DMA instruction's geometry: `z` planes of `rowsPerPlane` SRAM rows of
  /// `rowLen` elements (padding included) of `e` bytes each.
  struct DmaGeometry {
    bool toAcc;
    uint64_t e, x, y, z, ys, zs, sramStride, pt, pb, pl, pr, rowLen, rowsPerPlane, dram0, sram0;
  };

  static DmaGeometry dmaGeometry(const Instruction& in) {
    DmaGeometry g{};
    g.toAcc = in[Field::Mem] == int64_t(isa::Memory::Accumulator);
    g.e = g.toAcc ? 4 : 1;
    g.x = uint64_t(in[Field::XSize]), g.y = uint64_t(in[Field::YSize]);
    g.z = std::max<uint64_t>(1, uint64_t(in[Field::ZSize]));
    g.ys = uint64_t(in[Field::DramYStride]), g.zs = uint64_t(in[Field::DramZStride]);
    g.sramStride = uint64_t(in[Field::SramStride]);
    g.pt = uint64_t(in[Field::PadTop]), g.pb = uint64_t(in[Field::PadBottom]);
    g.pl = uint64_t(in[Field::PadLeft]), g.pr = uint64_t(in[Field::PadRight]);
    g.rowLen = g.pl + g.x + g.pr, g.rowsPerPlane = g.pt + g.y + g.pb;
    g.dram0 = uint64_t(in[Field::DramAddr]), g.sram0 = uint64_t(in[Field::SramAddr]);
    return g;
  }

  Error checkDma(const DmaGeometry& g) {
    if (g.x == 0 || g.y == 0) return makeError("malformed instruction: x and y must be at least 1");
    const uint64_t dramLast = g.dram0 + ((g.z - 1) * g.zs + (g.y - 1) * g.ys + g.x) * g.e;
    EMBER_RETURN_IF_ERROR(checkRange("DRAM", g.dram0, dramLast, run_->dramBytes));
    const uint64_t sramEnd = (g.sram0 + (g.z * g.rowsPerPlane - 1) * g.sramStride + g.rowLen) * g.e;
    const uint64_t sramSize = g.toAcc ? run_->accumulator.size() : run_->scratchpad.size();
    return checkRange(g.toAcc ? "accumulator" : "scratchpad", g.sram0 * g.e, sramEnd, sramSize);
  }

  /// The sockets and payloads of one DMA and the cycle each side is busy to.
  struct DmaChannels {
    tlm_utils::simple_initiator_socket<NpuTop>& dramSocket;
    tlm_utils::simple_initiator_socket<NpuTop>& sramSocket;
    tlm::tlm_generic_payload& dramPayload;
    tlm::tlm_generic_payload& sramPayload;
    uint64_t dramCursor, sramCursor, dramWaited = 0, sramWaited = 0;
  };

  /// Fills the padding of a loaded row (all of it outside the data rows).
  void padLoadRow(const DmaGeometry& g, bool dataRow, int32_t padValue) {
    if (dataRow && !g.pl && !g.pr) return;
    for (uint64_t i = 0; i < g.rowLen; ++i)
      if (!dataRow || i < g.pl || i >= g.pl + g.x) {
        if (g.toAcc)
          std::memcpy(&rowBuffer_[i * 4], &padValue, 4);
        else
          rowBuffer_[i] = uint8_t(int8_t(padValue));
      }
  }

  Error loadRow(const DmaGeometry& g, DmaChannels& ch, uint64_t plane, uint64_t row, uint64_t sramAddr,
                int32_t padValue) {
    const bool dataRow = row >= g.pt && row < g.pt + g.y;
    padLoadRow(g, dataRow, padValue);
    if (dataRow) {
      const uint64_t dramAddr = g.dram0 + (plane * g.zs + (row - g.pt) * g.ys) * g.e;
      if (!transfer(ch.dramSocket, ch.dramPayload, tlm::TLM_READ_COMMAND, dramAddr,
                    rowBuffer_.data() + g.pl * g.e, g.x * g.e, ch.dramCursor, ch.dramWaited))
        return makeError("DRAM transaction failed");
    }
    if (!transfer(ch.sramSocket, ch.sramPayload, tlm::TLM_WRITE_COMMAND, sramAddr, rowBuffer_.data(),
                  g.rowLen * g.e, ch.sramCursor, ch.sramWaited))
      return makeError("SRAM transaction failed");
    return Error::success();
  }

  Error storeRow(const DmaGeometry& g, DmaChannels& ch, uint64_t plane, uint64_t row, uint64_t sramAddr) {
    const uint64_t dramAddr = g.dram0 + (plane * g.zs + row * g.ys) * g.e;
    if (!transfer(ch.sramSocket, ch.sramPayload, tlm::TLM_READ_COMMAND, sramAddr, rowBuffer_.data(),
                  g.x * g.e, ch.sramCursor, ch.sramWaited) ||
        !transfer(ch.dramSocket, ch.dramPayload, tlm::TLM_WRITE_COMMAND, dramAddr, rowBuffer_.data(),
                  g.x * g.e, ch.dramCursor, ch.dramWaited))
      return makeError("memory transaction failed");
    return Error::success();
  }

  Error executeDma(bool isLoad, const Instruction& in, InstructionRecord& rec) {
    RunState& r = *run_;
    const NpuConfig& c = *r.config;
    const DmaGeometry g = dmaGeometry(in);
    EMBER_RETURN_IF_ERROR(checkDma(g));
    const uint64_t start = now() + timing::dma(c, timing::dmaShape(in)).latency;
    DmaChannels ch{isLoad ? loadDram : storeDram,
                   isLoad ? (g.toAcc ? loadAcc : loadSpad) : (g.toAcc ? storeAcc : storeSpad),
                   payloads_[isLoad ? 0 : 2],
                   payloads_[isLoad ? 1 : 3],
                   start,
                   start};
    rowBuffer_.resize(g.rowLen * g.e);
    const int32_t padValue = int32_t(in[Field::PadValue]);
    for (uint64_t plane = 0; plane < g.z; ++plane)
      for (uint64_t row = 0; row < g.rowsPerPlane; ++row) {
        const uint64_t sramAddr = (g.sram0 + (plane * g.rowsPerPlane + row) * g.sramStride) * g.e;
        EMBER_RETURN_IF_ERROR(isLoad ? loadRow(g, ch, plane, row, sramAddr, padValue)
                                     : storeRow(g, ch, plane, row, sramAddr));
        // Temporal decoupling: let the other units catch up every quantum.
        const uint64_t behind = std::min(ch.dramCursor, ch.sramCursor);
        if (behind > now() + uint64_t(c.quantumCycles)) {
          waitUntil(behind);
          if (r.aborted) return Error::success();
        }
      }
    waitUntil(std::max(ch.dramCursor, ch.sramCursor));
    rec.dramBytes = g.x * g.y * g.z * g.e;
    rec.stallCycles[size_t(StallReason::DramBandwidth)] = ch.dramWaited;
    rec.stallCycles[size_t(g.toAcc ? StallReason::AccumulatorPort : StallReason::BankConflict)] =
        ch.sramWaited;
    return Error::success();
  }

  // ---- compute queue: matrix engine and vector unit ----

  /// Occupies the port serving `address` for `cycles` from `at`; returns the start.
  uint64_t occupy(bool accumulatorPort, uint64_t address, uint64_t at, uint64_t busyCycles, uint64_t& waited,
                  bool vectorQueue = false) {
    // The vector queue's unit runs concurrently with the compute queue's, so
    // it has its own payload; both contend for the same SRAM ports.
    auto& p = payloads_[vectorQueue ? 5 : 4];
    p.set_command(tlm::TLM_IGNORE_COMMAND);
    p.set_address(address);
    p.set_data_ptr(nullptr);
    p.set_data_length(0);
    auto* ext = p.get_extension<TimingExtension>();
    ext->occupyCycles = busyCycles;
    const uint64_t n = now();
    sc_time delay = cycles(at > n ? at - n : 0);
    (accumulatorPort ? computeAcc : computeSpad)->b_transport(p, delay);
    waited += ext->waited;
    return ext->startCycle;
  }

  /// Checks that `rows` rows of `len` elements at `base` + i * `stride` fit.
  Error checkRows(bool acc, int64_t base, int64_t rows, int64_t stride, int64_t len) {
    const uint64_t e = acc ? 4 : 1;
    const uint64_t size = acc ? run_->accumulator.size() : run_->scratchpad.size();
    const uint64_t end = uint64_t(base + (rows - 1) * stride + len) * e;
    return checkRange(acc ? "accumulator" : "scratchpad", uint64_t(base) * e, end, size);
  }

  void markRows(MemoryTarget& target, int64_t base, int64_t rows, int64_t stride, int64_t len, uint64_t e) {
    if (stride == len) {
      target.markWritten(uint64_t(base) * e, uint64_t(rows * len) * e);
      return;
    }
    for (int64_t i = 0; i < rows; ++i) target.markWritten(uint64_t(base + i * stride) * e, uint64_t(len) * e);
  }

  /// One compute instruction in flight: its issue cycle, the port stalls it
  /// meets and the cycle its queue moves on.
  struct ComputeIssue {
    const Instruction& in;
    InstructionRecord& rec;
    bool vectorQueue;
    uint64_t t;  // issue cycle
    int8_t* spad;
    int32_t* acc;
    uint64_t bankWait = 0, accWait = 0;
    uint64_t end = 0;
  };

  Error executeCompute(const Instruction& in, InstructionRecord& rec, bool vectorQueue) {
    RunState& r = *run_;
    auto* spad = reinterpret_cast<int8_t*>(r.scratchpad.data());
    auto* acc = reinterpret_cast<int32_t*>(r.accumulator.data());
    EMBER_RETURN_IF_ERROR(functional::checkOperands(in, spad, int64_t(r.scratchpad.size())));
    // Two weight buffers: gemms overlap each other, and anything else on the
    // compute queue waits until every earlier gemm has drained (the vector
    // queue is ordered by its tokens instead).
    const bool twoBuffers = r.config->weightBuffers == 2;
    if (twoBuffers && in.opcode != Opcode::Gemm && !vectorQueue) {
      // A sync on the load or store queue waits too, but must not clock the
      // RTL ahead of the compute queue's next gemm.
      uint64_t drained = r.engine->chainDoneBy();
      if (in.queue() == Queue::Compute) {
        auto finished = r.engine->drainChain();
        if (!finished) return finished.error();
        drained = *finished;
      }
      waitUntil(drained);
    }
    ComputeIssue issue{in, rec, vectorQueue, now(), spad, acc};
    issue.end = issue.t;
    if (in.opcode == Opcode::Gemm) {
      EMBER_RETURN_IF_ERROR(executeGemm(issue));
    } else if (in.opcode == Opcode::Sync) {
      issue.end = issue.t + timing::kSyncCycles;
    } else {
      EMBER_RETURN_IF_ERROR(executeVectorOp(issue));
      rec.unit = Unit::VectorUnit;
    }
    rec.stallCycles[size_t(StallReason::BankConflict)] = issue.bankWait;
    rec.stallCycles[size_t(StallReason::AccumulatorPort)] = issue.accWait;
    waitUntil(issue.end);
    return Error::success();
  }

  /// A gemm: checks its operands, starts its rows from the bias, times its
  /// ports and runs the engine (fast or RTL).
  Error executeGemm(ComputeIssue& g) {
    RunState& r = *run_;
    const NpuConfig& c = *r.config;
    const Instruction& in = g.in;
    const int64_t m = in[Field::M], k = in[Field::K], n = in[Field::N];
    EMBER_RETURN_IF_ERROR(checkGemm(in));
    const bool preload = in[Field::Preload] != 0;
    Instruction engineIn = in;
    if (in[Field::BiasInit]) EMBER_RETURN_IF_ERROR(startRowsFromBias(g, engineIn));
    // Port occupancy follows the calibrated formula's phases; the engine
    // (fast or RTL) then supplies the instruction's own latency.
    const timing::GemmTiming phases = timing::gemm(c, in);
    if (c.weightBuffers == 2) {
      EMBER_RETURN_IF_ERROR(executeChainedGemm(g, phases, engineIn));
    } else {
      // end of the instruction under contention, formula latency
      const uint64_t contended = c.dataflow == Dataflow::WeightStationary
                                     ? contendedWeightStationary(g, phases)
                                     : contendedOutputStationary(g, phases);
      const EngineMemories memories{g.spad, r.scratchpad.size(), g.acc, r.accumulator.size() / 4};
      auto latency = r.engine->gemm(engineIn, memories, g.t);
      if (!latency) return latency.error();
      g.end = contended - phases.total() + *latency;
    }
    markRows(accumulator, in[Field::AccAddr], m, in[Field::AccStride], n, 4);
    g.rec.macs = uint64_t(m * k * n);
    SimStats& s = r.stats;
    s.scratchpadReadBytes += uint64_t(m * k + (preload ? k * n : 0));
    s.accumulatorWriteBytes += uint64_t(m * n * 4);
    if (in[Field::Accumulate]) s.accumulatorReadBytes += uint64_t(m * n * 4);
    g.rec.unit = Unit::MatrixEngine;
    return Error::success();
  }

  /// A gemm's shape against the array, its weight buffer and its rows against the SRAMs.
  Error checkGemm(const Instruction& in) {
    const NpuConfig& c = *run_->config;
    const int64_t m = in[Field::M], k = in[Field::K], n = in[Field::N];
    const bool ws = c.dataflow == Dataflow::WeightStationary;
    if (ws && (k > c.rows || n > c.cols))
      return makeError("gemm k=", k, " n=", n, " exceeds the ", c.rows, "x", c.cols,
                       " weight-stationary array (k <= rows, n <= cols)");
    if (!ws && (m > c.rows || n > c.cols))
      return makeError("gemm m=", m, " n=", n, " exceeds the ", c.rows, "x", c.cols,
                       " output-stationary array (m <= rows, n <= cols)");
    const bool preload = in[Field::Preload] != 0;
    const auto wbuf = unsigned(in[Field::WeightBuffer]);
    if (int64_t(wbuf) >= c.weightBuffers)
      return makeError("gemm wbuf=", wbuf,
                       " but the config has matrix_engine.weight_buffers: ", c.weightBuffers);
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::InpAddr], m, in[Field::InpStride], k));
    if (preload)
      EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::WgtAddr], k, in[Field::WgtStride], n));
    else if (run_->engine->keptWeights(wbuf) != std::pair<int64_t, int64_t>{k, n})
      return makeError("gemm without preload needs preloaded ", k, "x", n, " weights in buffer ", wbuf,
                       ", but it holds ", run_->engine->keptWeights(wbuf).first, "x",
                       run_->engine->keptWeights(wbuf).second);
    return checkRows(true, in[Field::AccAddr], m, in[Field::AccStride], n);
  }

  /// bias_init (ISA v3): the rows start from the bias row instead of 0.
  /// The array latches the row before streaming (n entries, not timed
  /// separately); functionally the rows get the bias and the engine
  /// accumulates onto them.
  Error startRowsFromBias(ComputeIssue& g, Instruction& engineIn) {
    const NpuConfig& c = *run_->config;
    const Instruction& in = g.in;
    const int64_t m = in[Field::M], n = in[Field::N];
    int32_t* acc = g.acc;
    if (!c.biasInit)
      return makeError("gemm bias_init=1 but config '", c.name, "' has matrix_engine.bias_init false");
    if (in[Field::Accumulate]) return makeError("malformed instruction: gemm bias_init=1 with accumulate=1");
    EMBER_RETURN_IF_ERROR(checkRows(true, in[Field::BiasAddr], 1, 0, n));
    const std::vector<int32_t> bias(acc + in[Field::BiasAddr], acc + in[Field::BiasAddr] + n);
    for (int64_t i = 0; i < m; ++i)
      std::copy(bias.begin(), bias.end(), acc + in[Field::AccAddr] + i * in[Field::AccStride]);
    engineIn[Field::Accumulate] = 1;
    engineIn[Field::BiasInit] = 0;
    engineIn[Field::BiasAddr] = 0;
    run_->stats.accumulatorReadBytes += uint64_t(n * 4);
    return Error::success();
  }

  /// Two weight buffers: the engine's weight loader and stream stage
  /// (Timing.h GemmChain; the RTL's two machines), each taking its ports
  /// when its stage starts.
  Error executeChainedGemm(ComputeIssue& g, const timing::GemmTiming& phases, const Instruction& engineIn) {
    RunState& r = *run_;
    const Instruction& in = g.in;
    const StageGrant grantPreload = [&](uint64_t ready) {
      return occupy(false, uint64_t(in[Field::WgtAddr]), ready, phases.preload, g.bankWait);
    };
    const StageGrant grantStream = [&](uint64_t ready) {
      const uint64_t a = occupy(false, uint64_t(in[Field::InpAddr]), ready, phases.stream, g.bankWait);
      const uint64_t w = occupy(true, uint64_t(in[Field::AccAddr]) * 4, ready, phases.stream, g.accWait);
      return std::max(a, w);
    };
    // The queue moves on once the rows stream; tokens still leave at drain end.
    const bool pushes = in.deps.pushPrev || in.deps.pushNext;
    const EngineMemories memories{g.spad, r.scratchpad.size(), g.acc, r.accumulator.size() / 4};
    auto stages = r.engine->chainedGemm(engineIn, memories, g.t, grantPreload, grantStream, pushes);
    if (!stages) return stages.error();
    g.end = pushes ? stages->done : std::max(stages->streamStart, g.t + timing::kGemmIssueCycles);
    g.rec.endCycle = stages->done;
    return Error::success();
  }

  /// One weight buffer, weight-stationary: preload, then stream, then the
  /// pipeline; returns the end under contention.
  uint64_t contendedWeightStationary(ComputeIssue& g, const timing::GemmTiming& phases) {
    const Instruction& in = g.in;
    const uint64_t t = g.t;
    const uint64_t tp = phases.preload;
    const uint64_t pre = tp ? occupy(false, uint64_t(in[Field::WgtAddr]), t, tp, g.bankWait) + tp : t;
    const uint64_t ts = phases.stream;
    const uint64_t a = occupy(false, uint64_t(in[Field::InpAddr]), pre, ts, g.bankWait);
    const uint64_t b = occupy(true, uint64_t(in[Field::AccAddr]) * 4, pre, ts, g.accWait);
    return std::max(a, b) + ts + phases.pipeline;
  }

  /// One weight buffer, output-stationary: inputs and weights stream
  /// together, then the results drain; returns the end under contention.
  uint64_t contendedOutputStationary(ComputeIssue& g, const timing::GemmTiming& phases) {
    const Instruction& in = g.in;
    const uint64_t t = g.t;
    const uint64_t ts = phases.stream;
    const uint64_t a = occupy(false, uint64_t(in[Field::InpAddr]), t, ts, g.bankWait);
    const uint64_t w = occupy(false, uint64_t(in[Field::WgtAddr]), t, ts, g.bankWait);
    const uint64_t d = occupy(true, uint64_t(in[Field::AccAddr]) * 4, std::max(a, w) + ts + phases.pipeline,
                              phases.drain, g.accWait);
    return d + phases.drain;
  }

  /// A vector instruction holds each operand's port for its busy time
  /// (ember/npu/Timing.h); its result lands the unit's latency after the last.
  uint64_t vectorRows(ComputeIssue& v, int64_t rows, int64_t cols,
                      std::initializer_list<std::pair<bool, int64_t>> operands) {
    const timing::VectorTiming vt = timing::vector(*run_->config, v.in);
    const uint64_t busy = vt.busy();
    uint64_t finish = v.t + busy;
    for (auto [isAcc, address] : operands) {
      const uint64_t begin = occupy(isAcc, uint64_t(address) * (isAcc ? 4 : 1), v.t, busy,
                                    isAcc ? v.accWait : v.bankWait, v.vectorQueue);
      finish = std::max(finish, begin + busy);
    }
    run_->stats.vectorOps += uint64_t(rows * cols);
    return finish + vt.latency;
  }

  Error executeRequant(ComputeIssue& v) {
    const Instruction& in = v.in;
    SimStats& s = run_->stats;
    const int64_t rows = in[Field::Rows], cols = in[Field::Cols];
    EMBER_RETURN_IF_ERROR(checkRows(true, in[Field::Src], rows, in[Field::SrcStride], cols));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Dst], rows, in[Field::DstStride], cols));
    v.end = vectorRows(v, rows, cols, {{true, in[Field::Src]}, {false, in[Field::Dst]}});
    functional::requant(in, v.acc, v.spad);
    markRows(scratchpad, in[Field::Dst], rows, in[Field::DstStride], cols, 1);
    s.accumulatorReadBytes += uint64_t(rows * cols * 4);
    s.scratchpadWriteBytes += uint64_t(rows * cols);
    return Error::success();
  }

  Error executeVAdd(ComputeIssue& v) {
    const Instruction& in = v.in;
    SimStats& s = run_->stats;
    const int64_t rows = in[Field::Rows], cols = in[Field::Cols];
    EMBER_RETURN_IF_ERROR(checkRows(true, in[Field::Src], rows, in[Field::SrcStride], cols));
    EMBER_RETURN_IF_ERROR(checkRows(true, in[Field::Dst], rows, in[Field::DstStride], cols));
    v.end = vectorRows(v, rows, cols, {{true, in[Field::Dst]}});
    functional::vadd(in, v.acc);
    s.accumulatorReadBytes += uint64_t(rows * cols * 8);
    s.accumulatorWriteBytes += uint64_t(rows * cols * 4);
    return Error::success();
  }

  Error executeVClip(ComputeIssue& v) {
    const Instruction& in = v.in;
    SimStats& s = run_->stats;
    const int64_t rows = in[Field::Rows], cols = in[Field::Cols];
    EMBER_RETURN_IF_ERROR(checkRows(true, in[Field::Dst], rows, in[Field::DstStride], cols));
    v.end = vectorRows(v, rows, cols, {{true, in[Field::Dst]}});
    functional::vclip(in, v.acc);
    s.accumulatorReadBytes += uint64_t(rows * cols * 4);
    s.accumulatorWriteBytes += uint64_t(rows * cols * 4);
    return Error::success();
  }

  Error executeLut(ComputeIssue& v) {
    const Instruction& in = v.in;
    SimStats& s = run_->stats;
    const int64_t rows = in[Field::Rows], cols = in[Field::Cols];
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Src], rows, in[Field::SrcStride], cols));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Dst], rows, in[Field::DstStride], cols));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::LutAddr], 1, 0, int64_t(isa::kLutTableBytes)));
    v.end = vectorRows(v, rows, cols, {{false, in[Field::Src]}, {false, in[Field::Dst]}});
    functional::lut(in, v.spad);
    markRows(scratchpad, in[Field::Dst], rows, in[Field::DstStride], cols, 1);
    s.scratchpadReadBytes += uint64_t(rows * cols) + isa::kLutTableBytes;
    s.scratchpadWriteBytes += uint64_t(rows * cols);
    return Error::success();
  }

  Error executePool(ComputeIssue& v) {
    const Instruction& in = v.in;
    SimStats& s = run_->stats;
    const int64_t oh = in[Field::OutH], ow = in[Field::OutW], ch = in[Field::Channels];
    const int64_t kh = in[Field::KernelH], kw = in[Field::KernelW];
    const int64_t inH = (oh - 1) * in[Field::StrideH] + kh, inW = (ow - 1) * in[Field::StrideW] + kw;
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Src], inH, in[Field::SrcStride], inW * ch));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Dst], oh, in[Field::DstStride], ow * ch));
    v.end = vectorRows(v, oh * ow, ch, {{false, in[Field::Src]}, {false, in[Field::Dst]}});
    s.vectorOps += uint64_t(oh * ow * ch * (kh * kw - 1));
    functional::pool(in, v.spad);
    markRows(scratchpad, in[Field::Dst], oh, in[Field::DstStride], ow * ch, 1);
    s.scratchpadReadBytes += uint64_t(oh * ow * ch * kh * kw);
    s.scratchpadWriteBytes += uint64_t(oh * ow * ch);
    return Error::success();
  }

  Error executeEAdd(ComputeIssue& v) {
    const Instruction& in = v.in;
    SimStats& s = run_->stats;
    const int64_t rows = in[Field::Rows], cols = in[Field::Cols];
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::ParamAddr], 1, 0, int64_t(isa::kEAddParamBytes)));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Src], rows, in[Field::SrcStride], cols));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Src2], rows, in[Field::Src2Stride], cols));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Dst], rows, in[Field::DstStride], cols));
    v.end = vectorRows(v, rows, cols,
                       {{false, in[Field::Src]}, {false, in[Field::Src2]}, {false, in[Field::Dst]}});
    functional::eadd(in, v.spad);
    markRows(scratchpad, in[Field::Dst], rows, in[Field::DstStride], cols, 1);
    s.scratchpadReadBytes += uint64_t(rows * cols * 2 + int64_t(isa::kEAddParamBytes));
    s.scratchpadWriteBytes += uint64_t(rows * cols);
    return Error::success();
  }

  /// softmax (ISA v4): three passes over each row of src (and of the mask).
  Error executeSoftmax(ComputeIssue& v) {
    const Instruction& in = v.in;
    SimStats& s = run_->stats;
    const int64_t rows = in[Field::Rows], cols = in[Field::Cols];
    const bool masked = in[Field::Masked] != 0;
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::ParamAddr], 1, 0, int64_t(isa::kSoftmaxParamBytes)));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Src], rows, in[Field::SrcStride], cols));
    if (masked) EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Src2], rows, in[Field::Src2Stride], cols));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Dst], rows, in[Field::DstStride], cols));
    v.end = masked ? vectorRows(v, rows, cols,
                                {{false, in[Field::Src]}, {false, in[Field::Src2]}, {false, in[Field::Dst]}})
                   : vectorRows(v, rows, cols, {{false, in[Field::Src]}, {false, in[Field::Dst]}});
    s.vectorOps += uint64_t(rows * cols) * (timing::kRowNormPasses - 1);
    functional::softmax(in, v.spad);
    markRows(scratchpad, in[Field::Dst], rows, in[Field::DstStride], cols, 1);
    const uint64_t passes = timing::kRowNormPasses * (masked ? 2 : 1);
    s.scratchpadReadBytes += uint64_t(rows * cols) * passes + isa::kSoftmaxParamBytes;
    s.scratchpadWriteBytes += uint64_t(rows * cols);
    return Error::success();
  }

  /// layernorm (ISA v4): the parameter record once, three passes over each row.
  Error executeLayerNorm(ComputeIssue& v) {
    const Instruction& in = v.in;
    SimStats& s = run_->stats;
    const int64_t rows = in[Field::Rows], cols = in[Field::Cols];
    const auto paramBytes = int64_t(isa::layerNormParamBytes(cols));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::ParamAddr], 1, 0, paramBytes));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Src], rows, in[Field::SrcStride], cols));
    EMBER_RETURN_IF_ERROR(checkRows(false, in[Field::Dst], rows, in[Field::DstStride], cols));
    v.end = vectorRows(v, rows, cols, {{false, in[Field::Src]}, {false, in[Field::Dst]}});
    s.vectorOps += uint64_t(rows * cols) * (timing::kRowNormPasses - 1);
    functional::layerNorm(in, v.spad);
    markRows(scratchpad, in[Field::Dst], rows, in[Field::DstStride], cols, 1);
    s.scratchpadReadBytes += uint64_t(rows * cols) * timing::kRowNormPasses + uint64_t(paramBytes);
    s.scratchpadWriteBytes += uint64_t(rows * cols);
    return Error::success();
  }

  /// A vector-unit instruction: requant, vadd, vclip, lut, pool, eadd,
  /// softmax or layernorm.
  Error executeVectorOp(ComputeIssue& v) {
    switch (v.in.opcode) {
      case Opcode::Requant:
        return executeRequant(v);
      case Opcode::VAdd:
        return executeVAdd(v);
      case Opcode::VClip:
        return executeVClip(v);
      case Opcode::Lut:
        return executeLut(v);
      case Opcode::Pool:
        return executePool(v);
      case Opcode::EAdd:
        return executeEAdd(v);
      case Opcode::Softmax:
        return executeSoftmax(v);
      case Opcode::LayerNorm:
        return executeLayerNorm(v);
      default:
        return makeError("malformed instruction: not a compute instruction");
    }
  }

  RunState* run_ = nullptr;
  sc_event startEvent_, abortEvent_, doneEvent_, idleEvent_;
  sc_event queueEvent_[isa::kNumQueues], spaceEvent_[isa::kNumQueues];
  sc_event tokenEvent_[kNumTokens];
  tlm::tlm_generic_payload payloads_[6];  // load dram/sram, store dram/sram, compute, vector
  std::vector<uint8_t> rowBuffer_;
};

/// [0]: the one-chip top; [1 + i]: co-simulated chip i. Created once and
/// never destroyed: SystemC's kernel outlives every run.
std::vector<NpuTop*>& tops() {
  static std::vector<NpuTop*> all;
  return all;
}

NpuTop& top() {
  detail::elaborateKernel();
  return *tops()[0];
}

std::string deadlockMessage(const RunState& r) {
  std::ostringstream os;
  os << "deadlock:";
  bool any = false;
  for (int q = 0; q < isa::kNumQueues; ++q) {
    const auto& b = r.blocked[q];
    if (!b.onToken) continue;
    const auto* spec = isa::findOpcode(uint8_t(r.program[b.index].opcode));
    os << (any ? ";" : "") << " the " << isa::queueName(Queue(q)) << " queue waits at instruction " << b.index
       << " (" << (spec ? spec->mnemonic : "?") << ") for a token from " << tokenSource(b.token);
    any = true;
  }
  if (r.fetchBlocked) {
    os << (any ? ";" : "") << " fetch waits at instruction " << r.fetchBlocked->first
       << " for space in the full " << isa::queueName(r.fetchBlocked->second) << " queue";
    any = true;
  }
  if (!any) os << " the program stopped before FINISH";
  os << " (no token can arrive)";
  return os.str();
}

/// Per-unit busy and stall cycles, total cycles and MACs from the records.
void summariseUnits(RunState& r) {
  SimStats& s = r.stats;
  for (const auto& rec : s.records) {
    s.cycles = std::max(s.cycles, rec.endCycle);
    s.macs += rec.macs;
    uint64_t resourceStall = 0;
    for (size_t i = 0; i < kNumStallReasons; ++i)
      if (StallReason(i) != StallReason::Token) resourceStall += rec.stallCycles[i];
    // Vector instructions of the vector queue (ISA v3) count only for the
    // vector unit; those of the compute queue also for the compute queue.
    const bool onVectorQueue = r.program[rec.index].queue() == Queue::Vector;
    const Unit queueUnit = onVectorQueue                                                    ? Unit::VectorUnit
                           : rec.unit == Unit::MatrixEngine || rec.unit == Unit::VectorUnit ? Unit::Compute
                                                                                            : rec.unit;
    const uint64_t work = rec.endCycle - rec.startCycle;
    const uint64_t busy = work > resourceStall ? work - resourceStall : 0;
    auto& qs = s.units[size_t(queueUnit)];
    qs.busyCycles += busy;
    qs.stallCycles[size_t(StallReason::Token)] += rec.startCycle - rec.issueCycle;
    for (size_t i = 0; i < kNumStallReasons; ++i)
      if (StallReason(i) != StallReason::Token) qs.stallCycles[i] += rec.stallCycles[i];
    if (queueUnit != rec.unit) {
      auto& us = s.units[size_t(rec.unit)];
      us.busyCycles += busy;
      for (size_t i = 0; i < kNumStallReasons; ++i)
        if (StallReason(i) != StallReason::Token) us.stallCycles[i] += rec.stallCycles[i];
    }
  }
  s.cycles = std::max<uint64_t>(s.cycles, s.units[size_t(Unit::Fetch)].busyCycles);
}

/// Memory traffic and peaks from the targets, and the energy they and the
/// counted work cost.
void summariseMemoryAndEnergy(SimStats& s, const NpuConfig& c, NpuTop& npu) {
  s.dramReadBytes = npu.dram.readBytes;
  s.dramWriteBytes = npu.dram.writeBytes;
  s.scratchpadReadBytes += npu.scratchpad.readBytes;
  s.scratchpadWriteBytes += npu.scratchpad.writeBytes;
  s.accumulatorReadBytes += npu.accumulator.readBytes;
  s.accumulatorWriteBytes += npu.accumulator.writeBytes;
  s.scratchpadPeakBytes = npu.scratchpad.peakBytes();
  s.accumulatorPeakBytes = npu.accumulator.peakBytes();
  const EnergyTable& e = c.energy;
  s.energyBreakdownPj = {
      {"mac", double(s.macs) * e.macPj},
      {"dram", double(s.dramReadBytes + s.dramWriteBytes) * e.dramBytePj},
      {"scratchpad", double(s.scratchpadReadBytes + s.scratchpadWriteBytes) * e.scratchpadBytePj},
      {"accumulator", double(s.accumulatorReadBytes + s.accumulatorWriteBytes) * e.accumulatorBytePj},
      {"vector", double(s.vectorOps) * e.vectorOpPj},
      {"instruction", double(s.instructions) * e.instructionPj},
      {"static", double(s.cycles) * e.staticPjPerCycle},
  };
  s.energyPj = 0;
  for (const auto& [_, v] : s.energyBreakdownPj) s.energyPj += v;
}

/// One layer's records gathered: its span, totals and cycles per vector or
/// matrix opcode.
struct LayerAccumulator {
  bool used = false;
  uint64_t first = UINT64_MAX, last = 0;
  LayerStats stats;
  std::map<uint8_t, uint64_t> opCycles;
};

/// A layer's dominant op: "gemm" if it multiplies, else its longest-running
/// opcode, else "dma".
std::string dominantOp(const LayerAccumulator& a) {
  if (a.stats.macs) return "gemm";
  std::string op = "dma";
  uint64_t best = 0;
  for (auto [opcode, cycles] : a.opCycles)
    if (cycles >= best) {
      best = cycles;
      op = std::string(isa::findOpcode(opcode)->mnemonic);
    }
  return op;
}

/// Layers: by tag; untagged instructions form "program".
void summariseLayers(RunState& r) {
  SimStats& s = r.stats;
  const NpuConfig& c = *r.config;
  const size_t numLayers = r.bundle->layers.size() + 1;
  std::vector<LayerAccumulator> layers(numLayers);
  for (const auto& rec : s.records) {
    LayerAccumulator& a = layers[rec.layer];
    a.used = true;
    a.first = std::min(a.first, rec.issueCycle);
    a.last = std::max(a.last, rec.endCycle);
    a.stats.macs += rec.macs;
    a.stats.dramBytes += rec.dramBytes;
    a.stats.stallCycles[size_t(StallReason::Token)] += rec.startCycle - rec.issueCycle;
    for (size_t i = 1; i < kNumStallReasons; ++i) a.stats.stallCycles[i] += rec.stallCycles[i];
    if (rec.unit == Unit::MatrixEngine || rec.unit == Unit::VectorUnit)
      a.opCycles[rec.opcode] += rec.endCycle - rec.startCycle;
  }
  for (size_t i = 0; i < numLayers; ++i) {
    LayerAccumulator& a = layers[i];
    if (!a.used) continue;
    a.stats.name = i == 0 ? "program" : r.bundle->layers[i - 1];
    a.stats.cycles = a.last - a.first;
    a.stats.op = dominantOp(a);
    const double layerPeak = double(a.stats.cycles) * double(c.rows * c.cols);
    a.stats.macUtilization = layerPeak > 0 ? double(a.stats.macs) / layerPeak : 0;
    s.layers.push_back(a.stats);
  }
}

void summarise(RunState& r, NpuTop& npu) {
  SimStats& s = r.stats;
  const NpuConfig& c = *r.config;
  s.configName = c.name;
  s.clockGhz = c.clockGhz;
  std::sort(s.records.begin(), s.records.end(), [](const auto& a, const auto& b) {
    return a.endCycle != b.endCycle ? a.endCycle < b.endCycle : a.index < b.index;
  });
  s.instructions = r.program.size();
  summariseUnits(r);
  const double peak = double(s.cycles) * double(c.rows * c.cols);
  s.macUtilization = peak > 0 ? double(s.macs) / peak : 0;
  summariseMemoryAndEnergy(s, c, npu);
  summariseLayers(r);
}

}  // namespace

std::string_view stallReasonName(StallReason r) {
  switch (r) {
    case StallReason::Token:
      return "token";
    case StallReason::DramBandwidth:
      return "dram_bandwidth";
    case StallReason::BankConflict:
      return "bank_conflict";
    case StallReason::AccumulatorPort:
      return "accumulator_port";
    case StallReason::QueueFull:
      return "queue_full";
    default:
      return "?";
  }
}

std::string_view unitName(Unit u) {
  switch (u) {
    case Unit::Fetch:
      return "fetch";
    case Unit::Load:
      return "load";
    case Unit::Compute:
      return "compute";
    case Unit::Store:
      return "store";
    case Unit::MatrixEngine:
      return "matrix_engine";
    case Unit::VectorUnit:
      return "vector_unit";
    default:
      return "?";
  }
}

DramImage makeDram(const Bundle& bundle) {
  DramImage image;
  image.bytes.assign(bundle.dramBytes, 0);
  std::copy(bundle.weights.begin(), bundle.weights.end(),
            image.bytes.begin() + int64_t(bundle.weightsOffset));
  return image;
}

namespace {
/// The calling thread's ScopedCancellation check (empty: none).
thread_local std::function<bool()> threadCancellation;
thread_local uint64_t threadCycleBudget = 0;
}  // namespace

ScopedCycleBudget::ScopedCycleBudget(uint64_t maxCycles)
    : previous_(std::exchange(threadCycleBudget, maxCycles)) {}

ScopedCycleBudget::~ScopedCycleBudget() { threadCycleBudget = previous_; }

ScopedCancellation::ScopedCancellation(std::function<bool()> cancelled)
    : previous_(std::exchange(threadCancellation, std::move(cancelled))) {}

ScopedCancellation::~ScopedCancellation() { threadCancellation = std::move(previous_); }

namespace {

/// The given options, with the calling thread's cancellation and budget when they set none.
SimOptions effectiveOptions(const SimOptions& given) {
  SimOptions options = given;
  if (!options.cancelled) options.cancelled = threadCancellation;
  if (!options.maxCycles) options.maxCycles = threadCycleBudget;
  return options;
}

/// The checks of a bundle against the config and its DRAM image.
Error checkBundle(const Bundle& bundle, const NpuConfig& config, const DramImage& dram,
                  const SimOptions& options) {
  if (!options.vcdPath.empty() && config.matrixEngineModel != MatrixEngineModel::Rtl)
    return makeError(
        "--vcd ", options.vcdPath,
        ": waveforms need the RTL matrix engine (matrix_engine.model: rtl or --matrix-engine rtl)");
  if (bundle.configHash != 0 && bundle.configHash != config.hash()) {
    std::ostringstream os;
    os << std::hex << "the bundle was built for config hash 0x" << bundle.configHash << " but config '"
       << config.name << "' has hash 0x" << config.hash();
    return Error::make(os.str());
  }
  if (bundle.dramBytes > uint64_t(config.dramBytes))
    return makeError("the bundle uses ", bundle.dramBytes, " bytes of DRAM but config '", config.name,
                     "' has ", config.dramBytes);
  if (dram.bytes.size() != bundle.dramBytes)
    return makeError("the DRAM image has ", dram.bytes.size(), " bytes but the bundle declares ",
                     bundle.dramBytes);
  if (config.weightBuffers < 1 || config.weightBuffers > 2 ||
      (config.weightBuffers == 2 && config.dataflow != Dataflow::WeightStationary))
    return makeError("config '", config.name, "': matrix_engine.weight_buffers ", config.weightBuffers,
                     " is not supported (1, or 2 with matrix_engine.dataflow 'weight_stationary')");
  if (config.vectorQueue == VectorQueue::Separate && config.matrixEngineModel == MatrixEngineModel::Rtl)
    return makeError(
        "config '", config.name,
        "': vector.queue 'separate' needs matrix_engine.model 'fast' (the RTL co-simulation runs "
        "the one compute queue)");
  if (config.accumulatorBanks < 1 || config.accumulatorEntries() % config.accumulatorBanks != 0)
    return makeError("config '", config.name, "': accumulator.banks ", config.accumulatorBanks,
                     " does not divide the accumulator's ", config.accumulatorEntries(), " entries");
  return Error::success();
}

/// Checks and decodes the program and fills everything a run owns.
Error prepareRun(const Bundle& bundle, const NpuConfig& config, DramImage& dram, const SimOptions& options,
                 RunState& state) {
  EMBER_RETURN_IF_ERROR(checkBundle(bundle, config, dram, options));
  state.bundle = &bundle;
  state.config = &config;
  state.options = &options;
  state.program.reserve(bundle.program.size());
  for (size_t i = 0; i < bundle.program.size(); ++i) {
    auto instr = isa::decode(bundle.program[i]);
    if (!instr) return makeError("instruction ", i, ": ", instr.error().message());
    if (instr->queue() == Queue::Vector && config.vectorQueue != VectorQueue::Separate)
      return makeError("instruction ", i, ": runs on the vector queue, but config '", config.name,
                       "' has vector.queue 'shared' (no vector queue)");
    state.program.push_back(*instr);
  }
  if (std::none_of(state.program.begin(), state.program.end(),
                   [](const Instruction& in) { return in.opcode == Opcode::Finish; }))
    return makeError("the program has no FINISH instruction");
  state.scratchpad.assign(size_t(config.scratchpadBytes), 0);
  state.accumulator.assign(size_t(config.accumulatorBytes), 0);
  if (config.matrixEngineModel == MatrixEngineModel::Rtl) {
    auto engine = makeRtlMatrixEngine(config, options.vcdPath);
    if (!engine) return engine.error();
    state.engine = engine.take();
  } else {
    state.engine = makeFastMatrixEngine(config);
  }
  state.stats.matrixEngine = std::string(state.engine->name());
  state.dram = dram.bytes.data();
  state.dramBytes = dram.bytes.size();
  state.hostStart = state.lastProgress = std::chrono::steady_clock::now();
  return Error::success();
}

/// After a run that reached FINISH: the stats, checked against the budget.
Expected<SimStats> finishRun(RunState& state, NpuTop& npu, const SimOptions& options) {
  // Chained gemms (two weight buffers) whose results nothing waited for.
  if (auto drained = state.engine->drainChain(); !drained) return drained.error();
  npu.finish();
  summarise(state, npu);
  state.stats.matrixEngineCycles = state.engine->engineCycles();
  // The last instructions may drain past the budget after the fetch's check.
  if (options.maxCycles && state.stats.cycles > options.maxCycles)
    return makeError("exceeded the cycle budget of ", options.maxCycles, " cycles: the run took ",
                     state.stats.cycles);
  state.stats.hostSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - state.hostStart).count();
  return std::move(state.stats);
}

}  // namespace

namespace detail {

void createNpuTops() {
  tops().push_back(new NpuTop("ember_npu"));
  for (size_t chip = 0; chip < coSimulatedChipCapacity(); ++chip)
    tops().push_back(new NpuTop(("ember_chip" + std::to_string(chip)).c_str()));
}

Expected<SimStats> simulateOnChip(CoSimChip& chip, const Bundle& bundle, const NpuConfig& config,
                                  DramImage& dram, const SimOptions& givenOptions) {
  const SimOptions options = effectiveOptions(givenOptions);
  RunState state;
  EMBER_RETURN_IF_ERROR(prepareRun(bundle, config, dram, options, state));
  state.unitsPerCycle = chip.unitsPerCycle;
  state.sharedDram = chip.sharedDram;
  NpuTop& npu = *tops()[1 + chip.top];
  npu.runHere(state);
  if (state.error || !NpuTop::drained(state)) {
    const Error e = state.error ? *state.error : Error::make(deadlockMessage(state));
    npu.unwindHere(state);
    return e;
  }
  Expected<SimStats> stats = finishRun(state, npu, options);
  if (!stats) return stats;
  // The chip is busy until its last instruction drains (a chained gemm may
  // retire after its queue moved on).
  const uint64_t end = state.t0 + stats->cycles * state.unitsPerCycle;
  if (end > sc_time_stamp().value()) wait(sc_time::from_value(end - sc_time_stamp().value()));
  chip.busyUnits += end - state.t0;
  ++chip.programs;
  for (const UnitStats& unit : stats->units)
    chip.dramStallCycles += unit.stallCycles[size_t(StallReason::DramBandwidth)];
  chip.sharedDramWaitCycles += npu.dram.sharedWaitCycles;
  return stats;
}

bool abortUnfinishedRuns() {
  bool any = false;
  for (size_t t = 1; t < tops().size(); ++t)
    if (tops()[t]->currentRun()) {
      tops()[t]->abortRun();
      any = true;
    }
  return any;
}

}  // namespace detail

Expected<SimStats> simulate(const Bundle& bundle, const NpuConfig& config, DramImage& dram,
                            const SimOptions& givenOptions) {
  // Called by a co-simulated chip's driver (a stage run inside the system's
  // elaboration): the program runs on that chip, in the system's time.
  if (detail::CoSimChip* chip = detail::currentCoSimChip())
    return detail::simulateOnChip(*chip, bundle, config, dram, givenOptions);
  const SimOptions options = effectiveOptions(givenOptions);
  RunState state;
  EMBER_RETURN_IF_ERROR(prepareRun(bundle, config, dram, options, state));
  state.unitsPerCycle = timeUnitsPerNanosecond();

  std::lock_guard<std::mutex> lock(detail::simulatorMutex());
  NpuTop& npu = top();
  npu.run(state);
  bool drained = state.fetchDone && !state.aborted;
  for (int q = 0; q < isa::kNumQueues; ++q)
    drained = drained && state.queues[q].empty() && !state.blocked[q].onToken;
  if (state.error || !drained) {
    const Error e = state.error ? *state.error : Error::make(deadlockMessage(state));
    npu.unwind(state);
    return e;
  }
  return finishRun(state, npu, options);
}

}  // namespace ember::npu
