// Every NPU instruction's latency, written once (docs/npu/timing-model.md).
// The SystemC simulator times its units with these functions, the compiler's
// cost model ranks tilings with them, and the RTL timing validation compares
// the RTL's clock against them. A latency here is the instruction's cycles in
// isolation (no other unit active, operands in distinct banks); contention
// for ports is the simulator's business and adds to it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ember/Arithmetic.h"
#include "ember/npu/Config.h"
#include "ember/npu/Isa.h"

namespace ember::npu::timing {

/// Cycles a port that moves `width` bytes per cycle is busy with `bytes`
/// (a DRAM channel, a scratchpad bank, the accumulator port).
inline constexpr uint64_t portCycles(uint64_t bytes, uint64_t width) { return ceilDiv(bytes, width); }

/// Fetch and decode take one cycle per instruction; a sync only moves tokens.
inline constexpr uint64_t kFetchCycles = 1;
inline constexpr uint64_t kSyncCycles = 1;

// ---- DMA (load and store) ----

/// A DMA transfer: z planes of y rows of x elements of `elemBytes` bytes, and
/// the padding rows and columns a load writes around each plane.
struct DmaShape {
  uint64_t x = 0, y = 0, z = 1;
  uint64_t elemBytes = 1;  ///< 1 scratchpad, 4 accumulator
  uint64_t padTop = 0, padBottom = 0, padLeft = 0, padRight = 0;
};

/// The DRAM and SRAM streams run concurrently after the DRAM latency.
struct DmaTiming {
  uint64_t latency = 0;  ///< dram.latency_cycles, paid once per instruction
  uint64_t dram = 0;     ///< the data rows on the DRAM channel
  uint64_t sram = 0;     ///< every row, padding included, on the SRAM port
  uint64_t total() const { return latency + std::max(dram, sram); }
};

/// The SRAM port width a DMA row of `elemBytes` elements uses.
inline uint64_t sramPortBytes(const NpuConfig& c, uint64_t elemBytes) {
  return uint64_t(elemBytes == 4 ? c.accumulatorPortBytes : c.bankWidthBytes);
}

inline DmaTiming dma(const NpuConfig& c, const DmaShape& s) {
  const uint64_t planes = std::max<uint64_t>(s.z, 1);
  const uint64_t rowBytes = s.x * s.elemBytes;
  const uint64_t paddedRowBytes = (s.padLeft + s.x + s.padRight) * s.elemBytes;
  DmaTiming t;
  t.latency = uint64_t(c.dramLatencyCycles);
  t.dram = planes * s.y * portCycles(rowBytes, uint64_t(c.dramBytesPerCycle));
  t.sram =
      planes * (s.padTop + s.y + s.padBottom) * portCycles(paddedRowBytes, sramPortBytes(c, s.elemBytes));
  return t;
}

// ---- matrix engine ----

/// The isolated gemm latency, split into the parts that occupy ports: weight
/// preload, streaming (input bank and accumulator port), and the fixed
/// pipeline latency around them.
struct GemmTiming {
  uint64_t preload = 0;   ///< WS: weight rows read into the PEs
  uint64_t stream = 0;    ///< WS: m input rows; OS: k input columns and weight rows
  uint64_t drain = 0;     ///< OS: m result rows read out
  uint64_t pipeline = 0;  ///< fill, skew/de-skew, read latency and output stage
  uint64_t total() const { return preload + stream + drain + pipeline; }
};

inline GemmTiming gemm(const NpuConfig& c, uint64_t m, uint64_t k, uint64_t n, bool preload) {
  const uint64_t W = uint64_t(c.bankWidthBytes), Wacc = uint64_t(c.accumulatorPortBytes);
  const uint64_t R = uint64_t(c.rows), C = uint64_t(c.cols);
  const uint64_t accRow = ceilDiv(4 * n, Wacc);
  GemmTiming t;
  // Calibrated against the RTL (docs/npu/rtl.md, "Timing validation"): the
  // pipeline term is the array's R + C wave plus the instruction-accept cycle,
  // the SRAM read latency and the accumulator output stage.
  if (c.dataflow == Dataflow::WeightStationary) {
    t.preload = preload ? k * ceilDiv(n, W) : 0;
    t.stream = m * std::max(ceilDiv(k, W), accRow);
    t.pipeline = R + C + 3;
  } else {
    t.stream = k * ceilDiv(std::max(m, n), W);
    t.drain = m * accRow;
    t.pipeline = R + C + 2;
  }
  return t;
}

/// Weight-stationary gemms with two weight buffers (matrix_engine.weight_buffers:
/// 2) run as two stages: the weight loader preloads buffer `wbuf` while the
/// previous gemm streams from the other one, and a gemm's rows enter right
/// after the previous gemm's last row, so the pipeline fills and drains once
/// per chain. A preload waits until the last stream from its buffer has ended
/// (an interlock, not an error), and a stream waits for its buffer's preload.
struct GemmStages {
  uint64_t preloadStart = 0, preloadEnd = 0;  ///< equal when the gemm has no preload
  uint64_t streamStart = 0, streamEnd = 0;    ///< the first and after the last row enters
  uint64_t done = 0;                          ///< the last result row written
};

/// The previous gemms' stage end times, the state the next gemm starts from.
struct GemmChain {
  uint64_t loaderFree = 0;              ///< the weight loader is idle
  uint64_t streamFree = 0;              ///< the previous gemm's last row has entered
  uint64_t drained = 0;                 ///< every issued gemm's results are written
  uint64_t bufferLoaded[2] = {0, 0};    ///< buffer b's last preload ends
  uint64_t bufferStreamed[2] = {0, 0};  ///< the last stream from buffer b ends

  /// Times a gemm issued at `at` (stage lengths `t`) and records its stages.
  GemmStages issue(uint64_t at, const GemmTiming& t, bool preload, unsigned wbuf) {
    const auto now = [](uint64_t ready) { return ready; };
    return issue(at, t, preload, wbuf, now, now);
  }
  /// The same, each stage starting when its grant says (`grant(ready)` >=
  /// ready: the simulator's bank and accumulator-port arbitration).
  template <typename PreloadGrant, typename StreamGrant>
  GemmStages issue(uint64_t at, const GemmTiming& t, bool preload, unsigned wbuf, PreloadGrant&& grantPreload,
                   StreamGrant&& grantStream) {
    const unsigned b = wbuf & 1;
    GemmStages s;
    s.preloadStart = s.preloadEnd = at;
    if (preload) {
      s.preloadStart = grantPreload(std::max({at, loaderFree, bufferStreamed[b]}));
      s.preloadEnd = s.preloadStart + t.preload;
      loaderFree = bufferLoaded[b] = s.preloadEnd;
    }
    s.streamStart = grantStream(std::max({at, streamFree, bufferLoaded[b]}));
    s.streamEnd = s.streamStart + t.stream;
    s.done = s.streamEnd + t.pipeline;
    streamFree = bufferStreamed[b] = s.streamEnd;
    drained = std::max(drained, s.done);
    return s;
  }
};

/// One gemm of a chain: its shape, whether it preloads, and its buffer.
struct ChainedGemm {
  uint64_t m = 0, k = 0, n = 0;
  bool preload = true;
  unsigned wbuf = 0;
};

/// The compute queue issues at most one instruction a cycle: a chained gemm
/// holds it until its stream starts, and for its issue cycle at least.
inline constexpr uint64_t kGemmIssueCycles = 1;

/// The cycles of a chain of gemms issued back to back on two weight buffers,
/// each issued once the previous one starts streaming (and a cycle after the
/// previous issue at the earliest); with buffers alternating,
/// P1 + sum max(S_i, P_i+1) + S_last + pipeline
/// (docs/npu/timing-model.md, "Two weight buffers").
inline uint64_t gemmChain(const NpuConfig& c, const ChainedGemm* gemms, size_t count) {
  GemmChain chain;
  uint64_t at = 0;
  for (size_t i = 0; i < count; ++i) {
    const ChainedGemm& g = gemms[i];
    const uint64_t streamStart =
        chain.issue(at, gemm(c, g.m, g.k, g.n, g.preload), g.preload, g.wbuf).streamStart;
    at = std::max(streamStart, at + kGemmIssueCycles);
  }
  return chain.drained;
}

// ---- vector unit ----

/// A vector instruction occupies its operands' ports for setup + rows x
/// perRow cycles, then its result appears `latency` cycles later.
struct VectorTiming {
  uint64_t setup = 0;    ///< a table or parameter record read first
  uint64_t rows = 0;     ///< rows (pool: output pixels)
  uint64_t perRow = 0;   ///< the slowest of the lanes and the ports, per row
  uint64_t latency = 0;  ///< vector.latency_cycles
  uint64_t busy() const { return setup + rows * perRow; }
  uint64_t total() const { return busy() + latency; }
};

namespace detail {
inline VectorTiming vectorRows(const NpuConfig& c, uint64_t rows, uint64_t perRow, uint64_t setup = 0) {
  return {setup, rows, perRow, uint64_t(c.vectorLatencyCycles)};
}
inline uint64_t lanes(const NpuConfig& c, uint64_t cols) { return ceilDiv(cols, uint64_t(c.vectorLanes)); }
inline uint64_t accPort(const NpuConfig& c, uint64_t bytes) {
  return portCycles(bytes, uint64_t(c.accumulatorPortBytes));
}
inline uint64_t bank(const NpuConfig& c, uint64_t bytes) {
  return portCycles(bytes, uint64_t(c.bankWidthBytes));
}
}  // namespace detail

/// int32 accumulator rows -> int8 scratchpad rows.
inline VectorTiming requant(const NpuConfig& c, uint64_t rows, uint64_t cols) {
  using namespace detail;
  return vectorRows(c, rows, std::max({lanes(c, cols), accPort(c, 4 * cols), bank(c, cols)}));
}
/// Reads two int32 operands and writes one through the accumulator port.
inline VectorTiming vadd(const NpuConfig& c, uint64_t rows, uint64_t cols) {
  using namespace detail;
  return vectorRows(c, rows, std::max(lanes(c, cols), accPort(c, 8 * cols)));
}
inline VectorTiming vclip(const NpuConfig& c, uint64_t rows, uint64_t cols) {
  using namespace detail;
  return vectorRows(c, rows, std::max(lanes(c, cols), accPort(c, 4 * cols)));
}
/// The table (isa::kLutTableBytes) is read first, then the lookups.
inline VectorTiming lut(const NpuConfig& c, uint64_t rows, uint64_t cols) {
  using namespace detail;
  return vectorRows(c, rows, std::max(lanes(c, cols), bank(c, cols)), bank(c, isa::kLutTableBytes));
}
/// The parameter record is read first, then the a, b and dst streams.
inline VectorTiming eadd(const NpuConfig& c, uint64_t rows, uint64_t cols) {
  using namespace detail;
  return vectorRows(c, rows, std::max(lanes(c, cols), bank(c, cols)), bank(c, isa::kEAddParamBytes));
}
/// One output pixel per `rows`: its kh x kw window of `channels` channels.
inline VectorTiming pool(const NpuConfig& c, uint64_t outH, uint64_t outW, uint64_t kh, uint64_t kw,
                         uint64_t channels) {
  using namespace detail;
  return vectorRows(c, outH * outW, kh * kw * std::max(lanes(c, channels), bank(c, channels)));
}

/// The row normalisations (ISA v4) make three passes over each row, each at
/// the lanes' and the scratchpad port's pace: softmax finds the row's maximum,
/// then sums exp (recomputed in the third pass, so no scratch), then scales;
/// layernorm sums the row, then its squared deviations, then normalises. Per
/// row, softmax divides once (the reciprocal of the sum) and layernorm takes
/// one integer square root and one division; the row's statistics stay in the
/// unit, so each row ends before the next begins.
inline constexpr uint64_t kRowNormPasses = 3;
/// A 64-bit integer division, radix 16 (the reciprocals' quotients have at most
/// 64 bits).
inline constexpr uint64_t kRowDivideCycles = 16;
/// A 64-bit integer square root, two result bits per cycle (32 result bits).
inline constexpr uint64_t kRowSqrtCycles = 16;

/// Softmax over `rows` rows of `cols` codes: its 32-byte parameters first.
inline VectorTiming softmax(const NpuConfig& c, uint64_t rows, uint64_t cols) {
  using namespace detail;
  const uint64_t pass = std::max(lanes(c, cols), bank(c, cols));
  return vectorRows(c, rows, kRowNormPasses * pass + kRowDivideCycles, bank(c, isa::kSoftmaxParamBytes));
}
/// LayerNorm over `rows` rows of `cols` channels: the header and the channels'
/// records are read once into the unit's parameter buffer.
inline VectorTiming layerNorm(const NpuConfig& c, uint64_t rows, uint64_t cols) {
  using namespace detail;
  const uint64_t pass = std::max(lanes(c, cols), bank(c, cols));
  return vectorRows(c, rows, kRowNormPasses * pass + kRowSqrtCycles + kRowDivideCycles,
                    bank(c, isa::layerNormParamBytes(int64_t(cols))));
}

// ---- one instruction ----

inline uint64_t field(const isa::Instruction& in, isa::Field f) { return uint64_t(in[f]); }

inline DmaShape dmaShape(const isa::Instruction& in) {
  using isa::Field;
  DmaShape s;
  s.x = field(in, Field::XSize);
  s.y = field(in, Field::YSize);
  s.z = field(in, Field::ZSize);
  s.elemBytes = in[Field::Mem] == int64_t(isa::Memory::Accumulator) ? 4 : 1;
  if (in.opcode == isa::Opcode::Load) {  // a store has no padding fields
    s.padTop = field(in, Field::PadTop);
    s.padBottom = field(in, Field::PadBottom);
    s.padLeft = field(in, Field::PadLeft);
    s.padRight = field(in, Field::PadRight);
  }
  return s;
}

inline GemmTiming gemm(const NpuConfig& c, const isa::Instruction& in) {
  using isa::Field;
  return gemm(c, field(in, Field::M), field(in, Field::K), field(in, Field::N), in[Field::Preload] != 0);
}

/// The vector unit's timing of a vector instruction (requant, vadd, vclip,
/// lut, eadd, pool, softmax, layernorm); {} for any other opcode.
inline VectorTiming vector(const NpuConfig& c, const isa::Instruction& in) {
  using isa::Field;
  using isa::Opcode;
  const uint64_t rows = field(in, Field::Rows), cols = field(in, Field::Cols);
  switch (in.opcode) {
    case Opcode::Requant:
      return requant(c, rows, cols);
    case Opcode::VAdd:
      return vadd(c, rows, cols);
    case Opcode::VClip:
      return vclip(c, rows, cols);
    case Opcode::Lut:
      return lut(c, rows, cols);
    case Opcode::EAdd:
      return eadd(c, rows, cols);
    case Opcode::Pool:
      return pool(c, field(in, Field::OutH), field(in, Field::OutW), field(in, Field::KernelH),
                  field(in, Field::KernelW), field(in, Field::Channels));
    case Opcode::Softmax:
      return softmax(c, rows, cols);
    case Opcode::LayerNorm:
      return layerNorm(c, rows, cols);
    default:
      return {};
  }
}

/// The isolated latency T of any instruction (finish: 0). A program of one
/// instruction takes kFetchCycles + T cycles.
inline uint64_t isolatedCycles(const NpuConfig& c, const isa::Instruction& in) {
  using isa::Opcode;
  switch (in.opcode) {
    case Opcode::Load:
    case Opcode::Store:
      return dma(c, dmaShape(in)).total();
    case Opcode::Gemm:
      return gemm(c, in).total();
    case Opcode::Requant:
    case Opcode::VAdd:
    case Opcode::VClip:
    case Opcode::Lut:
    case Opcode::EAdd:
    case Opcode::Pool:
    case Opcode::Softmax:
    case Opcode::LayerNorm:
      return vector(c, in).total();
    case Opcode::Sync:
      return kSyncCycles;
    case Opcode::Finish:
      return 0;
  }
  return 0;
}

}  // namespace ember::npu::timing
