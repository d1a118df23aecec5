#include "RandomCosim.h"

#include <random>
#include <sstream>
#include <vector>

#include "ember/npu/Assembler.h"
#include "ember/npu/ProgramCheck.h"
#include "ember/npu/Simulator.h"

namespace ember::npu::test {
namespace {

NpuConfig withDataflow(NpuConfig config, uint64_t seed) {
  // Two weight buffers exist in the weight-stationary array only.
  const bool outputStationary = seed % 2 && config.weightBuffers == 1;
  config.dataflow = outputStationary ? Dataflow::OutputStationary : Dataflow::WeightStationary;
  config.matrixEngineModel = MatrixEngineModel::Fast;
  return config;
}

Expected<std::vector<isa::Instruction>> decodeAll(const Bundle& bundle) {
  std::vector<isa::Instruction> program;
  for (size_t i = 0; i < bundle.program.size(); ++i) {
    auto instruction = isa::decode(bundle.program[i]);
    if (!instruction) return makeError("instruction ", i, ": ", instruction.error().message());
    program.push_back(*instruction);
  }
  return program;
}

std::string where(const NpuConfig& config, uint64_t seed) {
  std::ostringstream os;
  os << config.name << " " << (config.dataflow == Dataflow::WeightStationary ? "ws" : "os") << " seed "
     << seed;
  return os.str();
}

Verdict failed(const NpuConfig& config, uint64_t seed, const std::string& what) {
  return {false, where(config, seed) + ": " + what, 0};
}

}  // namespace

Verdict checkValidProgram(const NpuConfig& base, uint64_t seed) {
  const NpuConfig config = withDataflow(base, seed);
  const RandomProgram generated = randomProgram(config, seed);
  auto bundle = assemble(generated.text, "random.s");
  if (!bundle) return failed(config, seed, "does not assemble: " + bundle.error().message());
  auto program = decodeAll(*bundle);
  if (!program) return failed(config, seed, program.error().message());
  if (Error e = checkTokens(*program, config))
    return failed(config, seed, "checkTokens refused: " + e.message());
  if (Error e = checkWeightBuffers(*program, config))
    return failed(config, seed, "checkWeightBuffers refused: " + e.message());
  if (Error e = checkSramRaces(*program, config))
    return failed(config, seed, "checkSramRaces refused: " + e.message());

  DramImage input = makeDram(*bundle);
  std::mt19937_64 rng(seed);
  for (const Symbol& s : bundle->symbols)
    if (s.direction == Symbol::Direction::Input)
      for (uint64_t i = 0; i < s.sizeInBytes(); ++i) input.bytes[s.dramOffset + i] = uint8_t(rng());

  DramImage fastDram = input, rtlDram = input;
  auto fast = simulate(*bundle, config, fastDram);
  if (!fast) return failed(config, seed, "fast model: " + fast.error().message());
  NpuConfig rtlConfig = config;
  rtlConfig.matrixEngineModel = MatrixEngineModel::Rtl;
  auto rtl = simulate(*bundle, rtlConfig, rtlDram);
  if (!rtl) return failed(config, seed, "rtl: " + rtl.error().message());
  if (rtl->matrixEngine != "rtl" || rtl->matrixEngineCycles == 0)
    return failed(config, seed, "the RTL matrix engine did not run");

  for (size_t i = 0; i < fastDram.bytes.size(); ++i)
    if (fastDram.bytes[i] != rtlDram.bytes[i])
      return failed(config, seed,
                    "DRAM byte " + std::to_string(i) + " differs: fast " + std::to_string(fastDram.bytes[i]) +
                        ", rtl " + std::to_string(rtlDram.bytes[i]));
  if (fast->cycles != rtl->cycles)
    return failed(
        config, seed,
        "cycles differ: fast " + std::to_string(fast->cycles) + ", rtl " + std::to_string(rtl->cycles));
  if (fast->records.size() != rtl->records.size()) return failed(config, seed, "instruction records differ");
  for (size_t i = 0; i < fast->records.size(); ++i) {
    const InstructionRecord &f = fast->records[i], &r = rtl->records[i];
    if (f.index != r.index || f.startCycle != r.startCycle || f.endCycle != r.endCycle)
      return failed(
          config, seed,
          "instruction " + std::to_string(f.index) + " runs cycles " + std::to_string(f.startCycle) + ".." +
              std::to_string(f.endCycle) + " on the fast model but " + std::to_string(r.startCycle) + ".." +
              std::to_string(r.endCycle) + " (instruction " + std::to_string(r.index) + ") on the rtl");
  }
  return {true, "", fast->cycles};
}

Verdict checkIllegalProgram(const NpuConfig& base, uint64_t seed, Mutation mutation) {
  const NpuConfig config = withDataflow(base, seed);
  const RandomProgram generated = randomProgram(config, seed, mutation);
  auto bundle = assemble(generated.text, "random.s");
  if (!bundle) return failed(config, seed, "does not assemble: " + bundle.error().message());
  auto program = decodeAll(*bundle);
  if (!program) return failed(config, seed, program.error().message());
  const std::string checker = expectedChecker(mutation);
  Error refusal = checker == "tokens"  ? checkTokens(*program, config)
                  : checker == "races" ? checkSramRaces(*program, config)
                                       : checkWeightBuffers(*program, config);
  if (!refusal)
    return failed(config, seed,
                  std::string("the ") + checker + " check accepted mutation " + mutationName(mutation));
  return {true, refusal.message(), 0};
}

}  // namespace ember::npu::test
