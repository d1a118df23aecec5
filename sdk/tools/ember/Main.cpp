// ember: the command-line tool (docs/cli.md). Dispatches to one subcommand;
// every failure is one line on stderr and a non-zero exit, never a crash.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "Commands.h"
#include "Options.h"
#include "ember/Plugin.h"

namespace ember::cli {
namespace {

#ifndef EMBER_VERSION_STRING
#define EMBER_VERSION_STRING "0.0.0"
#endif

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>&);  ///< null: not available yet
};

const Subcommand kSubcommands[] = {
    {"run", "compile a model and run it on inputs", runCommand},
    {"compile", "compile a model and report time and memory", compileCommand},
    {"dump", "print the model at a pipeline stage (graph, optimized, lowered, ir)", dumpCommand},
    {"backends", "list the available backends", backendsCommand},
    {"quantize", "calibrate a model and write a quantization profile", quantizeCommand},
    {"sim", "run an NPU bundle on the simulator", simCommand},
    {"asm", "assemble an NPU program into a bundle", asmCommand},
    {"disasm", "disassemble an NPU bundle", disasmCommand},
    {"conformance", "run the operator conformance kit on a backend", conformanceCommand},
    {"compare", "name the first node (or pass) where a backend disagrees with the reference", compareCommand},
    {"npy-diff", "compare two .npy arrays within a tolerance", npyDiffCommand},
    {"new-backend", "write the skeleton of an out-of-tree backend plugin", newBackendCommand},
    {"sweep", "run a hardware design-space sweep (local pool or Slurm array)", sweepCommand},
    {"report", "write the roofline and stall report of one simulation", reportCommand},
    {"multichip", "split a model over several NPUs (pipeline or data parallel) and time it", multichipCommand},
};

void printHelp(std::ostream& os) {
  os << "usage: ember <command> [options]\n"
        "       ember <command> --help\n"
        "       ember --version\n\n"
        "Ember compiles ONNX models for the reference, cpu and npu backends.\n\ncommands:\n";
  for (const Subcommand& c : kSubcommands)
    if (c.run) os << "  " << c.name << std::string(14 - std::string(c.name).size(), ' ') << c.summary << "\n";
  bool anyUpcoming = false;
  for (const Subcommand& c : kSubcommands) anyUpcoming |= !c.run;
  if (anyUpcoming) os << "\nupcoming (not available yet):\n";
  for (const Subcommand& c : kSubcommands)
    if (!c.run)
      os << "  " << c.name << std::string(14 - std::string(c.name).size(), ' ') << c.summary << "\n";
  os << "\n--no-cache (with any command): compile without the cpu backend's on-disk JIT cache.\n";
  os << "\nexit status: 0 success, 1 bad input or unsupported model, 2 bad command line.\n";
}

int dispatch(const std::vector<std::string>& words) {
  if (words.empty()) {
    std::cerr << "ember: missing command (see 'ember --help')\n";
    return kExitUsage;
  }
  const std::string& first = words[0];
  if (first == "--help" || first == "-h" || (first == "help" && words.size() == 1)) {
    printHelp(std::cout);
    return kExitSuccess;
  }
  if (first == "--version" || first == "version") {
    std::cout << "ember " << EMBER_VERSION_STRING << " (backend plugin ABI " << EMBER_PLUGIN_ABI_VERSION
              << ")\n";
    return kExitSuccess;
  }
  // "ember help run" is "ember run --help".
  bool helpFor = first == "help" && words.size() > 1;
  const std::string& name = helpFor ? words[1] : first;
  for (const Subcommand& c : kSubcommands) {
    if (name != c.name) continue;
    if (!c.run) {
      std::cerr << "ember: '" << c.name << "' is not available yet\n";
      return kExitUsage;
    }
    std::vector<std::string> rest(words.begin() + (helpFor ? 2 : 1), words.end());
    if (helpFor) rest = {"--help"};
    return c.run(rest);
  }
  std::cerr << "ember: unknown command '" << name << "' (see 'ember --help')\n";
  return kExitUsage;
}

}  // namespace
}  // namespace ember::cli

int main(int argc, char** argv) {
  using namespace ember::cli;
  std::vector<std::string> words(argv + 1, argv + argc);
  // --no-cache (any command, any position): the cpu backend's on-disk JIT
  // cache is neither read nor written (docs/backends/cpu.md).
  if (std::erase(words, std::string("--no-cache")) > 0) ::setenv("EMBER_NO_CACHE", "1", 1);
  // Errors are values everywhere below; this is the last line of defence.
  try {
    return dispatch(words);
  } catch (const std::bad_alloc&) {
    std::cerr << "ember: out of memory" << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "ember: internal error: " << e.what() << std::endl;
  } catch (...) {
    std::cerr << "ember: internal error: unknown exception" << std::endl;
  }
  return kExitFailure;
}
