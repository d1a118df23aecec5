// The two matrix engines behind include/ember/npu/MatrixEngine.h: the fast
// model and, when rtl/ was built with Verilator, the RTL co-simulation.
#include "ember/npu/MatrixEngine.h"

#include <algorithm>
#include <vector>

#include "Functional.h"
#if EMBER_HAVE_RTL
#include "ember/rtl/RtlArray.h"
#endif

namespace ember::npu {
namespace {

using isa::Field;

unsigned bufferOf(const isa::Instruction& in) { return unsigned(in[Field::WeightBuffer]) & 1; }

class FastMatrixEngine final : public MatrixEngine {
 public:
  explicit FastMatrixEngine(const NpuConfig& config) : config_(config) {}
  std::string_view name() const override { return "fast"; }
  Expected<uint64_t> gemm(const isa::Instruction& in, const EngineMemories& memories, uint64_t) override {
    functional::gemm(in, memories.scratchpad, memories.accumulator, weights_[bufferOf(in)]);
    const uint64_t cycles = timing::gemm(config_, in).total();
    cycles_ += cycles;
    return cycles;
  }
  /// The two stages of timing::GemmChain, each started by its grant.
  Expected<timing::GemmStages> chainedGemm(const isa::Instruction& in, const EngineMemories& memories,
                                           uint64_t issueCycle, const StageGrant& grantPreload,
                                           const StageGrant& grantStream, bool) override {
    const timing::GemmTiming phases = timing::gemm(config_, in);
    const unsigned b = bufferOf(in);
    const timing::GemmStages s =
        chain_.issue(issueCycle, phases, in[Field::Preload] != 0, b, grantPreload, grantStream);
    functional::gemm(in, memories.scratchpad, memories.accumulator, weights_[b]);
    cycles_ += phases.total();
    return s;
  }
  Expected<uint64_t> drainChain() override { return chain_.drained; }
  uint64_t chainDoneBy() const override { return chain_.drained; }
  std::pair<int64_t, int64_t> keptWeights(unsigned buffer) const override {
    return {weights_[buffer & 1].k, weights_[buffer & 1].n};
  }
  uint64_t engineCycles() const override { return cycles_; }

 private:
  NpuConfig config_;
  functional::WeightTile weights_[2];  // matrix_engine.weight_buffers: 1 uses only the first
  timing::GemmChain chain_;            // matrix_engine.weight_buffers: 2
  uint64_t cycles_ = 0;
};

#if EMBER_HAVE_RTL
/// The verilated RTL: same instruction, same memories, cycles counted on the clock.
class RtlMatrixEngine final : public MatrixEngine {
 public:
  RtlMatrixEngine(const NpuConfig& config, std::unique_ptr<rtl::RtlArray> array)
      : config_(config), array_(std::move(array)) {}
  std::string_view name() const override { return "rtl"; }
  Expected<uint64_t> gemm(const isa::Instruction& in, const EngineMemories& memories,
                          uint64_t startCycle) override {
    auto cycles = array_->run(job(in), rtlMemories(memories), startCycle);
    if (cycles) keep(in);
    return cycles;
  }

  /// The RTL's weight loader and stream machine start the stages (their
  /// requests answered by the grants); the RTL is clocked on only as far as
  /// the next stream start, or to this gemm's done with `untilDone`.
  Expected<timing::GemmStages> chainedGemm(const isa::Instruction& in, const EngineMemories& memories,
                                           uint64_t issueCycle, const StageGrant& grantPreload,
                                           const StageGrant& grantStream, bool untilDone) override {
    auto start = array_->issue(job(in), rtlMemories(memories), issueCycle, grantPreload, grantStream);
    if (!start) return start.error();
    keep(in);
    const timing::GemmTiming phases = timing::gemm(config_, in);
    timing::GemmStages s;
    s.preloadStart = start->preloadStart;
    s.preloadEnd = s.preloadStart + phases.preload;
    s.streamStart = start->streamStart;
    s.streamEnd = s.streamStart + phases.stream;
    s.done = s.streamEnd + phases.pipeline;
    promisedDone_.push_back(s.done);
    if (untilDone) {
      auto done = retireThrough(array_->issued() - 1, false);
      if (!done) return done.error();
      s.done = *done;
    }
    return s;
  }

  Expected<uint64_t> drainChain() override {
    return array_->issued() ? retireThrough(array_->issued() - 1, true) : Expected<uint64_t>(uint64_t(0));
  }
  uint64_t chainDoneBy() const override { return promisedDone_.empty() ? 0 : promisedDone_.back(); }
  std::pair<int64_t, int64_t> keptWeights(unsigned buffer) const override { return kept_[buffer & 1]; }
  uint64_t engineCycles() const override { return array_->clockedCycles(); }

 private:
  rtl::GemmJob job(const isa::Instruction& in) const {
    rtl::GemmJob job;
    job.outputStationary = config_.dataflow == Dataflow::OutputStationary;
    job.accumulate = in[Field::Accumulate] != 0;
    job.preload = in[Field::Preload] != 0;
    job.wbuf = bufferOf(in);
    job.m = uint32_t(in[Field::M]);
    job.k = uint32_t(in[Field::K]);
    job.n = uint32_t(in[Field::N]);
    job.inpAddr = uint32_t(in[Field::InpAddr]);
    job.inpStride = uint32_t(in[Field::InpStride]);
    job.wgtAddr = uint32_t(in[Field::WgtAddr]);
    job.wgtStride = uint32_t(in[Field::WgtStride]);
    job.accAddr = uint32_t(in[Field::AccAddr]);
    job.accStride = uint32_t(in[Field::AccStride]);
    return job;
  }
  static rtl::Memories rtlMemories(const EngineMemories& m) {
    return {m.scratchpad, m.scratchpadBytes, m.accumulator, m.accumulatorEntries};
  }
  void keep(const isa::Instruction& in) {
    if (in[Field::Preload] != 0) kept_[bufferOf(in)] = {in[Field::K], in[Field::N]};
  }

  /// Clocks until chained gemm `index` is done and returns its done cycle.
  /// Every gemm retired on the way (and `index` itself with `checkLast`) must
  /// be done when the formula said: the simulator recorded that cycle.
  Expected<uint64_t> retireThrough(uint64_t index, bool checkLast) {
    if (checked_ > index) return array_->retire(index);
    uint64_t done = 0;
    for (; checked_ <= index; ++checked_) {
      auto measured = array_->retire(checked_);
      if (!measured) return measured.error();
      done = *measured;
      if ((checked_ < index || checkLast) && done != promisedDone_[checked_])
        return makeError("the RTL matrix engine finished chained gemm ", checked_, " at cycle ", done,
                         ", the timing formula at ", promisedDone_[checked_]);
    }
    return done;
  }

  NpuConfig config_;
  std::unique_ptr<rtl::RtlArray> array_;
  std::pair<int64_t, int64_t> kept_[2] = {{0, 0}, {0, 0}};
  std::vector<uint64_t> promisedDone_;  // chained gemms: the done cycle the simulator recorded
  uint64_t checked_ = 0;                // chained gemms retired and checked
};
#endif

}  // namespace

std::unique_ptr<MatrixEngine> makeFastMatrixEngine(const NpuConfig& config) {
  return std::make_unique<FastMatrixEngine>(config);
}

bool rtlMatrixEngineBuilt() { return EMBER_HAVE_RTL != 0; }

Expected<std::unique_ptr<MatrixEngine>> makeRtlMatrixEngine(const NpuConfig& config,
                                                            const std::string& vcdPath) {
#if EMBER_HAVE_RTL
  // The RTL reads one input row (or column), one weight row and one
  // accumulator row per cycle.
  const int64_t widest = std::max(config.rows, config.cols);
  if (config.bankWidthBytes < widest || config.accumulatorPortBytes < 4 * config.cols)
    return makeError("config '", config.name,
                     "': matrix_engine.model 'rtl' reads one array row per cycle, which needs "
                     "scratchpad.bank_width_bytes >= ",
                     widest, " (has ", config.bankWidthBytes,
                     ") and accumulator.port_width_bytes >= ", 4 * config.cols, " (has ",
                     config.accumulatorPortBytes, ")");
  auto array = rtl::RtlArray::create(int(config.rows), int(config.cols), vcdPath);
  if (!array)
    return makeError("config '", config.name, "': matrix_engine.model 'rtl': ", array.error().message());
  return std::unique_ptr<MatrixEngine>(std::make_unique<RtlMatrixEngine>(config, std::move(*array)));
#else
  (void)vcdPath;
  return makeError(
      "config '", config.name,
      "': matrix_engine.model 'rtl' needs the Verilator build of rtl/, which this build does not "
      "include (Verilator was not found at configure time)");
#endif
}

}  // namespace ember::npu
