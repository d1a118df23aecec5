#include "ModelIO.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "Options.h"
#include "Tool.h"
#include "ember/Npy.h"
#include "ember/npu/Assembler.h"

namespace ember::cli {

void InputArgs::addTo(OptionParser& parser, const std::string& inputHelp) {
  parser.addList("--input", "NAME=FILE.npy", &inputs, inputHelp);
  parser.addFlag("--random-inputs", &randomInputs, "fill inputs without --input with random data");
  parser.addInt("--seed", "N", &seed, "seed of --random-inputs (default: 0)");
}

namespace {

std::string inputList(const Signature& signature) {
  std::string names;
  for (const auto& [name, type] : signature) names += (names.empty() ? "'" : ", '") + name + "'";
  return names;
}

/// SplitMix64: tiny, fast and identical on every platform.
uint64_t nextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Makes an .npy tensor fit the model's input type where that loses nothing:
/// .npy has no quantization parameters, so raw i8/u8 data takes the model's.
Expected<Tensor> adaptInput(Tensor tensor, const std::string& name, const Type& expected,
                            const std::string& file) {
  const Type& got = tensor.type();
  if (got.kind == expected.kind && isQuantized(expected.kind) && got.dims == expected.dims &&
      (got.scale != expected.scale || got.offset != expected.offset)) {
    Tensor retyped(expected);
    if (retyped.sizeInBytes() > 0) std::memcpy(retyped.data(), tensor.data(), retyped.sizeInBytes());
    return retyped;
  }
  // NumPy's default float64 feeds a narrower float input, rounded as numpy's astype.
  if (got.kind == ElemKind::F64 && got.dims == expected.dims)
    tensor = narrowFloat64(std::move(tensor), expected.kind);
  if (got.kind != expected.kind || got.dims != expected.dims)
    return makeError("input '", name, "' (", file, "): expected ", expected.str(), ", got ", got.str());
  return tensor;
}

}  // namespace

Tensor randomTensor(const Type& type, uint64_t& state) {
  Tensor t(type);
  int64_t n = type.numElements();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = nextRandom(state);
    double v = 0;
    switch (type.kind) {
      case ElemKind::F32:
      case ElemKind::F16:
      case ElemKind::BF16:
      case ElemKind::F64:
        v = double(r >> 40) * 0x1.0p-24 * 2.0 - 1.0;
        break;
      case ElemKind::I32:
      case ElemKind::I64:
        v = double(r % 10);
        break;
      case ElemKind::Int8Q:
        v = double(int64_t(r % 256) - 128);
        break;
      case ElemKind::UInt8Q:
        v = double(r % 256);
        break;
      case ElemKind::Int32Q:
        v = double(int64_t(r % 2001) - 1000);
        break;
      case ElemKind::Bool:
        v = double(r & 1);
        break;
    }
    t.setElementFromDouble(i, v);
  }
  return t;
}

Expected<std::map<std::string, Tensor>> readNamedInputs(const std::vector<std::string>& specs) {
  std::map<std::string, Tensor> values;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    Expected<Tensor> tensor = readNpy(file);
    if (!tensor) return tensor.error().withContext("input '" + name + "'");
    if (!values.emplace(name, tensor.take()).second) return makeError("input '", name, "' is given twice");
  }
  return values;
}

std::vector<std::string> boundInputNames(const std::map<std::string, Tensor>& given,
                                         const Function& function) {
  std::set<std::string> names;
  for (const auto& [name, value] : given) names.insert(name);
  for (const Node* input : function.inputs()) names.erase(input->name());
  return {names.begin(), names.end()};
}

void printBoundInputs(std::ostream& os, const std::vector<std::string>& names,
                      const std::map<std::string, Tensor>& values) {
  constexpr int64_t kShown = 8;
  for (const std::string& name : names) {
    const Tensor& value = values.at(name);
    const int64_t n = value.type().numElements();
    os << "bound:        " << name << " " << value.type().str() << " = [";
    for (int64_t i = 0; i < std::min(n, kShown); ++i) os << (i ? ", " : "") << value.elementAsDouble(i);
    os << (n > kShown ? ", ...]" : "]") << " (decides shapes: compiled for this value)\n";
  }
}

Error prepareInputs(const Signature& signature, const InputArgs& args, ExecutionContext& context) {
  auto findInput = [&signature](const std::string& name) -> const Type* {
    for (const auto& [n, type] : signature)
      if (n == name) return &type;
    return nullptr;
  };
  std::set<std::string> given;
  for (const std::string& spec : args.inputs) {
    std::string name, file;
    size_t eq = spec.find('=');
    if (eq != std::string::npos && findInput(spec.substr(0, eq))) {
      name = spec.substr(0, eq);
      file = spec.substr(eq + 1);
    } else if (signature.size() == 1 && (eq == std::string::npos || std::filesystem::exists(spec))) {
      name = signature.front().first;  // FILE.npy alone: the model's only input
      file = spec;
    } else if (eq != std::string::npos) {
      return makeError("--input ", spec, ": the model has no input '", spec.substr(0, eq),
                       "' (inputs: ", inputList(signature), ")");
    } else {
      return makeError("--input ", spec, ": the model has ", signature.size(),
                       " inputs; use NAME=FILE.npy (inputs: ", inputList(signature), ")");
    }
    if (!given.insert(name).second) return makeError("input '", name, "' is given twice");
    Expected<Tensor> tensor = readNpy(file);
    if (!tensor) return tensor.error().withContext("input '" + name + "'");
    Expected<Tensor> adapted = adaptInput(tensor.take(), name, *findInput(name), file);
    if (!adapted) return adapted.error();
    context.setInput(name, adapted.take());
  }

  std::string missing;
  uint64_t state = uint64_t(args.seed);
  for (const auto& [name, type] : signature) {
    if (given.count(name)) continue;
    if (args.randomInputs)
      context.setInput(name, randomTensor(type, state));
    else
      missing += (missing.empty() ? "'" : ", '") + name + "' " + type.str();
  }
  if (!missing.empty())
    return makeError("missing model input(s) ", missing, "; give --input NAME=FILE.npy or --random-inputs");
  return Error::success();
}

Expected<std::vector<std::string>> writeOutputs(const std::string& dir, const Signature& outputs,
                                                const ExecutionContext& context) {
  if (dir.empty()) return std::vector<std::string>{};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    return makeError(dir, ": cannot create output directory", ec ? ": " + ec.message() : "");
  std::vector<std::string> paths;
  std::set<std::string> used;
  for (const auto& [name, type] : outputs) {
    const Tensor* tensor = context.output(name);
    if (!tensor) return makeError("the backend produced no output '", name, "'");
    std::string base = sanitizeFileName(name);
    // Two names can sanitise alike ("a/b", "a:b"): keep both files.
    std::string file = base;
    for (int n = 2; !used.insert(file).second; ++n) file = base + "_" + std::to_string(n);
    std::string path = (std::filesystem::path(dir) / (file + ".npy")).string();
    EMBER_RETURN_IF_ERROR(writeNpy(path, *tensor).withContext("output '" + name + "'"));
    paths.push_back(path);
  }
  return paths;
}

Error printOutputs(std::ostream& os, const Signature& outputs, const ExecutionContext& context,
                   const std::vector<std::string>& written) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = outputs[i].first;
    const Tensor* tensor = context.output(name);
    if (!tensor) return makeError("the backend produced no output '", name, "'");
    os << "output ";
    printTensorSummary(os, name, *tensor);
    if (i < written.size()) os << "  written to " << written[i] << "\n";
  }
  return Error::success();
}

void printTensorSummary(std::ostream& os, const std::string& name, const Tensor& tensor) {
  constexpr int64_t kShown = 6;
  int64_t n = tensor.type().numElements();
  auto format = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return std::string(buf);
  };
  os << name << " " << tensor.type().str() << ": [";
  for (int64_t i = 0; i < std::min(n, kShown); ++i)
    os << (i ? ", " : "") << format(tensor.elementAsDouble(i));
  if (n > kShown) os << ", ...";
  os << "]";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = tensor.elementAsDouble(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  if (n > nans)
    os << "  min " << format(lo) << "  max " << format(hi) << "  mean " << format(sum / double(n - nans));
  if (nans) os << "  (" << nans << " NaN)";
  os << "\n";
}

bool symbolAcceptsKind(npu::SymbolType type, ElemKind kind) {
  switch (type) {
    case npu::SymbolType::I8:
      return kind == ElemKind::Int8Q;
    case npu::SymbolType::U8:
      return kind == ElemKind::UInt8Q;
    case npu::SymbolType::I32:
      return kind == ElemKind::I32 || kind == ElemKind::Int32Q;
  }
  return false;
}

Expected<npu::Bundle> loadNpuProgram(const std::string& path) {
  if (path.size() > 2 && path.substr(path.size() - 2) == ".s") return npu::assembleFile(path);
  return npu::readBundle(path);
}

Tensor outputSymbolTensor(const npu::Symbol& symbol, const npu::DramImage& dram) {
  using npu::SymbolType;
  const ElemKind kind = symbol.type == SymbolType::I8   ? ElemKind::Int8Q
                        : symbol.type == SymbolType::U8 ? ElemKind::UInt8Q
                                                        : ElemKind::I32;
  Type type(kind, Dims(symbol.shape.begin(), symbol.shape.end()));
  if (kind != ElemKind::I32) {
    type.scale = symbol.scale;
    type.offset = symbol.zeroPoint;
  }
  Tensor tensor(type);
  std::memcpy(tensor.data(), dram.bytes.data() + symbol.dramOffset, symbol.sizeInBytes());
  return tensor;
}

}  // namespace ember::cli
