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
    top_->start = 0;
    top_->clk = 0;
    top_->eval();
    tick(nullptr);
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
    t.os_mode = job.outputStationary;
    t.accumulate = job.accumulate;
    t.preload = job.preload;
    t.m = uint16_t(job.m);
    t.k = uint16_t(job.k);
    t.n = uint16_t(job.n);
    t.inp_addr = job.inpAddr;
    t.inp_stride = uint16_t(job.inpStride);
    t.wgt_addr = job.wgtAddr;
    t.wgt_stride = uint16_t(job.wgtStride);
    t.acc_addr = job.accAddr;
    t.acc_stride = uint16_t(job.accStride);
    t.start = 1;
    t.eval();
    // A bound far above any legal latency turns an RTL hang into an error.
    const uint64_t limit = 4 * (uint64_t(job.m) + job.k + uint64_t(rows_ + cols_)) + 64;
    uint64_t cycles = 0;
    do {
      tick(&memories);
      t.start = 0;
      if (++cycles > limit)
        return makeError("the RTL matrix engine did not finish a gemm m=", job.m, " k=", job.k, " n=", job.n,
                         " within ", limit, " cycles");
    } while (!t.done);
    return cycles;
  }

 private:
  // One clock cycle: the write of this cycle, the rising edge, then the read
  // data of this cycle's requests for the next one.
  void tick(const Memories* memories) {
    Model& t = *top_;
    const bool aRead = t.a_rd_en, bRead = t.b_rd_en, accRead = t.acc_rd_en;
    const uint64_t aAddr = t.a_rd_addr, aStride = t.a_rd_stride, bAddr = t.b_rd_addr, bRow = t.b_rd_row,
                   accAddr = t.acc_rd_addr;
    if (memories && t.acc_wr_en) writeAccumulator();
    t.clk = 1;
    t.eval();
    if (trace_) trace_->dump(time_ * 1000);
    if (memories) {
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
    }
    t.clk = 0;
    t.eval();
    if (trace_) trace_->dump(time_ * 1000 + 500);
    ++time_;
    ++clocked_;
  }

  void readWeights(uint64_t address, uint64_t row) {
    uint8_t* buffered = nullptr;
    if (job_.outputStationary && row < job_.k && size_t(job_.k) * size_t(cols_) <= weightBuffer_.size())
      buffered = reinterpret_cast<uint8_t*>(weightBuffer_.data()) + row * uint64_t(cols_);
    if (job_.preload) {
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
