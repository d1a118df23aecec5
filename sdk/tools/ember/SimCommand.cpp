// ember sim: runs an NPU bundle (or an assembly file) on the SystemC simulator
// (docs/cli.md, docs/npu/architecture.md).
#include <cstring>
#include <iostream>
#include <map>
#include <random>

#include "Commands.h"
#include "ModelIO.h"
#include "Options.h"
#include "Tool.h"
#include "ember/Npy.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/ProgramCheck.h"
#include "ember/npu/Simulator.h"

namespace ember::cli {
namespace {

using namespace ember::npu;

/// The static checks of `--check`, on the encoded program (each instruction
/// decoded as a check reads it).
Error checkProgram(const Bundle& bundle, const NpuConfig& config) {
  EMBER_ASSIGN_OR_RETURN(const ProgramView view, ProgramView::of(bundle.program));
  EMBER_RETURN_IF_ERROR(checkTokens(view, config));
  EMBER_RETURN_IF_ERROR(checkWeightBuffers(view, config));
  return checkSramRaces(view, config);
}

/// Writes the bundle's input symbols into `dram`: from --input files, else
/// seeded random values with --random-inputs; an error names what is missing.
Error fillInputs(const Bundle& bundle, const std::map<std::string, std::string>& files, bool randomInputs,
                 uint64_t seed, DramImage& dram) {
  for (const auto& [name, file] : files) {
    bool known = false;
    for (const auto& s : bundle.symbols) known |= s.name == name && s.direction == Symbol::Direction::Input;
    if (!known) return makeError("--input ", name, ": the bundle has no input symbol '", name, "'");
  }
  std::vector<std::string> missing;
  std::mt19937_64 rng(seed);
  for (const auto& s : bundle.symbols) {
    if (s.direction != Symbol::Direction::Input) continue;
    uint8_t* dst = dram.bytes.data() + s.dramOffset;
    auto it = files.find(s.name);
    if (it != files.end()) {
      auto tensor = readNpy(it->second);
      if (!tensor) return tensor.error();
      const Type& t = tensor->type();
      if (!symbolAcceptsKind(s.type, t.kind))
        return makeError(it->second, ": input '", s.name, "' expects ", symbolTypeName(s.type),
                         " data but the file holds ", elemKindName(t.kind));
      if (t.dims != Dims(s.shape.begin(), s.shape.end()))
        return makeError(it->second, ": input '", s.name, "' expects shape ",
                         dimsStr(Dims(s.shape.begin(), s.shape.end())), " but the file has ",
                         dimsStr(t.dims));
      std::memcpy(dst, tensor->data(), s.sizeInBytes());
    } else if (randomInputs) {
      const uint64_t n = uint64_t(s.numElements());
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t bits = rng();
        if (s.type == SymbolType::I32) {
          const int32_t v = int32_t(int8_t(bits));
          std::memcpy(dst + 4 * i, &v, 4);
        } else {
          dst[i] = uint8_t(bits);
        }
      }
    } else {
      missing.push_back(s.name);
    }
  }
  if (missing.empty()) return Error::success();
  std::string list;
  for (const auto& m : missing) {
    list += (list.empty() ? "" : ", ");
    list += m;
  }
  return makeError("missing inputs (give --input NAME=FILE.npy or --random-inputs): ", list);
}

/// Writes each output symbol as DIR/<name>.npy (ModelIO's writer, as `ember run`).
Error writeOutputSymbols(const Bundle& bundle, const DramImage& dram, const std::string& outputDir) {
  Signature outputs;
  ExecutionContext context;
  for (const auto& s : bundle.symbols) {
    if (s.direction != Symbol::Direction::Output) continue;
    Tensor tensor = outputSymbolTensor(s, dram);
    outputs.emplace_back(s.name, tensor.type());
    context.setOutput(s.name, std::move(tensor));
  }
  auto written = cli::writeOutputs(outputDir, outputs, context);
  return written ? Error::success() : written.error();
}

struct SimArgs {
  std::string bundlePath, configPath, outputDir, statsPath, tracePath, vcdPath, engine;
  std::map<std::string, std::string> inputFiles;
  bool randomInputs = false, perInstruction = false, quiet = false, check = false;
  int64_t seed = 0, maxCycles = 0;
};

/// Parses `ember sim`'s arguments into `a`; an exit status when it is done
/// (--help, or a bad argument).
std::optional<int> parseSimArgs(const std::vector<std::string>& args, SimArgs& a) {
  std::vector<std::string> inputs;
  OptionParser parser("ember sim", "BUNDLE --config NPU.yaml [options]",
                      "Runs an NPU bundle (or an assembly file ending in .s) "
                      "on the cycle-approximate simulator.");
  parser.addPositional("BUNDLE", &a.bundlePath,
                       "the bundle (`ember compile --backend npu -o`, `ember "
                       "asm`) or a .s file");
  parser.addString("--config", "NPU.yaml", &a.configPath,
                   "NPU configuration (default: the built-in npu-16x16 parameters)");
  parser.addString("--matrix-engine", "fast|rtl", &a.engine,
                   "the matrix engine: the fast model or the verilated RTL "
                   "(default: the config's)");
  parser.addList("--input", "NAME=FILE.npy", &inputs,
                 ".npy data for input symbol NAME (dtype and shape must match)");
  parser.addFlag("--random-inputs", &a.randomInputs,
                 "fill inputs without --input with random values (seeded by --seed)");
  parser.addInt("--seed", "N", &a.seed, "seed of the random inputs (default: 0)");
  parser.addString("--output-dir", "DIR", &a.outputDir, "write each output symbol as DIR/<name>.npy");
  parser.addString("--stats", "FILE.json", &a.statsPath, "write statistics as JSON");
  parser.addFlag("--per-instruction", &a.perInstruction, "with --stats: one record per instruction");
  parser.addString("--trace", "FILE.json", &a.tracePath,
                   "write a Chrome trace-event timeline (open it in Perfetto)");
  parser.addString("--vcd", "FILE", &a.vcdPath, "with the RTL matrix engine: write its waveforms");
  parser.addFlag("--check", &a.check,
                 "first run the static program checks (tokens, SRAM races and bounds) and refuse a "
                 "failing program");
  parser.addFlag("--quiet", &a.quiet, "no summary on stdout and no progress on stderr");
  parser.addInt("--max-cycles", "N", &a.maxCycles,
                "stop with an error once the run passes N cycles, writing no output (default: no limit)", 1);
  if (auto status = parser.parse(args)) return status;
  if (!a.engine.empty() && a.engine != "fast" && a.engine != "rtl")
    return parser.usageError("--matrix-engine expects fast or rtl, got '" + a.engine + "'");
  for (const std::string& spec : inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return parser.usageError("--input expects NAME=FILE.npy, got '" + spec + "'");
    a.inputFiles[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  return std::nullopt;
}

/// The config of --config (or the built-in one) with --matrix-engine applied.
Expected<NpuConfig> simConfig(const SimArgs& a) {
  NpuConfig config;
  if (!a.configPath.empty()) {
    auto loaded = loadConfig(a.configPath);
    if (!loaded) return loaded.error();
    config = *loaded;
  }
  if (a.engine == "rtl") config.matrixEngineModel = MatrixEngineModel::Rtl;  // overrides the config's key
  if (a.engine == "fast") config.matrixEngineModel = MatrixEngineModel::Fast;
  return config;
}

/// Writes what --output-dir, --stats and --trace ask for.
Error writeSimResults(const SimArgs& a, const Bundle& bundle, const DramImage& dram, const SimStats& stats) {
  if (!a.outputDir.empty()) EMBER_RETURN_IF_ERROR(writeOutputSymbols(bundle, dram, a.outputDir));
  if (!a.statsPath.empty())
    EMBER_RETURN_IF_ERROR(writeTextFile(a.statsPath, statsToJson(stats, bundle, a.perInstruction)));
  if (!a.tracePath.empty()) EMBER_RETURN_IF_ERROR(writeTextFile(a.tracePath, traceToJson(stats, bundle)));
  return Error::success();
}

}  // namespace

int simCommand(const std::vector<std::string>& args) {
  SimArgs a;
  if (auto status = parseSimArgs(args, a)) return *status;
  Expected<NpuConfig> config = simConfig(a);
  if (!config) return fail(config.error().message());
  auto bundle = loadNpuProgram(a.bundlePath);
  if (!bundle) return fail(bundle.error().message());
  if (a.check)
    if (Error e = checkProgram(*bundle, *config)) return fail(a.bundlePath + ": --check: " + e.message());
  if (bundle->dramBytes > uint64_t(config->dramBytes))  // checked before allocating the image
    return fail(a.bundlePath + ": the bundle uses " + std::to_string(bundle->dramBytes) +
                " bytes of DRAM but config '" + config->name + "' has " + std::to_string(config->dramBytes));
  DramImage dram = makeDram(*bundle);
  if (Error e = fillInputs(*bundle, a.inputFiles, a.randomInputs, uint64_t(a.seed), dram))
    return fail(e.message());

  SimOptions options;
  options.progressAfterSeconds = a.quiet ? -1 : 2.0;
  options.vcdPath = a.vcdPath;
  options.maxCycles = uint64_t(a.maxCycles);
  auto stats = simulate(*bundle, *config, dram, options);
  if (!stats)
    return fail(a.bundlePath + ": " +
                (a.maxCycles ? "--max-cycles " + std::to_string(a.maxCycles) + ": " : "") +
                stats.error().message());
  if (Error e = writeSimResults(a, *bundle, dram, *stats)) return fail(e.message());
  if (!a.quiet)
    std::cout << "cycles " << stats->cycles << "  macs " << stats->macs << "  mac_utilization "
              << stats->macUtilization << "  dram_bytes " << (stats->dramReadBytes + stats->dramWriteBytes)
              << "  energy_pj " << stats->energyPj << "  host_seconds " << stats->hostSeconds << "\n";
  return kExitSuccess;
}

}  // namespace ember::cli
