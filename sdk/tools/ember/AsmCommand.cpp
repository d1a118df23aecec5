// ember asm: assembles NPU assembly (docs/npu/isa.md) into a bundle.
#include "Commands.h"
#include "Options.h"
#include "Tool.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/Config.h"

namespace ember::cli {

int asmCommand(const std::vector<std::string> &args) {
  std::string input, output, configPath;
  OptionParser parser(
      "ember asm", "PROGRAM.s -o BUNDLE [--config NPU.yaml]",
      "Assembles NPU assembly (docs/npu/isa.md) into a bundle.");
  parser.addPositional("PROGRAM.s", &input, "the assembly");
  parser.addString("--output", "BUNDLE", &output,
                   "the bundle to write (required)");
  parser.addAlias("-o", "--output");
  parser.addString("--config", "NPU.yaml", &configPath,
                   "stamp the bundle with this config's hash");
  if (auto status = parser.parse(args))
    return *status;
  if (output.empty())
    return parser.usageError("missing -o BUNDLE");
  auto bundle = npu::assembleFile(input);
  if (!bundle)
    return fail(bundle.error());
  if (!configPath.empty()) {
    auto config = npu::loadConfig(configPath);
    if (!config)
      return fail(config.error());
    bundle->configHash = config->hash();
  }
  if (Error e = npu::writeBundle(output, *bundle))
    return fail(e);
  return kExitSuccess;
}

} // namespace ember::cli
