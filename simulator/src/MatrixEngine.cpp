// The two matrix engines behind include/ember/npu/MatrixEngine.h: the fast
// model and, when rtl/ was built with Verilator, the RTL co-simulation.
#include "ember/npu/MatrixEngine.h"

#include <algorithm>

#include "Functional.h"
#if EMBER_HAVE_RTL
#include "ember/rtl/RtlArray.h"
#endif

namespace ember::npu {
namespace {

using isa::Field;

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
  std::pair<int64_t, int64_t> keptWeights(unsigned buffer) const override {
    return {weights_[buffer & 1].k, weights_[buffer & 1].n};
  }
  uint64_t engineCycles() const override { return cycles_; }

 private:
  static unsigned bufferOf(const isa::Instruction& in) { return unsigned(in[Field::WeightBuffer]) & 1; }

  NpuConfig config_;
  functional::WeightTile weights_[2];  // matrix_engine.weight_buffers: 1 uses only the first
  uint64_t cycles_ = 0;
};

#if EMBER_HAVE_RTL
/// The verilated RTL: same instruction, same memories, cycles counted on the clock.
class RtlMatrixEngine final : public MatrixEngine {
 public:
  RtlMatrixEngine(const NpuConfig& config, std::unique_ptr<rtl::RtlArray> array)
      : outputStationary_(config.dataflow == Dataflow::OutputStationary), array_(std::move(array)) {}
  std::string_view name() const override { return "rtl"; }
  Expected<uint64_t> gemm(const isa::Instruction& in, const EngineMemories& memories,
                          uint64_t startCycle) override {
    rtl::GemmJob job;
    job.outputStationary = outputStationary_;
    job.accumulate = in[Field::Accumulate] != 0;
    job.preload = in[Field::Preload] != 0;
    job.m = uint32_t(in[Field::M]);
    job.k = uint32_t(in[Field::K]);
    job.n = uint32_t(in[Field::N]);
    job.inpAddr = uint32_t(in[Field::InpAddr]);
    job.inpStride = uint32_t(in[Field::InpStride]);
    job.wgtAddr = uint32_t(in[Field::WgtAddr]);
    job.wgtStride = uint32_t(in[Field::WgtStride]);
    job.accAddr = uint32_t(in[Field::AccAddr]);
    job.accStride = uint32_t(in[Field::AccStride]);
    const rtl::Memories mem{memories.scratchpad, memories.scratchpadBytes, memories.accumulator,
                            memories.accumulatorEntries};
    auto cycles = array_->run(job, mem, startCycle);
    if (cycles && job.preload) kept_ = {in[Field::K], in[Field::N]};
    return cycles;
  }
  std::pair<int64_t, int64_t> keptWeights(unsigned buffer) const override {
    return buffer == 0 ? kept_ : std::pair<int64_t, int64_t>{0, 0};
  }
  uint64_t engineCycles() const override { return array_->clockedCycles(); }

 private:
  bool outputStationary_;
  std::unique_ptr<rtl::RtlArray> array_;
  std::pair<int64_t, int64_t> kept_{0, 0};
};
#endif

}  // namespace

std::unique_ptr<MatrixEngine> makeFastMatrixEngine(const NpuConfig& config) {
  return std::make_unique<FastMatrixEngine>(config);
}

bool rtlMatrixEngineBuilt() { return EMBER_HAVE_RTL != 0; }

Expected<std::unique_ptr<MatrixEngine>> makeRtlMatrixEngine(const NpuConfig& config,
                                                            const std::string& vcdPath) {
  if (config.weightBuffers != 1)
    return makeError("config '", config.name,
                     "': matrix_engine.model 'rtl' has one weight buffer, but "
                     "matrix_engine.weight_buffers is ",
                     config.weightBuffers, " (docs/npu/rtl.md)");
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
