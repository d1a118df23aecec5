// One timing, three users: for every kind of instruction, on every shipped
// config and both dataflows, the compiler's cost model estimates exactly the
// latency of ember/npu/Timing.h, and the simulator measures exactly that
// latency for the instruction run alone. (tests/npu/NpuTimingTest.cpp checks
// the simulator against the formulas written out independently.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "CostModel.h"
#include "ember/npu/Simulator.h"
#include "ember/npu/Timing.h"

namespace ember::npu_backend {
namespace {

using npu::NpuConfig;
using npu::isa::Field;
using npu::isa::Instruction;
using npu::isa::Opcode;

NpuConfig loadShipped(const std::string& name) {
  auto c = npu::loadConfig(std::string(EMBER_NPU_CONFIG_DIR) + "/" + name);
  EXPECT_TRUE(c) << c.error().message();
  return c ? *c : NpuConfig{};
}

Instruction make(Opcode op, std::initializer_list<std::pair<Field, int64_t>> fields) {
  Instruction in;
  in.opcode = op;
  for (auto [f, v] : fields) in[f] = v;
  return in;
}

/// The simulator's cycles for `in` alone, less the one fetch cycle before it.
uint64_t simulatedAlone(const Instruction& in, const NpuConfig& c) {
  npu::Bundle b;
  b.dramBytes = 1 << 22;
  auto encoded = npu::isa::encode(in);
  auto finish = npu::isa::encode(make(Opcode::Finish, {}));
  EXPECT_TRUE(encoded) << encoded.error().message();
  if (!encoded || !finish) return 0;
  b.program = {*encoded, *finish};
  npu::DramImage dram = npu::makeDram(b);
  auto stats = npu::simulate(b, c, dram);
  EXPECT_TRUE(stats) << stats.error().message();
  return stats ? stats->cycles - npu::timing::kFetchCycles : 0;
}

/// The same latency through the cost model's own argument lists, as the
/// tiling search calls it (sync and finish have none).
uint64_t costByArguments(const CostModel& cost, const Instruction& in) {
  const int64_t e = in[Field::Mem] == int64_t(npu::isa::Memory::Accumulator) ? 4 : 1;
  const int64_t rows = in[Field::Rows], cols = in[Field::Cols];
  switch (in.opcode) {
    case Opcode::Load:
      return cost.load(in[Field::XSize], in[Field::YSize], in[Field::ZSize], e, in[Field::PadTop],
                       in[Field::PadBottom], in[Field::PadLeft], in[Field::PadRight]);
    case Opcode::Store:
      return cost.store(in[Field::XSize], in[Field::YSize], in[Field::ZSize], e);
    case Opcode::Gemm:
      return cost.gemm(in[Field::M], in[Field::K], in[Field::N], in[Field::Preload] != 0);
    case Opcode::Requant:
      return cost.requant(rows, cols);
    case Opcode::VAdd:
      return cost.vadd(rows, cols);
    case Opcode::Lut:
      return cost.lut(rows, cols);
    case Opcode::EAdd:
      return cost.eadd(rows, cols);
    case Opcode::Pool:
      return cost.pool(in[Field::OutH], in[Field::OutW], in[Field::KernelH], in[Field::KernelW],
                       in[Field::Channels]);
    default:
      return cost.of(in);
  }
}

/// Instructions of every opcode, sized for `c`, operands in distinct banks.
std::vector<Instruction> instructionsFor(const NpuConfig& c, int shape) {
  const int64_t bank = c.bankBytes();
  const bool ws = c.dataflow == npu::Dataflow::WeightStationary;
  const int64_t x = 1 + shape * 37 % 200, y = 1 + shape * 13 % 30;
  const int64_t rows = 1 + shape * 11 % 48, cols = 1 + shape * 17 % 90;
  const int64_t m = ws ? 1 + shape * 29 % 200 : 1 + shape * 5 % c.rows;
  const int64_t k = ws ? 1 + shape * 7 % c.rows : 1 + shape * 41 % 300;
  const int64_t n = 1 + shape * 3 % c.cols;
  const int64_t oh = 1 + shape % 5, ow = 1 + shape * 3 % 7, ch = 1 + shape * 5 % 40, kh = 1 + shape % 3;
  const int64_t kw = 1 + shape / 3 % 3, sh = 1 + shape % 2, sw = 1 + shape / 2 % 2;
  const int64_t pl = shape % 3, pr = shape % 2;
  return {
      make(Opcode::Load, {{Field::XSize, x},
                          {Field::YSize, y},
                          {Field::ZSize, 1 + shape % 2},
                          {Field::DramYStride, x},
                          {Field::DramZStride, x * y},
                          {Field::SramStride, pl + x + pr},
                          {Field::PadTop, shape % 2},
                          {Field::PadBottom, shape % 3 == 0},
                          {Field::PadLeft, pl},
                          {Field::PadRight, pr}}),
      make(Opcode::Load, {{Field::Mem, 1}, {Field::XSize, n}, {Field::YSize, y}, {Field::SramStride, n}}),
      make(Opcode::Store,
           {{Field::XSize, x}, {Field::YSize, y}, {Field::DramYStride, x}, {Field::SramStride, x}}),
      make(Opcode::Store, {{Field::Mem, 1},
                           {Field::XSize, n},
                           {Field::YSize, y},
                           {Field::DramYStride, n},
                           {Field::SramStride, n}}),
      make(Opcode::Gemm, {{Field::M, m},
                          {Field::K, k},
                          {Field::N, n},
                          {Field::Preload, 1},
                          {Field::Accumulate, shape % 2},
                          {Field::InpStride, k},
                          {Field::WgtAddr, bank},
                          {Field::WgtStride, n},
                          {Field::AccStride, n}}),
      make(Opcode::Requant, {{Field::Rows, rows},
                             {Field::Cols, cols},
                             {Field::SrcStride, cols},
                             {Field::DstStride, cols},
                             {Field::Multiplier, 1 << 30},
                             {Field::Lo, -128},
                             {Field::Hi, 127}}),
      make(Opcode::VAdd, {{Field::Rows, rows},
                          {Field::Cols, cols},
                          {Field::DstStride, cols},
                          {Field::Src, 4096},
                          {Field::SrcStride, shape % 2 ? 0 : cols}}),
      make(Opcode::VClip, {{Field::Rows, rows},
                           {Field::Cols, cols},
                           {Field::DstStride, cols},
                           {Field::Lo32, -5},
                           {Field::Hi32, 5}}),
      make(Opcode::Lut, {{Field::Rows, rows},
                         {Field::Cols, cols},
                         {Field::SrcStride, cols},
                         {Field::Dst, bank},
                         {Field::DstStride, cols},
                         {Field::LutAddr, 2 * bank}}),
      make(Opcode::EAdd, {{Field::Rows, rows},
                          {Field::Cols, cols},
                          {Field::SrcStride, cols},
                          {Field::Src2, bank},
                          {Field::Src2Stride, cols},
                          {Field::Dst, 2 * bank},
                          {Field::DstStride, cols},
                          {Field::ParamAddr, 3 * bank}}),
      make(Opcode::Pool, {{Field::Mode, shape % 2},
                          {Field::KernelH, kh},
                          {Field::KernelW, kw},
                          {Field::StrideH, sh},
                          {Field::StrideW, sw},
                          {Field::OutH, oh},
                          {Field::OutW, ow},
                          {Field::Channels, ch},
                          {Field::SrcStride, ((ow - 1) * sw + kw) * ch},
                          {Field::Dst, bank},
                          {Field::DstStride, ow * ch}}),
      make(Opcode::Sync, {{Field::QueueSel, shape % 3}}),
  };
}

TEST(NpuTimingTie, CostModelAndSimulatorAgreeWithTheTimingHeader) {
  int checked = 0;
  for (const char* name : {"npu-16x16.yaml", "npu-32x32.yaml", "npu-64x64.yaml"})
    for (npu::Dataflow dataflow : {npu::Dataflow::WeightStationary, npu::Dataflow::OutputStationary}) {
      NpuConfig c = loadShipped(name);
      c.dataflow = dataflow;
      const CostModel cost(c);
      for (int shape = 0; shape < 6; ++shape)
        for (const Instruction& in : instructionsFor(c, shape)) {
          const uint64_t formula = npu::timing::isolatedCycles(c, in);
          const std::string where = std::string(name) +
                                    (c.dataflow == npu::Dataflow::WeightStationary ? " ws " : " os ") +
                                    std::string(npu::isa::findOpcode(uint8_t(in.opcode))->mnemonic) +
                                    " shape " + std::to_string(shape);
          EXPECT_GT(formula, 0u) << where;
          EXPECT_EQ(cost.of(in), formula) << where;
          EXPECT_EQ(costByArguments(cost, in), formula) << where;
          EXPECT_EQ(simulatedAlone(in, c), formula) << where;
          ++checked;
        }
    }
  EXPECT_EQ(checked, 3 * 2 * 6 * 12);
}

}  // namespace
}  // namespace ember::npu_backend
