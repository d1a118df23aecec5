// ember-npu-isa-doc: writes the field table of every NPU opcode as markdown,
// from the ISA tables (ember/npu/IsaTables.h), for docs/npu/isa.md. With
// --check FILE it instead fails (exit 1) unless FILE holds every table as
// generated, so the page cannot drift from the encoding.
//
//   ember-npu-isa-doc            print the tables
//   ember-npu-isa-doc --check docs/npu/isa.md
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>

#include "ember/npu/IsaTables.h"

namespace {

using namespace ember::npu::isa;

std::string_view kindName(FieldKind kind) {
  switch (kind) {
    case FieldKind::Unsigned:
      return "unsigned";
    case FieldKind::Address:
      return "address";
    case FieldKind::Signed:
      return "signed";
    case FieldKind::Memory:
      return "memory";
    case FieldKind::PoolMode:
      return "poolmode";
    case FieldKind::QueueId:
      return "queueid";
  }
  return "?";
}

/// The markdown table of one opcode's fields, as isa.md shows it.
std::string fieldTable(const OpcodeSpec& spec) {
  std::ostringstream os;
  os << "| field | bits | width | kind |\n| --- | --- | --- | --- |\n";
  for (const FieldLayout& f : spec.fields)
    os << "| `" << f.name << "` | " << int(f.lsb) << ".." << int(f.lsb) + int(f.width) - 1 << " | "
       << int(f.width) << " | " << kindName(f.kind) << " |\n";
  return os.str();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage = "usage: ember-npu-isa-doc [--check ISA.md]\n";
  if (argc == 1) {
    for (const OpcodeSpec& spec : kOpcodeSpecs)
      if (!spec.fields.empty()) std::cout << "**" << spec.mnemonic << "**\n\n" << fieldTable(spec) << "\n";
    return 0;
  }
  if (argc != 3 || std::string_view(argv[1]) != "--check") {
    std::cerr << usage;
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  if (!in) {
    std::cerr << "ember-npu-isa-doc: " << argv[2] << ": cannot open\n";
    return 1;
  }
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int stale = 0;
  for (const OpcodeSpec& spec : kOpcodeSpecs) {
    if (spec.fields.empty()) continue;
    // The table follows the opcode's paragraph, which starts with **mnemonic**.
    const size_t paragraph = page.find("**" + std::string(spec.mnemonic) + "**");
    if (paragraph == std::string::npos || page.find(fieldTable(spec), paragraph) == std::string::npos) {
      std::cerr << "ember-npu-isa-doc: " << argv[2] << ": the field table of '" << spec.mnemonic
                << "' differs from the ISA tables; expected:\n"
                << fieldTable(spec);
      ++stale;
    }
  }
  return stale ? 1 : 0;
}
