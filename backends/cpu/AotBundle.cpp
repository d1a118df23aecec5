// The AOT bundle's header text and the two files (docs/backends/cpu.md, "AOT").
#include "AotBundle.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ember::cpu {

uint64_t aotScratchBytes(const AotModule& module) {
  return 64 + (module.ioBytes + 63) / 64 * 64 + module.activationBytes;
}

std::string aotSymbolFromPath(const std::string& objectPath) {
  std::string stem = std::filesystem::path(objectPath).stem().string();
  std::string symbol;
  for (char c : stem) symbol += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (symbol.empty() || std::isdigit(static_cast<unsigned char>(symbol[0]))) symbol = "model_" + symbol;
  return symbol;
}

namespace {

std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

/// A C string literal for a tensor name.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

void writePorts(std::ostringstream& os, const std::string& prefix, const char* what,
                const std::vector<AotPort>& ports) {
  os << "#define " << prefix << "_NUM_" << what << "S " << ports.size() << "\n";
  // The same as arrays, for a program that loops over the ports.
  os << "#define " << prefix << "_" << what << "_NAMES {";
  for (size_t i = 0; i < ports.size(); ++i) os << (i ? ", " : "") << quoted(ports[i].name);
  os << "}\n#define " << prefix << "_" << what << "_BYTES_LIST {";
  for (size_t i = 0; i < ports.size(); ++i) os << (i ? ", " : "") << ports[i].type.sizeInBytes() << "u";
  os << "}\n";
  for (size_t i = 0; i < ports.size(); ++i) {
    const AotPort& p = ports[i];
    const std::string m = prefix + "_" + what + "_" + std::to_string(i);
    os << "/* " << what << " " << i << ": " << p.name << " " << p.type.str() << " */\n";
    os << "#define " << m << "_NAME " << quoted(p.name) << "\n";
    os << "#define " << m << "_TYPE \"" << elemKindName(p.type.kind) << "\"\n";
    os << "#define " << m << "_BYTES " << p.type.sizeInBytes() << "u\n";
    os << "#define " << m << "_ELEMENTS " << p.type.numElements() << "u\n";
    os << "#define " << m << "_RANK " << p.type.rank() << "\n";
    os << "#define " << m << "_SHAPE {";
    for (size_t d = 0; d < p.type.dims.size(); ++d) os << (d ? ", " : "") << p.type.dims[d];
    os << (p.type.dims.empty() ? "1" : "") << "}\n";
    if (isQuantized(p.type.kind)) {
      os << "#define " << m << "_SCALE " << p.type.scale << "f\n";
      os << "#define " << m << "_ZERO_POINT " << p.type.offset << "\n";
    }
  }
}

}  // namespace

std::string aotHeaderText(const AotModule& module) {
  const std::string prefix = upper(module.symbol);
  std::ostringstream os;
  os << "/* " << module.symbol
     << ": an Ember cpu AOT bundle (ember compile --backend cpu -o OBJ --header H).\n"
     << "   Link the object with the AOT runtime library (CMake: Ember::ember_cpu_runtime).\n"
     << "   The object's code targets the CPU it was compiled on. */\n"
     << "#ifndef EMBER_AOT_" << prefix << "_H\n#define EMBER_AOT_" << prefix << "_H\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
     << "/* Bytes of the scratch buffer " << module.symbol << "_run needs (any alignment). */\n"
     << "#define " << prefix << "_SCRATCH_BYTES " << aotScratchBytes(module) << "u\n";
  writePorts(os, prefix, "INPUT", module.inputs);
  writePorts(os, prefix, "OUTPUT", module.outputs);
  os << "\n/* Runs the model. inputs[i] points to input i (row-major, the shape above),\n"
     << "   outputs[i] to room for output i, scratch to " << prefix << "_SCRATCH_BYTES bytes.\n"
     << "   Returns 0, or non-zero with ember_aot_last_error() saying why. One run at a\n"
     << "   time per process (runs are serialised); EMBER_THREADS=N sets the worker threads. */\n"
     << "int " << module.symbol << "_run(const void* const inputs[], void* const outputs[], void* scratch);\n"
     << "const char* ember_aot_last_error(void);\n\n"
     << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return os.str();
}

Error writeAotBundle(const AotModule& module, const std::string& objectPath, const std::string& headerPath) {
  EMBER_RETURN_IF_ERROR(writeAotObject(module, objectPath));
  std::ofstream header(headerPath, std::ios::binary);
  if (!header) return makeError(headerPath, ": cannot write the AOT header");
  header << aotHeaderText(module);
  header.close();
  if (!header) return makeError(headerPath, ": write failed");
  return Error::success();
}

}  // namespace ember::cpu
