#include "Tool.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "backends/BuiltinBackends.h"
#include "ember/FileIO.h"

namespace ember::cli {

int fail(const Error& error) { return fail(error.message()); }

int fail(const std::string& message) {
  // One line: newlines inside a message (e.g. from a nested tool) become "; ".
  std::string line;
  for (char c : message) {
    if (c == '\n')
      line += "; ";
    else
      line += c;
  }
  std::cerr << "ember: " << line << std::endl;
  return kExitFailure;
}

void PipelineArgs::addTo(OptionParser& parser, bool modelRequired) {
  parser.addPositional("MODEL.onnx", &model, "the ONNX model", modelRequired);
  parser.addString("--backend", "NAME", &backend,
                   "backend to compile for (default: reference; see 'ember backends')");
  parser.addList("--backend-path", "DIR", &backendPaths,
                 "load backend plugins (lib*.so) from DIR; colon-separated list allowed");
  parser.addList("--dim", "NAME=VALUE", &dims, "size of the symbolic input dimension NAME");
  parser.addString("--config", "NPU.yaml", &config,
                   "NPU hardware config (npu backend; same as --backend-option config=NPU.yaml)");
  parser.addList("--backend-option", "KEY=VALUE", &backendOptions, "set an option of the backend");
  parser.addString("--fallback", "B1,B2|none", &fallback,
                   "backends that run the nodes --backend does not support, tried in order (default:\n"
                   "reference for every backend but reference; 'none' makes such a node an error)");
  parser.addString("--quantize", "PROFILE.yaml", &quantize,
                   "convert to int8 with a calibration profile from 'ember quantize'");
  parser.addString("--quantize-for", "BACKEND", &quantizeFor,
                   "quantize the nodes BACKEND supports rather than --backend's (e.g. run the npu's int8\n"
                   "graph on the reference backend to compare bit for bit)");
  parser.addString("--memory-limit", "BYTES", &memoryLimit,
                   "refuse a model needing more memory than BYTES (suffixes K, M, G: powers of 1024)");
  parser.addFlag("--no-graph-opt", &noGraphOpt, "skip the graph optimizer (lowering still runs)");
  parser.addFlag("--no-ir-opt", &noIROpt, "skip the instruction-IR optimizer");
  parser.addFlag("--verify-each-pass", &verifyEachPass, "run the verifier after every pass");
  parser.addList("--disable-pass", "NAME", &disabledPasses,
                 "skip the optional pass NAME ('ember dump --list-passes' lists them)");
  parser.addInt("--pass-limit", "N", &passLimit,
                "run only the first N optional pass executions, in pipeline order (opt-bisect)", 0);
}

std::optional<int> PipelineArgs::validate(const OptionParser& parser) {
  for (const std::string& spec : dims) {
    size_t eq = spec.find('=');
    std::string name = spec.substr(0, eq == std::string::npos ? 0 : eq);
    std::string value = eq == std::string::npos ? "" : spec.substr(eq + 1);
    char* end = nullptr;
    errno = 0;
    long long parsed = value.empty() ? -1 : std::strtoll(value.c_str(), &end, 10);
    if (name.empty() || value.empty() || *end != '\0' || errno == ERANGE || parsed < 0)
      return parser.usageError("--dim expects NAME=VALUE with VALUE >= 0, got '" + spec + "'");
    importOptions.dimValues[name] = parsed;
  }
  if (!quantize.empty()) {
    Expected<QuantizationProfile> loaded = QuantizationProfile::load(quantize);
    if (!loaded) return fail(loaded.error());
    profile = std::make_shared<const QuantizationProfile>(loaded.take());
    quantizationReport = std::make_shared<QuantizationReport>();
  }
  // --disable-pass names must be optional passes: a typo is a command-line error.
  if (Error e = checkDisabledPassNames(disabledPasses, optionalPassNames()).withContext("--disable-pass"))
    return parser.usageError(e.message());
  for (const std::string& option : backendOptions)
    if (option.find('=') == std::string::npos || option.front() == '=')
      return parser.usageError("--backend-option expects KEY=VALUE, got '" + option + "'");
  if (!memoryLimit.empty()) {
    char* end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(memoryLimit.c_str(), &end, 10);
    int shift = 0;
    if (end && *end) {
      std::string suffix(end);
      shift = suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : -1;
    }
    if (end == memoryLimit.c_str() || errno == ERANGE || shift < 0 || value == 0 || value > (~0ull >> shift))
      return parser.usageError(
          "--memory-limit expects a positive byte count with an optional K, M or G suffix, got '" +
          memoryLimit + "'");
    memoryLimitBytes = uint64_t(value) << shift;
    // The same limit bounds what the importer may allocate (one tensor, all constants).
    const int64_t importLimit = int64_t(std::min<uint64_t>(memoryLimitBytes, uint64_t(INT64_MAX)));
    importOptions.maxTensorBytes = std::min(importOptions.maxTensorBytes, importLimit);
    importOptions.maxConstantBytes = std::min(importOptions.maxConstantBytes, importLimit);
  }
  return std::nullopt;
}

Error PipelineArgs::nameMemoryLimit(Error error) const {
  if (!error || !memoryLimitBytes) return error;
  const std::string limit = "limit of " + std::to_string(memoryLimitBytes) + " bytes";
  if (error.message().find(limit) == std::string::npos) return error;
  return error.withContext("--memory-limit " + memoryLimit);
}

namespace {
/// The non-empty items of a `separator`-separated list ("a:b", "cpu,reference").
std::vector<std::string> splitList(const std::string& list, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = std::min(list.find(separator, start), list.size());
    if (end > start) parts.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}
}  // namespace

CompileOptions PipelineArgs::compileOptions() const {
  CompileOptions options;
  options.optimizeGraph = !noGraphOpt;
  options.optimizeIR = !noIROpt;
  options.verifyEachPass = verifyEachPass;
  options.memoryLimitBytes = memoryLimitBytes;
  options.disabledPasses.insert(disabledPasses.begin(), disabledPasses.end());
  options.passLimit = passLimit;
  if (profile) {
  }
  if (fallback.empty()) {
    if (backend != "reference") options.fallbackBackends = {"reference"};
  } else if (fallback != "none") {
    options.fallbackBackends = splitList(fallback, ',');
  }
  if (profile) {
    // --quantize-for B quantizes as a compile for B would: what B and the
    // fallbacks run together (B alone runs no Quantize/Dequantize).
    const std::vector<std::string> quantizeFallbacks = quantizeFor.empty() || quantizeFor == "reference"
                                                           ? std::vector<std::string>{}
                                                           : std::vector<std::string>{"reference"};
    options.beforeLowering = [profile = profile, report = quantizationReport, path = quantize,
                              quantizeFor = quantizeFor,
                              quantizeFallbacks](Function& function, const Backend& backend) -> Error {
      if (quantizeFor.empty())
        return quantizeFunction(function, *profile, backend, report.get()).withContext(path);
      auto target = BackendRegistry::global().create(quantizeFor);
      if (!target) return target.error().withContext("--quantize-for");
      auto chain = supportUnion(**target, quantizeFallbacks);
      if (!chain) return chain.error().withContext("--quantize-for");
      return quantizeFunction(function, *profile, **chain, report.get()).withContext(path);
    };
  }
  return options;
}

Expected<std::unique_ptr<Backend>> PipelineArgs::createBackend() const {
  Expected<std::unique_ptr<Backend>> created = BackendRegistry::global().create(backend);
  if (!created) return created.error();
  if (!config.empty()) EMBER_RETURN_IF_ERROR((*created)->setOption("config", config).withContext("--config"));
  for (const std::string& option : backendOptions) {
    size_t eq = option.find('=');
    EMBER_RETURN_IF_ERROR(
        (*created)->setOption(option.substr(0, eq), option.substr(eq + 1)).withContext("--backend-option"));
  }
  return created;
}

Error loadBackends(const std::vector<std::string>& paths) {
  registerBuiltinBackends();
  if (const char* env = std::getenv("EMBER_BACKEND_PATH")) {
    // A stale entry in the environment is not worth failing every command.
    std::error_code ec;
    for (const std::string& dir : splitList(env, ':')) {
      if (!std::filesystem::is_directory(dir, ec)) continue;
      EMBER_RETURN_IF_ERROR(BackendRegistry::global().loadDirectory(dir).withContext("EMBER_BACKEND_PATH"));
    }
  }
  for (const std::string& list : paths)
    for (const std::string& dir : splitList(list, ':'))
      EMBER_RETURN_IF_ERROR(BackendRegistry::global().loadDirectory(dir).withContext("--backend-path"));
  return Error::success();
}

Expected<LoadedModel> importModel(const PipelineArgs& args) {
  LoadedModel loaded;
  loaded.module = std::make_unique<Module>();
  Expected<Function*> function = importOnnxFile(args.model, *loaded.module, args.importOptions);
  if (!function) return function.error();
  loaded.function = *function;
  return loaded;
}

std::string sanitizeFileName(std::string_view name) {
  std::string out;
  for (char c : name) {
    bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                c == '_' || c == '-';
    out += keep ? c : '_';
  }
  return out.empty() ? "_" : out;
}

std::string formatBytes(uint64_t bytes) {
  char buf[64];
  if (bytes < 1024)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else if (bytes < (uint64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.1f KiB", double(bytes) / 1024);
  else if (bytes < (uint64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / (1 << 30));
  return buf;
}

std::string formatSeconds(double seconds) {
  char buf[64];
  if (seconds < 1e-3)
    std::snprintf(buf, sizeof buf, "%.1f us", seconds * 1e6);
  else if (seconds < 1)
    std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  return buf;
}

void printReport(std::ostream& os, const std::string& backend, const CompileReport& report,
                 std::optional<double> runSecondsMedian, int64_t repeat, const DeviceReport* device) {
  const MemoryPlan& m = report.memory;
  os << "backend:      " << backend << "\n";
  os << "compile:      " << formatSeconds(report.compileSeconds) << " (" << report.numInstructions
     << " instructions)\n";
  if (runSecondsMedian)
    os << "run:          " << formatSeconds(*runSecondsMedian) << " median of " << repeat << " run"
       << (repeat == 1 ? "" : "s") << (repeat > 1 ? " after 1 warm-up" : "") << "\n";
  os << "memory:       constants " << formatBytes(m.constantBytes) << ", io " << formatBytes(m.ioBytes)
     << ", activations " << formatBytes(m.activationBytes) << " (lower bound "
     << formatBytes(m.activationLowerBoundBytes) << ")\n";
  if (report.partitions.size() > 1) {
    os << "partitions:  ";
    for (const std::string& p : report.partitions) os << " [" << p << "]";
    os << "\n";
    os << "fallback:     " << report.fallbackNodes.size() << " node"
       << (report.fallbackNodes.size() == 1 ? "" : "s");
    std::map<std::string, int> byOp;
    for (const FallbackNode& f : report.fallbackNodes) ++byOp[f.op + " -> " + f.backend];
    for (const auto& [what, count] : byOp) os << "; " << count << " x " << what;
    os << "\n";
    // Why, node by node (the backend's sizes included); --report-json has them all.
    constexpr size_t kReasonsShown = 8;
    for (size_t i = 0; i < report.fallbackNodes.size() && i < kReasonsShown; ++i)
      os << "  " << report.fallbackNodes[i].name << ": " << report.fallbackNodes[i].reason << "\n";
    if (report.fallbackNodes.size() > kReasonsShown)
      os << "  ... " << report.fallbackNodes.size() - kReasonsShown
         << " more (--report-json fallback_nodes)\n";
  }
  if (device) printDeviceReport(os, *device);
}

namespace {

/// The compile report's keys: backend, time, memory, fallback, partitions, instructions, vendor ops.
void writeCompileKeys(JsonWriter& json, const std::string& backend, const CompileReport& report) {
  const MemoryPlan& m = report.memory;
  json.key("backend").value(backend);
  json.key("compile_seconds").value(report.compileSeconds);
  json.key("memory").beginObject();
  json.key("constant_bytes").value(m.constantBytes);
  json.key("io_bytes").value(m.ioBytes);
  json.key("activation_bytes").value(m.activationBytes);
  json.key("activation_lower_bound_bytes").value(m.activationLowerBoundBytes);
  json.endObject();
  json.key("fallback_nodes").beginArray();
  for (const FallbackNode& f : report.fallbackNodes) {
    json.beginObject();
    json.key("name").value(f.name).key("op").value(f.op).key("backend").value(f.backend).key("reason").value(
        f.reason);
    json.endObject();
  }
  json.endArray();
  json.key("partitions").beginArray();
  for (const std::string& p : report.partitions) json.value(p);
  json.endArray();
  json.key("instructions").value(uint64_t(report.numInstructions));
  json.key("vendor_ops").beginObject();
  for (const auto& [op, count] : report.vendorOps) json.key(op).value(count);
  json.endObject();
}

/// "bound_inputs" (with their values, when few) and the importer's "warnings".
void writeImportNotes(JsonWriter& json, const ImportNotes& notes) {
  json.key("bound_inputs").beginArray();
  for (const auto& [name, value] : notes.boundInputs) {
    // The values decide shapes, so they are usually a handful; a large one is summarised.
    constexpr int64_t kMaxListed = 1024;
    const int64_t n = value->type().numElements();
    json.beginObject().key("name").value(name).key("type").value(value->type().str());
    if (n <= kMaxListed) {
      json.key("values").beginArray();
      for (int64_t i = 0; i < n; ++i) json.value(value->elementAsDouble(i));
      json.endArray();
    }
    json.endObject();
  }
  json.endArray();
  json.key("warnings").beginArray();
  for (const std::string& warning : notes.warnings) json.value(warning);
  json.endArray();
}

/// --quantize: how many nodes became int8, and the float ones with the reason.
void writeQuantizationKeys(JsonWriter& json, const QuantizationReport& quantization) {
  json.key("quantized_nodes").value(uint64_t(quantization.quantizedNodes));
  json.key("float_nodes").beginArray();
  for (const auto& node : quantization.floatNodes) {
    json.beginObject();
    json.key("name").value(node.name).key("op").value(node.op).key("reason").value(node.reason);
    json.endObject();
  }
  json.endArray();
}

}  // namespace

std::string reportJson(const std::string& backend, const CompileReport& report,
                       std::optional<double> runSecondsMedian, int64_t repeat, int64_t threads,
                       const QuantizationReport* quantization, const DeviceReport* device,
                       const ImportNotes* notes, const std::function<void(JsonWriter&)>& moreKeys) {
  JsonWriter json;
  json.beginObject();
  writeCompileKeys(json, backend, report);
  if (notes) writeImportNotes(json, *notes);
  if (device) writeDeviceReport(json, *device);
  if (quantization) writeQuantizationKeys(json, *quantization);
  if (runSecondsMedian) {
    json.key("run_seconds_median").value(*runSecondsMedian);
    json.key("repeat").value(repeat);
    json.key("threads").value(threads);
  }
  if (moreKeys) moreKeys(json);
  json.endObject();
  return json.str();
}

Error writeTextFile(const std::string& path, const std::string& text) { return writeFile(path, text); }

std::string compiledIRText(const CompiledModel& model) {
  if (model.partitionIRs.empty())
    return model.ir ? model.ir->str() : "# no compute node: every output is a model input or a constant\n";
  std::string text;
  for (size_t p = 0; p < model.partitionIRs.size(); ++p) {
    const auto& [backendName, ir] = model.partitionIRs[p];
    text += (p ? "\n" : "") + std::string("# partition ") + std::to_string(p) + " of " +
            std::to_string(model.partitionIRs.size()) + " on backend '" + backendName + "'\n" + ir->str();
    if (!text.empty() && text.back() != '\n') text += "\n";
  }
  if (!model.ir) text += "# no node of the model runs on backend '" + model.backend->name() + "'\n";
  return text;
}

}  // namespace ember::cli
