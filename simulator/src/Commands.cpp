// `ember sim`, `ember asm` and `ember disasm` (docs/cli.md's contract).
#include "ember/npu/Commands.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>

#include "ember/Npy.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/ProgramCheck.h"
#include "ember/npu/Simulator.h"

namespace ember::npu {
namespace {

constexpr const char* kSimUsage =
    "usage: ember sim BUNDLE --config NPU.yaml [--matrix-engine fast|rtl] [--input NAME=FILE.npy]...\n"
    "                 [--random-inputs] [--seed N] [--output-dir DIR] [--stats FILE.json]\n"
    "                 [--per-instruction] [--trace FILE.json] [--vcd FILE] [--check] [--quiet]\n"
    "Runs an NPU bundle (or an assembly file ending in .s) on the cycle-approximate simulator.\n"
    "  --config FILE        NPU configuration (default: the built-in npu-16x16 parameters)\n"
    "  --input NAME=FILE    .npy data for input symbol NAME (dtype and shape must match)\n"
    "  --random-inputs      fill inputs without --input with random values (seeded by --seed, default 0)\n"
    "  --output-dir DIR     write each output symbol as DIR/<name>.npy\n"
    "  --stats FILE         write statistics as JSON (--per-instruction adds one record per instruction)\n"
    "  --trace FILE         write a Chrome trace-event timeline (open it in Perfetto)\n"
    "  --check              first run the static program checks (token deadlock and balance, SRAM races\n"
    "                       and bounds; docs/npu/architecture.md) and refuse a program that fails them\n"
    "  --quiet              no summary on stdout and no progress on stderr\n";

constexpr const char* kAsmUsage =
    "usage: ember asm PROGRAM.s -o BUNDLE [--config NPU.yaml]\n"
    "Assembles NPU assembly (docs/npu/isa.md) into a bundle. --config stamps the config hash.\n";

constexpr const char* kDisasmUsage =
    "usage: ember disasm BUNDLE [-o PROGRAM.s]\n"
    "Prints a bundle as assembly; `ember asm` of the output gives back identical bytes.\n";

int fail(const char* command, const std::string& message) {
  std::cerr << "ember " << command << ": " << message << std::endl;
  return 1;
}

int usage(const char* command, const std::string& message, const char* text) {
  std::cerr << "ember " << command << ": " << message << "\n" << text;
  return 2;
}

Error writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return makeError(path, ": cannot open for writing");
  out << text;
  if (!out) return makeError(path, ": write failed");
  return Error::success();
}

std::string sanitize(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return out;
}

bool kindMatches(SymbolType t, ElemKind k) {
  switch (t) {
    case SymbolType::I8:
      return k == ElemKind::Int8Q;
    case SymbolType::U8:
      return k == ElemKind::UInt8Q;
    case SymbolType::I32:
      return k == ElemKind::I32 || k == ElemKind::Int32Q;
  }
  return false;
}

/// The static checks of `ember sim --check`, on the decoded program.
Error checkProgram(const Bundle& bundle, const NpuConfig& config) {
  std::vector<isa::Instruction> program;
  program.reserve(bundle.program.size());
  for (size_t i = 0; i < bundle.program.size(); ++i) {
    auto instr = isa::decode(bundle.program[i]);
    if (!instr) return makeError("instruction ", i, ": ", instr.error().message());
    program.push_back(*instr);
  }
  EMBER_RETURN_IF_ERROR(checkTokens(program, config));
  return checkSramRaces(program, config);
}

Expected<Bundle> loadProgram(const std::string& path) {
  if (path.size() > 2 && path.substr(path.size() - 2) == ".s") return assembleFile(path);
  return readBundle(path);
}

}  // namespace

int runAsmCommand(const std::vector<std::string>& args) {
  std::string input, output, configPath;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::cout << kAsmUsage;
      return 0;
    }
    if ((a == "-o" || a == "--config") && i + 1 < args.size())
      (a == "-o" ? output : configPath) = args[++i];
    else if (!a.empty() && a[0] == '-')
      return usage("asm", "unknown option '" + a + "'", kAsmUsage);
    else if (input.empty())
      input = a;
    else
      return usage("asm", "unexpected argument '" + a + "'", kAsmUsage);
  }
  if (input.empty() || output.empty()) return usage("asm", "PROGRAM.s and -o BUNDLE are required", kAsmUsage);
  auto bundle = assembleFile(input);
  if (!bundle) return fail("asm", bundle.error().message());
  if (!configPath.empty()) {
    auto config = loadConfig(configPath);
    if (!config) return fail("asm", config.error().message());
    bundle->configHash = config->hash();
  }
  if (Error e = writeBundle(output, *bundle)) return fail("asm", e.message());
  return 0;
}

int runDisasmCommand(const std::vector<std::string>& args) {
  std::string input, output;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::cout << kDisasmUsage;
      return 0;
    }
    if (a == "-o" && i + 1 < args.size())
      output = args[++i];
    else if (!a.empty() && a[0] == '-')
      return usage("disasm", "unknown option '" + a + "'", kDisasmUsage);
    else if (input.empty())
      input = a;
    else
      return usage("disasm", "unexpected argument '" + a + "'", kDisasmUsage);
  }
  if (input.empty()) return usage("disasm", "BUNDLE is required", kDisasmUsage);
  auto bundle = readBundle(input);
  if (!bundle) return fail("disasm", bundle.error().message());
  auto text = disassemble(*bundle);
  if (!text) return fail("disasm", text.error().message());
  if (output.empty()) {
    std::cout << *text;
    return 0;
  }
  if (Error e = writeFile(output, *text)) return fail("disasm", e.message());
  return 0;
}

int runSimCommand(const std::vector<std::string>& args) {
  std::string bundlePath, configPath, outputDir, statsPath, tracePath, vcdPath, engine;
  std::map<std::string, std::string> inputFiles;
  bool randomInputs = false, perInstruction = false, quiet = false, check = false;
  uint64_t seed = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& target) -> bool {
      if (i + 1 >= args.size()) return false;
      target = args[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      std::cout << kSimUsage;
      return 0;
    }
    if (a == "--random-inputs")
      randomInputs = true;
    else if (a == "--per-instruction")
      perInstruction = true;
    else if (a == "--quiet")
      quiet = true;
    else if (a == "--check")
      check = true;
    else if (a == "--config" || a == "--output-dir" || a == "--stats" || a == "--trace" ||
             a == "--matrix-engine" || a == "--seed" || a == "--input" || a == "--vcd") {
      std::string v;
      if (!value(v)) return usage("sim", a + " needs a value", kSimUsage);
      if (a == "--config")
        configPath = v;
      else if (a == "--output-dir")
        outputDir = v;
      else if (a == "--stats")
        statsPath = v;
      else if (a == "--trace")
        tracePath = v;
      else if (a == "--matrix-engine")
        engine = v;
      else if (a == "--vcd")
        vcdPath = v;
      else if (a == "--seed") {
        try {
          size_t used = 0;
          seed = std::stoull(v, &used);
          if (used != v.size()) throw std::invalid_argument(v);
        } catch (...) {
          return usage("sim", "--seed expects a non-negative integer, got '" + v + "'", kSimUsage);
        }
      } else {
        const auto eq = v.find('=');
        if (eq == std::string::npos || eq == 0)
          return usage("sim", "--input expects NAME=FILE.npy", kSimUsage);
        inputFiles[v.substr(0, eq)] = v.substr(eq + 1);
      }
    } else if (!a.empty() && a[0] == '-')
      return usage("sim", "unknown option '" + a + "'", kSimUsage);
    else if (bundlePath.empty())
      bundlePath = a;
    else
      return usage("sim", "unexpected argument '" + a + "'", kSimUsage);
  }
  if (bundlePath.empty()) return usage("sim", "BUNDLE is required", kSimUsage);
  if (!engine.empty() && engine != "fast" && engine != "rtl")
    return usage("sim", "--matrix-engine expects fast or rtl", kSimUsage);

  NpuConfig config;
  if (!configPath.empty()) {
    auto loaded = loadConfig(configPath);
    if (!loaded) return fail("sim", loaded.error().message());
    config = *loaded;
  }
  if (engine == "rtl") config.matrixEngineModel = MatrixEngineModel::Rtl;  // overrides the config's key
  if (engine == "fast") config.matrixEngineModel = MatrixEngineModel::Fast;
  auto bundle = loadProgram(bundlePath);
  if (!bundle) return fail("sim", bundle.error().message());
  if (check)
    if (Error e = checkProgram(*bundle, config)) return fail("sim", bundlePath + ": --check: " + e.message());
  if (bundle->dramBytes > uint64_t(config.dramBytes))  // checked before allocating the image
    return fail("sim", bundlePath + ": the bundle uses " + std::to_string(bundle->dramBytes) +
                           " bytes of DRAM but config '" + config.name + "' has " +
                           std::to_string(config.dramBytes));
  DramImage dram = makeDram(*bundle);

  // Inputs.
  std::vector<std::string> missing;
  std::mt19937_64 rng(seed);
  for (const auto& name : inputFiles) {
    bool known = false;
    for (const auto& s : bundle->symbols)
      known |= s.name == name.first && s.direction == Symbol::Direction::Input;
    if (!known)
      return fail("sim", "--input " + name.first + ": the bundle has no input symbol '" + name.first + "'");
  }
  for (const auto& s : bundle->symbols) {
    if (s.direction != Symbol::Direction::Input) continue;
    uint8_t* dst = dram.bytes.data() + s.dramOffset;
    auto it = inputFiles.find(s.name);
    if (it != inputFiles.end()) {
      auto tensor = readNpy(it->second);
      if (!tensor) return fail("sim", tensor.error().message());
      const Type& t = tensor->type();
      if (!kindMatches(s.type, t.kind))
        return fail("sim", it->second + ": input '" + s.name + "' expects " +
                               std::string(symbolTypeName(s.type)) + " data but the file holds " +
                               std::string(elemKindName(t.kind)));
      if (t.dims != Dims(s.shape.begin(), s.shape.end()))
        return fail("sim", it->second + ": input '" + s.name + "' expects shape " +
                               dimsStr(Dims(s.shape.begin(), s.shape.end())) + " but the file has " +
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
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return fail("sim", "missing inputs (give --input NAME=FILE.npy or --random-inputs): " + list);
  }

  SimOptions options;
  options.progressAfterSeconds = quiet ? -1 : 2.0;
  options.vcdPath = vcdPath;
  auto stats = simulate(*bundle, config, dram, options);
  if (!stats) return fail("sim", bundlePath + ": " + stats.error().message());

  if (!outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(outputDir, ec);
    for (const auto& s : bundle->symbols) {
      if (s.direction != Symbol::Direction::Output) continue;
      const ElemKind kind = s.type == SymbolType::I8   ? ElemKind::Int8Q
                            : s.type == SymbolType::U8 ? ElemKind::UInt8Q
                                                       : ElemKind::I32;
      Type type(kind, Dims(s.shape.begin(), s.shape.end()));
      if (kind != ElemKind::I32) {
        type.scale = s.scale;
        type.offset = s.zeroPoint;
      }
      Tensor tensor(type);
      std::memcpy(tensor.data(), dram.bytes.data() + s.dramOffset, s.sizeInBytes());
      const std::string path = (std::filesystem::path(outputDir) / (sanitize(s.name) + ".npy")).string();
      if (Error e = writeNpy(path, tensor)) return fail("sim", e.message());
    }
  }
  if (!statsPath.empty())
    if (Error e = writeFile(statsPath, statsToJson(*stats, *bundle, perInstruction)))
      return fail("sim", e.message());
  if (!tracePath.empty())
    if (Error e = writeFile(tracePath, traceToJson(*stats, *bundle))) return fail("sim", e.message());
  if (!quiet)
    std::cout << "cycles " << stats->cycles << "  macs " << stats->macs << "  mac_utilization "
              << stats->macUtilization << "  dram_bytes " << (stats->dramReadBytes + stats->dramWriteBytes)
              << "  energy_pj " << stats->energyPj << "  host_seconds " << stats->hostSeconds << "\n";
  return 0;
}

}  // namespace ember::npu
