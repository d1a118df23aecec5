// The compiler's instruction builders (Instructions.h): one operand struct per
// opcode, generated from the ISA's field table (ember/npu/IsaFields.def). Each
// named member lands in its ISA field and survives encode/decode; the defaults
// the lowerings rely on are those of the old builders.
#include <gtest/gtest.h>

#include "Instructions.h"
#include "ProgramBuilder.h"
#include "ember/npu/Assembler.h"

namespace ember::npu_backend {
namespace {

using npu::isa::Field;
using npu::isa::Instruction;
using npu::isa::Opcode;

Instruction roundTrip(const Instruction& in) {
  auto encoded = npu::isa::encode(in);
  EXPECT_TRUE(bool(encoded)) << encoded.error().message();
  auto decoded = npu::isa::decode(*encoded);
  EXPECT_TRUE(bool(decoded)) << decoded.error().message();
  return *decoded;
}

TEST(NpuInstructions, RequantMembersLandInTheirFields) {
  const Instruction in = instruction(RequantOperands{.zeroPoint = -3,
                                                     .lo = -100,
                                                     .hi = 90,
                                                     .src = 0x120,
                                                     .dst = 0x340,
                                                     .shift = 7,
                                                     .rows = 3,
                                                     .cols = 5,
                                                     .srcStride = 16,
                                                     .dstStride = 8,
                                                     .multiplier = 1 << 30});
  EXPECT_EQ(in.opcode, Opcode::Requant);
  EXPECT_EQ(in[Field::ZeroPoint], -3);
  EXPECT_EQ(in[Field::Lo], -100);
  EXPECT_EQ(in[Field::Hi], 90);
  EXPECT_EQ(in[Field::Src], 0x120);
  EXPECT_EQ(in[Field::Dst], 0x340);
  EXPECT_EQ(in[Field::Shift], 7);
  EXPECT_EQ(in[Field::Rows], 3);
  EXPECT_EQ(in[Field::Cols], 5);
  EXPECT_EQ(in[Field::SrcStride], 16);
  EXPECT_EQ(in[Field::DstStride], 8);
  EXPECT_EQ(in[Field::Multiplier], 1 << 30);
  EXPECT_EQ(roundTrip(in), in);
}

TEST(NpuInstructions, EAddOperandsAreNamedAsInTheAssembly) {
  const Instruction in = instruction(EAddOperands{.a = 0x10,
                                                  .b = 0x20,
                                                  .rows = 2,
                                                  .cols = 64,
                                                  .aStride = 64,
                                                  .bStride = 0,
                                                  .dst = 0x30,
                                                  .dstStride = 64,
                                                  .params = 0x40});
  // The same instruction written in assembly (isa.md): a/b are src/src2.
  auto bundle = npu::assemble(
      "eadd a=0x10 b=0x20 rows=2 cols=64 a_stride=64 b_stride=0 dst=0x30 dst_stride=64 params=0x40\nfinish\n",
      "eadd.s", "");
  ASSERT_TRUE(bool(bundle)) << bundle.error().message();
  auto assembled = npu::isa::decode(bundle->program[0]);
  ASSERT_TRUE(bool(assembled));
  EXPECT_EQ(*assembled, in);
  EXPECT_EQ(in[Field::Src], 0x10);
  EXPECT_EQ(in[Field::Src2], 0x20);
  EXPECT_EQ(in[Field::Src2Stride], 0);
  EXPECT_EQ(in[Field::ParamAddr], 0x40);
}

TEST(NpuInstructions, DefaultsAreOneElementAndOnePreloadedGemm) {
  const Instruction load = instruction(LoadOperands{});
  EXPECT_EQ(load[Field::XSize], 1);
  EXPECT_EQ(load[Field::YSize], 1);
  EXPECT_EQ(load[Field::ZSize], 0);
  EXPECT_EQ(load[Field::Mem], int64_t(npu::isa::Memory::Scratchpad));
  const Instruction gemm = instruction(GemmOperands{});
  EXPECT_EQ(gemm[Field::Preload], 1);
  EXPECT_EQ(gemm[Field::Accumulate], 0);
  EXPECT_EQ(gemm[Field::M], 1);
  EXPECT_EQ(gemm[Field::K], 1);
  EXPECT_EQ(gemm[Field::N], 1);
  const Instruction pool = instruction(PoolOperands{});
  EXPECT_EQ(pool[Field::Mode], int64_t(npu::isa::PoolMode::Max));
  EXPECT_EQ(pool[Field::KernelH], 1);
  EXPECT_EQ(pool[Field::Channels], 1);
}

TEST(NpuInstructions, EnumMembersEncodeTheirValues) {
  LoadOperands bias;
  bias.mem = npu::isa::Memory::Accumulator;
  bias.x = 16;
  EXPECT_EQ(roundTrip(instruction(bias))[Field::Mem], 1);
  StoreOperands store;  // a store has no padding fields
  store.dram = 0x1000;
  EXPECT_EQ(instruction(store).opcode, Opcode::Store);
  EXPECT_EQ(roundTrip(instruction(store))[Field::DramAddr], 0x1000);
  const Instruction sync = makeSync(npu::isa::Queue::Store);
  EXPECT_EQ(sync.queue(), npu::isa::Queue::Store);
  EXPECT_EQ(roundTrip(sync), sync);
}

// The program builder encodes each step as it is added (it keeps the program
// encoded): a value that does not fit its field fails the compile with the
// field, the instruction and the layer named, and the program it builds is the
// decoded steps' instructions with their tokens, layer tags and weight buffers.
TEST(NpuProgramBuilder, EncodesStepsAndNamesTheLayerOfAFieldThatDoesNotFit) {
  ProgramBuilder builder;
  builder.setWeightBuffers(2);
  builder.beginLayer("conv1");
  Step step;
  step.loads.push_back(instruction(LoadOperands{.x = 16}));
  step.computes.push_back(instruction(GemmOperands{.m = 4, .k = 16, .n = 16}));
  step.stores.push_back(instruction(StoreOperands{.x = 16}));
  builder.addStep(step);
  builder.endLayer();
  builder.finish();
  ASSERT_FALSE(builder.error()) << builder.error().message();
  const auto program = builder.takeProgram();
  ASSERT_EQ(program.size(), 7u);  // 3 + the barrier's sync + 2 owed load pops + finish
  const auto gemm = npu::isa::decode(program[1]);
  ASSERT_TRUE(bool(gemm));
  EXPECT_EQ(gemm->opcode, Opcode::Gemm);
  EXPECT_EQ(gemm->layer, 1);
  EXPECT_EQ((*gemm)[Field::WeightBuffer], 0);  // the first preload fills buffer 0
  EXPECT_TRUE(gemm->deps.popPrev && gemm->deps.pushPrev && gemm->deps.pushNext);

  ProgramBuilder overflow;
  overflow.beginLayer("conv2");
  Step tooTall;
  tooTall.computes.push_back(instruction(GemmOperands{.m = 1 << 20}));
  overflow.addStep(tooTall);
  const std::string message = overflow.error().message();
  for (const char* part : {"layer 'conv2'", "step 0", "gemm", "field 'm'", "1048576"})
    EXPECT_NE(message.find(part), std::string::npos) << message;
}

}  // namespace
}  // namespace ember::npu_backend
