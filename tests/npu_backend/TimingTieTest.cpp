// One timing, three users: for every kind of instruction, on every shipped
// config and both dataflows, the compiler's cost model estimates exactly the
// latency of ember/npu/Timing.h, and the simulator measures exactly that
// latency for the instruction run alone. (tests/npu/NpuTimingTest.cpp checks
// the simulator against the formulas written out independently.)
#include <gtest/gtest.h>

#include <algorithm>
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

/// `in` as opcode `op` with `fields` changed.
Instruction withOpcode(Instruction in, Opcode op, std::initializer_list<std::pair<Field, int64_t>> fields) {
  in.opcode = op;
  for (auto [f, v] : fields) in[f] = v;
  return in;
}

Instruction make(Opcode op, std::initializer_list<std::pair<Field, int64_t>> fields) {
  return withOpcode(Instruction{}, op, fields);
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
  const Instruction eadd = make(Opcode::EAdd, {{Field::Rows, rows},
                                               {Field::Cols, cols},
                                               {Field::SrcStride, cols},
                                               {Field::Src2, bank},
                                               {Field::Src2Stride, cols},
                                               {Field::Dst, 2 * bank},
                                               {Field::DstStride, cols},
                                               {Field::ParamAddr, 3 * bank}});
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
      eadd,
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
      // softmax and layernorm take eadd's operand fields (src2: the mask; layernorm has none).
      withOpcode(eadd, Opcode::Softmax, {{Field::Masked, shape % 2}}),
      withOpcode(eadd, Opcode::LayerNorm, {{Field::Src2, 0}, {Field::Src2Stride, 0}}),
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
  EXPECT_EQ(checked, 3 * 2 * 6 * 14);  // configs x dataflows x shapes x instructions
}

/// The simulator's cycles for `program` (then finish), less the first fetch.
uint64_t simulated(const std::vector<Instruction>& program, const NpuConfig& c) {
  npu::Bundle b;
  b.dramBytes = 1 << 22;
  for (const Instruction& in : program) {
    auto encoded = npu::isa::encode(in);
    EXPECT_TRUE(encoded) << encoded.error().message();
    if (!encoded) return 0;
    b.program.push_back(*encoded);
  }
  b.program.push_back(*npu::isa::encode(make(Opcode::Finish, {})));
  npu::DramImage dram = npu::makeDram(b);
  auto stats = npu::simulate(b, c, dram);
  EXPECT_TRUE(stats) << stats.error().message();
  return stats ? stats->cycles - npu::timing::kFetchCycles : 0;
}

// Chains of 2-8 gemms on two weight buffers (matrix_engine.weight_buffers: 2):
// the closed form P1 + sum max(S_i, P_i+1) + S_last + R + C + 3 written out
// here, the timing header's chain, the cost model and the simulator agree.
// Inputs sit in bank 0 and weights in bank 1, so a preload never waits for
// the port the stream holds.
TEST(NpuTimingTie, GemmChainsOnTwoWeightBuffers) {
  int checked = 0;
  for (const char* name : {"npu-16x16-v2.yaml", "npu-64x64-v2.yaml", "npu-32x32.yaml"}) {
    NpuConfig c = loadShipped(name);
    c.weightBuffers = 2;
    const CostModel cost(c);
    const uint64_t W = uint64_t(c.bankWidthBytes), Wacc = uint64_t(c.accumulatorPortBytes);
    for (int length = 2; length <= 8; ++length)
      for (int variant = 0; variant < 3; ++variant) {
        std::vector<Instruction> program;
        std::vector<npu::timing::ChainedGemm> chain;
        std::vector<uint64_t> preloads, streams;
        unsigned wbuf = 1;
        for (int i = 0; i < length; ++i) {
          const int salt = i * 7 + variant * 13 + length;
          // Variant 1 streams some tiles twice (the second without preload);
          // variant 2 mixes long streams with long preloads.
          const bool preload = variant != 1 || i % 2 == 0;
          const int64_t k = 1 + salt * 5 % c.rows, n = 1 + salt * 3 % c.cols;
          const int64_t kk = preload || chain.empty() ? k : int64_t(chain.back().k);
          const int64_t nn = preload || chain.empty() ? n : int64_t(chain.back().n);
          const int64_t m = variant == 2 && i % 2 ? 1 + salt % 4 : 1 + salt * 11 % 150;
          if (preload) wbuf ^= 1;
          program.push_back(make(Opcode::Gemm, {{Field::M, m},
                                                {Field::K, kk},
                                                {Field::N, nn},
                                                {Field::Preload, preload},
                                                {Field::WeightBuffer, wbuf},
                                                {Field::Accumulate, i % 2},
                                                {Field::InpStride, kk},
                                                {Field::WgtAddr, c.bankBytes() + 512 * i},
                                                {Field::WgtStride, nn},
                                                {Field::AccAddr, 64 * i},
                                                {Field::AccStride, nn}}));
          chain.push_back({uint64_t(m), uint64_t(kk), uint64_t(nn), preload, wbuf});
          preloads.push_back(preload ? uint64_t(kk) * ((uint64_t(nn) + W - 1) / W) : 0);
          streams.push_back(uint64_t(m) *
                            std::max((uint64_t(kk) + W - 1) / W, (4 * uint64_t(nn) + Wacc - 1) / Wacc));
        }
        uint64_t closedForm = preloads[0] + streams.back() + uint64_t(c.rows + c.cols + 3);
        for (size_t i = 0; i + 1 < streams.size(); ++i) closedForm += std::max(streams[i], preloads[i + 1]);
        const std::string where =
            std::string(name) + " chain of " + std::to_string(length) + " variant " + std::to_string(variant);
        EXPECT_EQ(npu::timing::gemmChain(c, chain.data(), chain.size()), closedForm) << where;
        EXPECT_EQ(cost.gemmChain(chain), closedForm) << where;
        EXPECT_EQ(simulated(program, c), closedForm) << where;
        ++checked;
      }
  }
  EXPECT_EQ(checked, 3 * 7 * 3);
}

// One weight buffer keeps the serial sum: the same chains cost the sum of the
// isolated gemms on npu-16x16 (the v1 timing every existing figure uses).
TEST(NpuTimingTie, OneWeightBufferStaysSerial) {
  const NpuConfig c = loadShipped("npu-16x16.yaml");
  ASSERT_EQ(c.weightBuffers, 1);
  std::vector<Instruction> program;
  uint64_t sum = 0;
  for (int i = 0; i < 4; ++i) {
    const Instruction in = make(Opcode::Gemm, {{Field::M, 20 + i},
                                               {Field::K, 16},
                                               {Field::N, 16},
                                               {Field::Preload, 1},
                                               {Field::InpStride, 16},
                                               {Field::WgtAddr, c.bankBytes()},
                                               {Field::WgtStride, 16},
                                               {Field::AccAddr, 0},
                                               {Field::AccStride, 16}});
    program.push_back(in);
    sum += npu::timing::isolatedCycles(c, in);
  }
  // The queue fetches each gemm while the previous runs, so only the first fetch shows.
  EXPECT_EQ(simulated(program, c), sum);
}

}  // namespace
}  // namespace ember::npu_backend
