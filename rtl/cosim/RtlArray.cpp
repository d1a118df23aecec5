// The C++ side of the RTL matrix engine: clocks a verilated model and serves
// its memory ports from the caller's scratchpad and accumulator arrays
// (synchronous SRAMs: a read requested in cycle c is seen in cycle c+1; a
// write lands at the clock edge, before that edge's reads: write-first).
#include "ember/rtl/RtlArray.h"

#include <verilated.h>
#include <verilated_vcd_c.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "Vember_me_16x16.h"
#include "Vember_me_32x32.h"

namespace ember::rtl {
namespace {

// Ports up to 64 bits are integers; wider ones are VlWide arrays of 32-bit words.
template <typename Port>
uint32_t& word(Port& port, size_t i) {
  if constexpr (std::is_integral_v<Port>) {
    static_assert(sizeof(Port) <= 4, "64-bit data ports are not used");
    return reinterpret_cast<uint32_t*>(&port)[i];
  } else {
    return port[i];
  }
}

template <typename Port>
void putBytes(Port& port, const uint8_t* bytes, size_t count) {
  for (size_t w = 0; w * 4 < count; ++w) {
    uint32_t v = 0;
    for (size_t b = 0; b < 4 && w * 4 + b < count; ++b) v |= uint32_t(bytes[w * 4 + b]) << (8 * b);
    word(port, w) = v;
  }
}

template <typename Model>
class VerilatedArray final : public RtlArray {
 public:
  VerilatedArray(int rows, int cols) : rows_(rows), cols_(cols) {}

  Error open(const std::string& vcdPath) {
    context_ = std::make_unique<VerilatedContext>();
    if (!vcdPath.empty()) context_->traceEverOn(true);
    top_ = std::make_unique<Model>(context_.get(), "matrix_engine");
    if (!vcdPath.empty()) {
      trace_ = std::make_unique<VerilatedVcdC>();
      top_->trace(trace_.get(), 99);
      trace_->open(vcdPath.c_str());
      if (!trace_->isOpen()) return makeError("--vcd ", vcdPath, ": cannot open the file for writing");
    }
    top_->rst_n = 0;
    top_->cmd_valid = 0;
    top_->clk = 0;
    top_->eval();
    // One reset cycle, off the program's cycle axis (cycle 0 is the first
    // cycle an instruction can be offered in).
    top_->clk = 1;
    top_->eval();
    top_->clk = 0;
    top_->eval();
    ++clocked_;
    top_->rst_n = 1;
    return Error::success();
  }

  ~VerilatedArray() override {
    if (trace_) trace_->close();
    if (top_) top_->final();
  }

  int rows() const override { return rows_; }
  int cols() const override { return cols_; }
  uint64_t clockedCycles() const override { return clocked_; }

  Expected<uint64_t> run(const GemmJob& job, const Memories& memories, uint64_t startCycle) override {
    Model& t = *top_;
    job_ = job;
    mem_ = memories;
    if (job.outputStationary && job.preload) weightBuffer_.assign(size_t(job.k) * size_t(cols_), 0);
    time_ = std::max(time_, startCycle);
    offer(job);
    t.pl_grant = 1;  // one instruction at a time: nothing to arbitrate
    t.st_grant = 1;
    t.eval();
    const uint64_t limit = hangLimit(job);
    uint64_t cycles = 0;
    const size_t retiredBefore = retired_.size();
    do {
      tick();
      t.cmd_valid = 0;
      if (++cycles > limit) return hung(job, limit);
    } while (retired_.size() == retiredBefore);
    return cycles;
  }

  Expected<ChainedStart> issue(const GemmJob& job, const Memories& memories, uint64_t issueCycle,
                               const StageGrant& grantPreload, const StageGrant& grantStream) override {
    Model& t = *top_;
    job_ = job;
    mem_ = memories;
    grantPreload_ = grantPreload;
    grantStream_ = grantStream;
    if (issued_ && issueCycle <= lastOffer_)
      return makeError("the RTL matrix engine takes one instruction a cycle: gemm ", issued_,
                       " offered at cycle ", issueCycle, ", the previous one at ", lastOffer_);
    EMBER_RETURN_IF_ERROR(advanceTo(issueCycle));
    lastOffer_ = issueCycle;
    offer(job);
    ChainedStart start{issueCycle, 0};
    const size_t index = issued_++;
    preloadsIssued_ += job.preload ? 1 : 0;
    // The previous gemm may still stream up to 65535 rows; cycles waiting
    // for a granted start do not count.
    const uint64_t limit = hangLimit(job) + 4 * 65536;
    for (uint64_t cycles = 0;; cycles += plAt_ == kNone && stAt_ == kNone) {
      t.eval();
      if (t.cmd_valid && !t.cmd_ready)
        return makeError("the RTL matrix engine's command queue is full at cycle ", time_);
      EMBER_RETURN_IF_ERROR(decide());
      if (plDecided_ && plOwner_ == index) start.preloadStart = plAt_, plDecided_ = false;
      if (stOwner_ == index && stAt_ != kNone) {
        start.streamStart = stAt_;
        return start;
      }
      if (cycles > limit) return hung(job, limit);
      EMBER_RETURN_IF_ERROR(clockGranted());
    }
  }

  Expected<uint64_t> retire(uint64_t index) override {
    if (index >= issued_) return makeError("the RTL matrix engine has no gemm ", index, " to retire");
    const uint64_t limit = 4 * uint64_t(rows_ + cols_ + 1024) + 64 + (stAt_ != kNone ? stAt_ - time_ : 0);
    for (uint64_t cycles = 0; retired_.size() <= index; ++cycles) {
      if (cycles > limit)
        return makeError("the RTL matrix engine did not finish gemm ", index, " within ", limit, " cycles");
      top_->eval();
      EMBER_RETURN_IF_ERROR(decide());
      EMBER_RETURN_IF_ERROR(clockGranted());
    }
    return retired_[index];
  }

  uint64_t issued() const override { return issued_; }

 private:
  static constexpr uint64_t kNone = ~uint64_t(0);

  /// Drives one instruction onto the command inputs (taken at the next edge).
  void offer(const GemmJob& job) {
    Model& t = *top_;
    t.os_mode = job.outputStationary;
    t.accumulate = job.accumulate;
    t.preload = job.preload;
    t.wbuf = job.wbuf & 1;
    t.m = uint16_t(job.m);
    t.k = uint16_t(job.k);
    t.n = uint16_t(job.n);
    t.inp_addr = job.inpAddr;
    t.inp_stride = uint16_t(job.inpStride);
    t.wgt_addr = job.wgtAddr;
    t.wgt_stride = uint16_t(job.wgtStride);
    t.acc_addr = job.accAddr;
    t.acc_stride = uint16_t(job.accStride);
    t.cmd_valid = 1;
  }

  /// A bound far above any legal latency turns an RTL hang into an error.
  uint64_t hangLimit(const GemmJob& job) const {
    return 4 * (uint64_t(job.m) + job.k + uint64_t(rows_ + cols_)) + 64;
  }
  Error hung(const GemmJob& job, uint64_t limit) const {
    return makeError("the RTL matrix engine did not finish a gemm m=", job.m, " k=", job.k, " n=", job.n,
                     " within ", limit, " cycles");
  }

  /// Chained protocol: a stage that asks to start this cycle gets its start
  /// cycle from the caller's grant once. Stages start in issue order, and the
  /// caller issues the next gemm only once this one's stream start is known,
  /// so the newest gemm's grants answer every new request.
  Error decide() {
    Model& t = *top_;
    if (t.pl_req && plAt_ == kNone) {
      if (preloadsDecided_ >= preloadsIssued_)
        return makeError("the RTL matrix engine asked to preload with no gemm waiting");
      ++preloadsDecided_;
      plAt_ = std::max(time_, grantPreload_(time_));
      plOwner_ = issued_ - 1;
      plDecided_ = true;
    }
    if (t.st_req && stAt_ == kNone) {
      if (streamsDecided_ >= issued_)
        return makeError("the RTL matrix engine asked to stream with no gemm waiting");
      stOwner_ = streamsDecided_++;
      stAt_ = std::max(time_, grantStream_(time_));
    }
    return Error::success();
  }

  /// Raises the grants due this cycle and clocks it.
  Error clockGranted() {
    Model& t = *top_;
    t.pl_grant = plAt_ == time_;
    t.st_grant = stAt_ == time_;
    t.eval();
    if ((t.pl_grant && !t.pl_req) || (t.st_grant && !t.st_req))
      return makeError("the RTL matrix engine withdrew a stage request at cycle ", time_);
    if (t.pl_grant) plAt_ = kNone;
    if (t.st_grant) stAt_ = kNone;
    tick();
    t.cmd_valid = 0;
    return Error::success();
  }

  /// Clocks (idle inputs, pending grants) until `cycle`; an idle engine is
  /// not clocked (as between single gemms), its time only moves on.
  Error advanceTo(uint64_t cycle) {
    while (time_ < cycle) {
      top_->eval();
      if (!top_->busy && plAt_ == kNone && stAt_ == kNone) {
        time_ = cycle;
        break;
      }
      EMBER_RETURN_IF_ERROR(decide());
      EMBER_RETURN_IF_ERROR(clockGranted());
    }
    return Error::success();
  }

  // One clock cycle: the write of this cycle, the rising edge, then the read
  // data of this cycle's requests for the next one; a done pulse in the new
  // cycle retires the oldest gemm in flight.
  void tick() {
    Model& t = *top_;
    const bool aRead = t.a_rd_en, bRead = t.b_rd_en, accRead = t.acc_rd_en;
    const uint64_t aAddr = t.a_rd_addr, aStride = t.a_rd_stride, bAddr = t.b_rd_addr, bRow = t.b_rd_row,
                   accAddr = t.acc_rd_addr;
    if (t.acc_wr_en) writeAccumulator();
    t.clk = 1;
    t.eval();
    if (trace_) trace_->dump(time_ * 1000);
    if (aRead) {
      for (int l = 0; l < rows_; ++l) {
        const uint64_t a = aAddr + uint64_t(l) * aStride;
        lane_[size_t(l)] = a < mem_.scratchpadBytes ? uint8_t(mem_.scratchpad[a]) : 0;
      }
      putBytes(t.a_rd_data, lane_, size_t(rows_));
    }
    if (bRead) readWeights(bAddr, bRow);
    if (accRead) {
      for (int c = 0; c < cols_; ++c) {
        const uint64_t e = accAddr + uint64_t(c);
        word(t.acc_rd_data, size_t(c)) = e < mem_.accumulatorEntries ? uint32_t(mem_.accumulator[e]) : 0;
      }
    }
    t.clk = 0;
    t.eval();
    if (trace_) trace_->dump(time_ * 1000 + 500);
    ++time_;
    ++clocked_;
    if (t.done) retired_.push_back(time_);
  }

  void readWeights(uint64_t address, uint64_t row) {
    uint8_t* buffered = nullptr;
    if (job_.outputStationary && row < job_.k && size_t(job_.k) * size_t(cols_) <= weightBuffer_.size())
      buffered = reinterpret_cast<uint8_t*>(weightBuffer_.data()) + row * uint64_t(cols_);
    if (!job_.outputStationary || job_.preload) {  // WS: only the weight loader reads port B
      for (int c = 0; c < cols_; ++c) {
        const uint64_t a = address + uint64_t(c);
        lane_[size_t(c)] = a < mem_.scratchpadBytes ? uint8_t(mem_.scratchpad[a]) : 0;
      }
      if (buffered) std::memcpy(buffered, lane_, size_t(cols_));
    } else if (buffered) {
      std::memcpy(lane_, buffered, size_t(cols_));
    } else {
      std::memset(lane_, 0, size_t(cols_));
    }
    putBytes(top_->b_rd_data, lane_, size_t(cols_));
  }

  void writeAccumulator() {
    Model& t = *top_;
    const uint64_t base = t.acc_wr_addr;
    const uint64_t mask = t.acc_wr_mask;
    for (int c = 0; c < cols_; ++c) {
      const uint64_t e = base + uint64_t(c);
      if ((mask >> c & 1) && e < mem_.accumulatorEntries)
        mem_.accumulator[e] = int32_t(word(t.acc_wr_data, size_t(c)));
    }
  }

  int rows_, cols_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Model> top_;
  std::unique_ptr<VerilatedVcdC> trace_;
  GemmJob job_;
  Memories mem_;
  std::vector<int8_t> weightBuffer_;
  uint8_t lane_[1024] = {};
  uint64_t time_ = 0, clocked_ = 0;
  // Chained gemms: issue count, done cycles, and the stage grants decided
  // but not yet reached (kNone: none).
  uint64_t issued_ = 0;
  std::vector<uint64_t> retired_;
  StageGrant grantPreload_, grantStream_;
  uint64_t plAt_ = kNone, stAt_ = kNone, plOwner_ = 0, stOwner_ = 0;
  uint64_t lastOffer_ = 0;
  uint64_t preloadsIssued_ = 0, preloadsDecided_ = 0, streamsDecided_ = 0;
  bool plDecided_ = false;
};

template <typename Model>
Expected<std::unique_ptr<RtlArray>> make(int rows, int cols, const std::string& vcdPath) {
  auto array = std::make_unique<VerilatedArray<Model>>(rows, cols);
  EMBER_RETURN_IF_ERROR(array->open(vcdPath));
  return std::unique_ptr<RtlArray>(std::move(array));
}

}  // namespace

std::vector<std::pair<int, int>> RtlArray::availableSizes() { return {{16, 16}, {32, 32}}; }

Expected<std::unique_ptr<RtlArray>> RtlArray::create(int rows, int cols, const std::string& vcdPath) {
  if (rows == 16 && cols == 16) return make<Vember_me_16x16>(rows, cols, vcdPath);
  if (rows == 32 && cols == 32) return make<Vember_me_32x32>(rows, cols, vcdPath);
  return makeError("the RTL matrix engine has Verilator builds for 16x16 and 32x32 arrays only, not ", rows,
                   "x", cols, " (rtl/CMakeLists.txt)");
}

}  // namespace ember::rtl
