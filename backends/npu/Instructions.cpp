#include "Instructions.h"

namespace ember::npu_backend {

using npu::isa::Field;
using npu::isa::Instruction;
using npu::isa::Opcode;

namespace {
Instruction dma(Opcode op, const Dma& d) {
  Instruction in;
  in.opcode = op;
  in[Field::Mem] = d.accumulator ? 1 : 0;
  in[Field::DramAddr] = int64_t(d.dram);
  in[Field::SramAddr] = int64_t(d.sram);
  in[Field::XSize] = d.x;
  in[Field::YSize] = d.y;
  in[Field::ZSize] = d.z;
  in[Field::DramYStride] = d.dramYStride;
  in[Field::DramZStride] = d.dramZStride;
  in[Field::SramStride] = d.sramStride;
  if (op == Opcode::Load) {
    in[Field::PadTop] = d.padTop;
    in[Field::PadBottom] = d.padBottom;
    in[Field::PadLeft] = d.padLeft;
    in[Field::PadRight] = d.padRight;
    in[Field::PadValue] = d.padValue;
  }
  return in;
}
}  // namespace

Instruction makeLoad(const Dma& d) { return dma(Opcode::Load, d); }
Instruction makeStore(const Dma& d) { return dma(Opcode::Store, d); }

Instruction makeGemm(const Gemm& g) {
  Instruction in;
  in.opcode = Opcode::Gemm;
  in[Field::Accumulate] = g.accumulate;
  in[Field::Preload] = g.preload;
  in[Field::M] = g.m;
  in[Field::K] = g.k;
  in[Field::N] = g.n;
  in[Field::InpAddr] = int64_t(g.inp);
  in[Field::WgtAddr] = int64_t(g.wgt);
  in[Field::AccAddr] = int64_t(g.acc);
  in[Field::InpStride] = g.inpStride;
  in[Field::WgtStride] = g.wgtStride;
  in[Field::AccStride] = g.accStride;
  in[Field::BiasInit] = g.biasInit;
  in[Field::BiasAddr] = g.biasInit ? int64_t(g.bias) : 0;
  return in;
}

Instruction makeRequant(uint64_t src, int64_t srcStride, uint64_t dst, int64_t dstStride, int64_t rows,
                        int64_t cols, int32_t multiplier, int32_t shift, int32_t zeroPoint, int32_t lo,
                        int32_t hi) {
  Instruction in;
  in.opcode = Opcode::Requant;
  in[Field::Src] = int64_t(src);
  in[Field::SrcStride] = srcStride;
  in[Field::Dst] = int64_t(dst);
  in[Field::DstStride] = dstStride;
  in[Field::Rows] = rows;
  in[Field::Cols] = cols;
  in[Field::Multiplier] = multiplier;
  in[Field::Shift] = shift;
  in[Field::ZeroPoint] = zeroPoint;
  in[Field::Lo] = lo;
  in[Field::Hi] = hi;
  return in;
}

Instruction makeVAdd(uint64_t dst, int64_t dstStride, uint64_t src, int64_t srcStride, int64_t rows,
                     int64_t cols) {
  Instruction in;
  in.opcode = Opcode::VAdd;
  in[Field::Dst] = int64_t(dst);
  in[Field::DstStride] = dstStride;
  in[Field::Src] = int64_t(src);
  in[Field::SrcStride] = srcStride;
  in[Field::Rows] = rows;
  in[Field::Cols] = cols;
  return in;
}

Instruction makeLut(uint64_t src, int64_t srcStride, uint64_t dst, int64_t dstStride, int64_t rows,
                    int64_t cols, uint64_t table) {
  Instruction in;
  in.opcode = Opcode::Lut;
  in[Field::Src] = int64_t(src);
  in[Field::SrcStride] = srcStride;
  in[Field::Dst] = int64_t(dst);
  in[Field::DstStride] = dstStride;
  in[Field::Rows] = rows;
  in[Field::Cols] = cols;
  in[Field::LutAddr] = int64_t(table);
  return in;
}

Instruction makeEAdd(uint64_t a, int64_t aStride, uint64_t b, int64_t bStride, uint64_t dst,
                     int64_t dstStride, int64_t rows, int64_t cols, uint64_t params) {
  Instruction in;
  in.opcode = Opcode::EAdd;
  in[Field::Src] = int64_t(a);
  in[Field::SrcStride] = aStride;
  in[Field::Src2] = int64_t(b);
  in[Field::Src2Stride] = bStride;
  in[Field::Dst] = int64_t(dst);
  in[Field::DstStride] = dstStride;
  in[Field::Rows] = rows;
  in[Field::Cols] = cols;
  in[Field::ParamAddr] = int64_t(params);
  return in;
}

Instruction makePool(const Pool& p) {
  Instruction in;
  in.opcode = Opcode::Pool;
  in[Field::Mode] = p.average ? 1 : 0;
  in[Field::KernelH] = p.kh;
  in[Field::KernelW] = p.kw;
  in[Field::StrideH] = p.sh;
  in[Field::StrideW] = p.sw;
  in[Field::OutH] = p.outH;
  in[Field::OutW] = p.outW;
  in[Field::Channels] = p.c;
  in[Field::Src] = int64_t(p.src);
  in[Field::Dst] = int64_t(p.dst);
  in[Field::SrcStride] = p.srcStride;
  in[Field::DstStride] = p.dstStride;
  return in;
}

Instruction makeSync(npu::isa::Queue queue) {
  Instruction in;
  in.opcode = Opcode::Sync;
  in[Field::QueueSel] = int64_t(queue);
  return in;
}

}  // namespace ember::npu_backend
