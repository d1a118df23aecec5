// ember disasm: prints a bundle as NPU assembly; `ember asm` of the output
// gives back identical bytes (docs/npu/isa.md).
#include <iostream>

#include "Commands.h"
#include "Options.h"
#include "Tool.h"
#include "ember/npu/Assembler.h"

namespace ember::cli {

int disasmCommand(const std::vector<std::string> &args) {
  std::string input, output;
  OptionParser parser("ember disasm", "BUNDLE [-o PROGRAM.s]",
                      "Prints a bundle as assembly; `ember asm` of the output "
                      "gives back identical bytes.");
  parser.addPositional("BUNDLE", &input, "the bundle");
  parser.addString("--output", "PROGRAM.s", &output,
                   "write the assembly here instead of stdout");
  parser.addAlias("-o", "--output");
  if (auto status = parser.parse(args))
    return *status;
  auto bundle = npu::readBundle(input);
  if (!bundle)
    return fail(bundle.error());
  auto text = npu::disassemble(*bundle);
  if (!text)
    return fail(text.error());
  if (output.empty()) {
    std::cout << *text;
    return kExitSuccess;
  }
  if (Error e = writeTextFile(output, *text))
    return fail(e);
  return kExitSuccess;
}

} // namespace ember::cli
