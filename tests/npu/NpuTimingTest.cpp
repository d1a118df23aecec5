// The simulator against the cycle formulas of docs/npu/timing-model.md, each
// written out again here, on >= 20 shapes per instruction kind; and the
// overlap of a double-buffered program.
#include <algorithm>
#include <functional>

#include "NpuTestUtil.h"

namespace ember::npu::test {
namespace {

using isa::Field;
using isa::Instruction;
using isa::Opcode;

uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/// Cycles of a program made of `instr` alone: one fetch cycle, then the instruction.
uint64_t runAlone(const Instruction& instr, const NpuConfig& c) {
  Bundle b;
  b.dramBytes = 1 << 22;
  Instruction finish;
  finish.opcode = Opcode::Finish;
  auto e1 = isa::encode(instr);
  auto e2 = isa::encode(finish);
  EXPECT_TRUE(e1) << e1.error().message();
  if (!e1 || !e2) return 0;
  b.program = {*e1, *e2};
  DramImage dram = makeDram(b);
  auto stats = simulate(b, c, dram);
  EXPECT_TRUE(stats) << stats.error().message();
  return stats ? stats->cycles - 1 : 0;
}

Instruction make(Opcode op, std::initializer_list<std::pair<Field, int64_t>> fields) {
  Instruction in;
  in.opcode = op;
  for (auto [f, v] : fields) in[f] = v;
  return in;
}

constexpr int kShapes = 24;

TEST(NpuTiming, LoadToScratchpadWithPadding) {
  const NpuConfig c = config();
  for (int i = 0; i < kShapes; ++i) {
    const uint64_t x = 1 + uint64_t(i * 37 % 300), y = 1 + uint64_t(i * 13 % 40), z = 1 + uint64_t(i % 3);
    const uint64_t pt = uint64_t(i % 2), pb = uint64_t(i % 3 == 0), pl = uint64_t(i % 4),
                   pr = uint64_t(i % 5 == 1) * 3;
    const Instruction in = make(Opcode::Load, {{Field::XSize, int64_t(x)},
                                               {Field::YSize, int64_t(y)},
                                               {Field::ZSize, int64_t(z)},
                                               {Field::DramYStride, int64_t(x)},
                                               {Field::DramZStride, int64_t(x * y)},
                                               {Field::SramStride, int64_t(pl + x + pr)},
                                               {Field::PadTop, int64_t(pt)},
                                               {Field::PadBottom, int64_t(pb)},
                                               {Field::PadLeft, int64_t(pl)},
                                               {Field::PadRight, int64_t(pr)}});
    const uint64_t d = z * y * cdiv(x, uint64_t(c.dramBytesPerCycle));
    const uint64_t s = z * (pt + y + pb) * cdiv(pl + x + pr, uint64_t(c.bankWidthBytes));
    EXPECT_EQ(runAlone(in, c), uint64_t(c.dramLatencyCycles) + std::max(d, s)) << "shape " << i;
  }
}

TEST(NpuTiming, LoadAndStoreOfAccumulator) {
  NpuConfig c = config();
  for (int i = 0; i < kShapes; ++i) {
    c.dramBytesPerCycle = 4 << (i % 4);
    const uint64_t x = 1 + uint64_t(i * 7 % 64), y = 1 + uint64_t(i * 5 % 30);
    for (Opcode op : {Opcode::Load, Opcode::Store}) {
      const Instruction in = make(op, {{Field::Mem, 1},
                                       {Field::XSize, int64_t(x)},
                                       {Field::YSize, int64_t(y)},
                                       {Field::DramYStride, int64_t(x)},
                                       {Field::SramStride, int64_t(x)}});
      const uint64_t d = y * cdiv(4 * x, uint64_t(c.dramBytesPerCycle));
      const uint64_t s = y * cdiv(4 * x, uint64_t(c.accumulatorPortBytes));
      EXPECT_EQ(runAlone(in, c), uint64_t(c.dramLatencyCycles) + std::max(d, s)) << "shape " << i;
    }
  }
}

TEST(NpuTiming, StoreFromScratchpad) {
  NpuConfig c = config();
  for (int i = 0; i < kShapes; ++i) {
    c.dramLatencyCycles = 10 * i;
    const uint64_t x = 1 + uint64_t(i * 53 % 500), y = 1 + uint64_t(i * 3 % 17), z = 1 + uint64_t(i % 2);
    const Instruction in = make(Opcode::Store, {{Field::XSize, int64_t(x)},
                                                {Field::YSize, int64_t(y)},
                                                {Field::ZSize, int64_t(z)},
                                                {Field::DramYStride, int64_t(x)},
                                                {Field::DramZStride, int64_t(x * y)},
                                                {Field::SramStride, int64_t(x)}});
    const uint64_t d = z * y * cdiv(x, uint64_t(c.dramBytesPerCycle));
    const uint64_t s = z * y * cdiv(x, uint64_t(c.bankWidthBytes));
    EXPECT_EQ(runAlone(in, c), uint64_t(c.dramLatencyCycles) + std::max(d, s)) << "shape " << i;
  }
}

TEST(NpuTiming, GemmWeightStationary) {
  for (const char* name : {"npu-16x16.yaml", "npu-32x32.yaml"}) {
    const NpuConfig c = config(name);
    for (int i = 0; i < kShapes; ++i) {
      const int64_t m = 1 + i * 29 % 300, k = 1 + i * 7 % c.rows, n = 1 + i * 11 % c.cols;
      const bool preload = true;
      const Instruction in = make(Opcode::Gemm, {{Field::M, m},
                                                 {Field::K, k},
                                                 {Field::N, n},
                                                 {Field::Preload, 1},
                                                 {Field::Accumulate, i % 2},
                                                 {Field::InpStride, k},
                                                 {Field::WgtAddr, c.bankBytes()},
                                                 {Field::WgtStride, n},
                                                 {Field::AccStride, n}});
      const uint64_t W = uint64_t(c.bankWidthBytes), Wacc = uint64_t(c.accumulatorPortBytes);
      const uint64_t tp = preload ? uint64_t(k) * cdiv(uint64_t(n), W) : 0;
      const uint64_t ts = uint64_t(m) * std::max(cdiv(uint64_t(k), W), cdiv(4 * uint64_t(n), Wacc));
      EXPECT_EQ(runAlone(in, c), tp + ts + uint64_t(c.rows + c.cols + 3)) << name << " shape " << i;
    }
  }
}

TEST(NpuTiming, GemmOutputStationary) {
  NpuConfig c = config();
  c.dataflow = Dataflow::OutputStationary;
  for (int i = 0; i < kShapes; ++i) {
    const int64_t m = 1 + i * 5 % c.rows, k = 1 + i * 41 % 400, n = 1 + i * 3 % c.cols;
    const Instruction in = make(Opcode::Gemm, {{Field::M, m},
                                               {Field::K, k},
                                               {Field::N, n},
                                               {Field::Preload, 1},
                                               {Field::InpStride, k},
                                               {Field::WgtAddr, c.bankBytes()},
                                               {Field::WgtStride, n},
                                               {Field::AccStride, n}});
    const uint64_t W = uint64_t(c.bankWidthBytes), Wacc = uint64_t(c.accumulatorPortBytes);
    const uint64_t expected = uint64_t(k) * cdiv(uint64_t(std::max(m, n)), W) +
                              uint64_t(c.rows + c.cols + 2) + uint64_t(m) * cdiv(4 * uint64_t(n), Wacc);
    EXPECT_EQ(runAlone(in, c), expected) << "shape " << i;
  }
}

TEST(NpuTiming, VectorOps) {
  NpuConfig c = config();
  for (int i = 0; i < kShapes; ++i) {
    c.vectorLanes = 4 << (i % 4);
    const int64_t rows = 1 + i * 13 % 64, cols = 1 + i * 17 % 96;
    const uint64_t L = uint64_t(c.vectorLanes), W = uint64_t(c.bankWidthBytes),
                   Wacc = uint64_t(c.accumulatorPortBytes);
    const uint64_t vlat = uint64_t(c.vectorLatencyCycles), r = uint64_t(rows), co = uint64_t(cols);
    const int64_t bank = c.bankBytes();
    // requant: accumulator -> scratchpad
    EXPECT_EQ(runAlone(make(Opcode::Requant, {{Field::Rows, rows},
                                              {Field::Cols, cols},
                                              {Field::SrcStride, cols},
                                              {Field::DstStride, cols},
                                              {Field::Multiplier, 1 << 30},
                                              {Field::Lo, -128},
                                              {Field::Hi, 127}}),
                       c),
              r * std::max({cdiv(co, L), cdiv(4 * co, Wacc), cdiv(co, W)}) + vlat)
        << "requant shape " << i;
    EXPECT_EQ(runAlone(make(Opcode::VAdd, {{Field::Rows, rows},
                                           {Field::Cols, cols},
                                           {Field::DstStride, cols},
                                           {Field::Src, 4096},
                                           {Field::SrcStride, i % 2 ? 0 : cols}}),
                       c),
              r * std::max(cdiv(co, L), cdiv(8 * co, Wacc)) + vlat)
        << "vadd shape " << i;
    EXPECT_EQ(runAlone(make(Opcode::VClip, {{Field::Rows, rows},
                                            {Field::Cols, cols},
                                            {Field::DstStride, cols},
                                            {Field::Lo32, -5},
                                            {Field::Hi32, 5}}),
                       c),
              r * std::max(cdiv(co, L), cdiv(4 * co, Wacc)) + vlat)
        << "vclip shape " << i;
    EXPECT_EQ(runAlone(make(Opcode::Lut, {{Field::Rows, rows},
                                          {Field::Cols, cols},
                                          {Field::SrcStride, cols},
                                          {Field::Dst, bank},
                                          {Field::DstStride, cols},
                                          {Field::LutAddr, 2 * bank}}),
                       c),
              cdiv(256, W) + r * std::max(cdiv(co, L), cdiv(co, W)) + vlat)
        << "lut shape " << i;
    EXPECT_EQ(runAlone(make(Opcode::EAdd, {{Field::Rows, rows},
                                           {Field::Cols, cols},
                                           {Field::SrcStride, cols},
                                           {Field::Src2, bank},
                                           {Field::Src2Stride, cols},
                                           {Field::Dst, 2 * bank},
                                           {Field::DstStride, cols},
                                           {Field::ParamAddr, 3 * bank}}),
                       c),
              cdiv(32, W) + r * std::max(cdiv(co, L), cdiv(co, W)) + vlat)
        << "eadd shape " << i;
    const int64_t oh = 1 + i % 7, ow = 1 + i * 3 % 9, ch = 1 + i * 5 % 40, kh = 1 + i % 3,
                  kw = 1 + (i / 3) % 3;
    const int64_t sh = 1 + i % 2, sw = 1 + (i / 2) % 2;
    const int64_t inW = (ow - 1) * sw + kw;
    EXPECT_EQ(runAlone(make(Opcode::Pool, {{Field::Mode, i % 2},
                                           {Field::KernelH, kh},
                                           {Field::KernelW, kw},
                                           {Field::StrideH, sh},
                                           {Field::StrideW, sw},
                                           {Field::OutH, oh},
                                           {Field::OutW, ow},
                                           {Field::Channels, ch},
                                           {Field::SrcStride, inW * ch},
                                           {Field::Dst, bank},
                                           {Field::DstStride, ow * ch}}),
                       c),
              uint64_t(oh * ow * kh * kw) * std::max(cdiv(uint64_t(ch), L), cdiv(uint64_t(ch), W)) + vlat)
        << "pool shape " << i;
  }
  EXPECT_EQ(runAlone(make(Opcode::Sync, {{Field::QueueSel, 1}}), c), 1u);
}

// softmax and layernorm (ISA v4): three passes per row at the lanes' and the
// bank's pace, one division per row (layernorm: and a square root), after
// their parameter record (a zero record is valid: every probability 0, every
// normalised value beta = 0).
TEST(NpuTiming, RowNormalisations) {
  for (const char* name : {"npu-16x16.yaml", "npu-64x64-v3.yaml"}) {
    const NpuConfig c = config(name);
    const uint64_t L = uint64_t(c.vectorLanes), W = uint64_t(c.bankWidthBytes);
    const uint64_t vlat = uint64_t(c.vectorLatencyCycles), bank = uint64_t(c.bankBytes());
    for (int i = 0; i < kShapes; ++i) {
      const int64_t rows = 1 + i * 11 % 40, cols = 1 + i * 37 % 700;
      const uint64_t r = uint64_t(rows), pass = std::max(cdiv(uint64_t(cols), L), cdiv(uint64_t(cols), W));
      const Instruction softmax = make(Opcode::Softmax, {{Field::Masked, i % 2},
                                                         {Field::Rows, rows},
                                                         {Field::Cols, cols},
                                                         {Field::SrcStride, cols},
                                                         {Field::Dst, int64_t(bank)},
                                                         {Field::DstStride, cols},
                                                         {Field::ParamAddr, int64_t(3 * bank)},
                                                         {Field::Src2, int64_t(2 * bank)},
                                                         {Field::Src2Stride, cols}});
      EXPECT_EQ(runAlone(softmax, c), cdiv(32, W) + r * (3 * pass + 16) + vlat) << name << " softmax " << i;
      const Instruction layerNorm = make(Opcode::LayerNorm, {{Field::Rows, rows},
                                                             {Field::Cols, cols},
                                                             {Field::SrcStride, cols},
                                                             {Field::Dst, int64_t(bank)},
                                                             {Field::DstStride, cols},
                                                             {Field::ParamAddr, int64_t(3 * bank)}});
      EXPECT_EQ(runAlone(layerNorm, c), cdiv(16 + 16 * uint64_t(cols), W) + r * (3 * pass + 32) + vlat)
          << name << " layernorm " << i;
    }
  }
}

TEST(NpuTiming, DoubleBufferingOverlapsLoadAndCompute) {
  NpuConfig c = config();
  c.dramBytesPerCycle = 8;  // balances loads and GEMMs of this tiling
  Bundle b = assembleTestFile("gemm_256x256x256.s");
  DramImage dram = makeDram(b);
  const SimStats s = run(b, c, dram);
  uint64_t load = 0, compute = 0;
  for (const auto& r : s.records) {
    if (r.unit == Unit::Load) load += r.endCycle - r.startCycle;
    if (r.unit == Unit::MatrixEngine || r.unit == Unit::VectorUnit) compute += r.endCycle - r.startCycle;
  }
  const uint64_t longer = std::max(load, compute);
  ASSERT_GT(std::min(load, compute), longer / 2) << "the case should be balanced";
  EXPECT_LT(s.cycles, longer + longer / 8) << "load " << load << " compute " << compute;
  EXPECT_LT(s.cycles, (load + compute) * 3 / 4);
  EXPECT_GT(s.cycles, longer);
}

TEST(NpuTiming, ConcurrentDmasShareDramBandwidth) {
  // A load and a store with no dependency run concurrently; each alone takes
  // L + rows * row_cycles, together the DRAM channel serves both.
  const NpuConfig c = config();
  Bundle b = assembleText(
      ".dram 0x100000\n"
      "load mem=spad dram=0x0 sram=0x0 x=1024 y=64 dram_ystride=1024 sram_stride=1024\n"
      "store mem=spad sram=0x20000 dram=0x80000 x=1024 y=64 dram_ystride=1024 sram_stride=1024\n"
      "finish\n");
  DramImage dram = makeDram(b);
  const SimStats s = run(b, c, dram);
  const uint64_t alone = uint64_t(c.dramLatencyCycles) + 64 * 1024 / uint64_t(c.dramBytesPerCycle);
  EXPECT_GE(s.cycles, 2 * alone - uint64_t(c.dramLatencyCycles) - 2);
  EXPECT_GT(s.units[size_t(Unit::Load)].stallCycles[size_t(StallReason::DramBandwidth)] +
                s.units[size_t(Unit::Store)].stallCycles[size_t(StallReason::DramBandwidth)],
            0u);
}

TEST(NpuTiming, BankConflictsSerialiseAccesses) {
  const NpuConfig c = config();
  // LUT reading and writing the same bank pays for both streams.
  const Instruction same = make(Opcode::Lut, {{Field::Rows, 64},
                                              {Field::Cols, 16},
                                              {Field::SrcStride, 16},
                                              {Field::Dst, 2048},
                                              {Field::DstStride, 16},
                                              {Field::LutAddr, 8192}});
  Instruction split = same;
  split[Field::Dst] = c.bankBytes();
  EXPECT_GT(runAlone(same, c), runAlone(split, c));
}

}  // namespace
}  // namespace ember::npu::test
