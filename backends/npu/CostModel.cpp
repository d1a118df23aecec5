#include "CostModel.h"

#include <algorithm>

namespace ember::npu_backend {

using npu::isa::Field;
using npu::isa::Opcode;

uint64_t CostModel::load(int64_t x, int64_t y, int64_t z, int64_t e, int64_t padTop, int64_t padBottom,
                         int64_t padLeft, int64_t padRight) const {
  const int64_t planes = std::max<int64_t>(z, 1);
  const int64_t port = e == 4 ? c_.accumulatorPortBytes : c_.bankWidthBytes;
  const int64_t dram = planes * y * ceilDiv(x * e, c_.dramBytesPerCycle);
  const int64_t sram = planes * (padTop + y + padBottom) * ceilDiv((padLeft + x + padRight) * e, port);
  return uint64_t(c_.dramLatencyCycles + std::max(dram, sram));
}

uint64_t CostModel::store(int64_t x, int64_t y, int64_t z, int64_t e) const {
  const int64_t planes = std::max<int64_t>(z, 1);
  const int64_t port = e == 4 ? c_.accumulatorPortBytes : c_.bankWidthBytes;
  return uint64_t(c_.dramLatencyCycles + std::max(planes * y * ceilDiv(x * e, c_.dramBytesPerCycle),
                                                  planes * y * ceilDiv(x * e, port)));
}

uint64_t CostModel::gemm(int64_t m, int64_t k, int64_t n, bool preload) const {
  const int64_t w = c_.bankWidthBytes, wacc = c_.accumulatorPortBytes;
  if (c_.dataflow == npu::Dataflow::WeightStationary) {
    const int64_t p = preload ? k * ceilDiv(n, w) : 0;
    return uint64_t(p + m * std::max(ceilDiv(k, w), ceilDiv(4 * n, wacc)) + c_.rows + c_.cols + 3);
  }
  return uint64_t(k * ceilDiv(std::max(m, n), w) + c_.rows + c_.cols + 2 + m * ceilDiv(4 * n, wacc));
}

uint64_t CostModel::requant(int64_t rows, int64_t cols) const {
  return uint64_t(rows * std::max({ceilDiv(cols, c_.vectorLanes), ceilDiv(4 * cols, c_.accumulatorPortBytes),
                                   ceilDiv(cols, c_.bankWidthBytes)}) +
                  c_.vectorLatencyCycles);
}

uint64_t CostModel::vadd(int64_t rows, int64_t cols) const {
  return uint64_t(rows * std::max(ceilDiv(cols, c_.vectorLanes), ceilDiv(8 * cols, c_.accumulatorPortBytes)) +
                  c_.vectorLatencyCycles);
}

uint64_t CostModel::lut(int64_t rows, int64_t cols) const {
  return uint64_t(ceilDiv(256, c_.bankWidthBytes) +
                  rows * std::max(ceilDiv(cols, c_.vectorLanes), ceilDiv(cols, c_.bankWidthBytes)) +
                  c_.vectorLatencyCycles);
}

uint64_t CostModel::eadd(int64_t rows, int64_t cols) const {
  return uint64_t(ceilDiv(32, c_.bankWidthBytes) +
                  rows * std::max(ceilDiv(cols, c_.vectorLanes), ceilDiv(cols, c_.bankWidthBytes)) +
                  c_.vectorLatencyCycles);
}

uint64_t CostModel::pool(int64_t outH, int64_t outW, int64_t kh, int64_t kw, int64_t c) const {
  return uint64_t(outH * outW * kh * kw *
                      std::max(ceilDiv(c, c_.vectorLanes), ceilDiv(c, c_.bankWidthBytes)) +
                  c_.vectorLatencyCycles);
}

uint64_t CostModel::dramCycles(int64_t rows, int64_t rowBytes) const {
  return uint64_t(rows * ceilDiv(rowBytes, c_.dramBytesPerCycle));
}

uint64_t CostModel::of(const npu::isa::Instruction& in) const {
  const int64_t e = in[Field::Mem] == int64_t(npu::isa::Memory::Accumulator) ? 4 : 1;
  switch (in.opcode) {
    case Opcode::Load:
      return load(in[Field::XSize], in[Field::YSize], in[Field::ZSize], e, in[Field::PadTop],
                  in[Field::PadBottom], in[Field::PadLeft], in[Field::PadRight]);
    case Opcode::Store:
      return store(in[Field::XSize], in[Field::YSize], in[Field::ZSize], e);
    case Opcode::Gemm:
      return gemm(in[Field::M], in[Field::K], in[Field::N], in[Field::Preload] != 0);
    case Opcode::Requant:
      return requant(in[Field::Rows], in[Field::Cols]);
    case Opcode::VAdd:
      return vadd(in[Field::Rows], in[Field::Cols]);
    case Opcode::VClip:
      return uint64_t(in[Field::Rows] * std::max(ceilDiv(in[Field::Cols], c_.vectorLanes),
                                                 ceilDiv(4 * in[Field::Cols], c_.accumulatorPortBytes)) +
                      c_.vectorLatencyCycles);
    case Opcode::Lut:
      return lut(in[Field::Rows], in[Field::Cols]);
    case Opcode::EAdd:
      return eadd(in[Field::Rows], in[Field::Cols]);
    case Opcode::Pool:
      return pool(in[Field::OutH], in[Field::OutW], in[Field::KernelH], in[Field::KernelW],
                  in[Field::Channels]);
    case Opcode::Sync:
      return 1;
    case Opcode::Finish:
      return 0;
  }
  return 0;
}

uint64_t CostModel::overlapped(uint64_t loadCycles, uint64_t computeCycles, uint64_t storeCycles,
                               uint64_t dramCycles) const {
  return std::max({loadCycles, computeCycles, storeCycles, dramCycles});
}

}  // namespace ember::npu_backend
