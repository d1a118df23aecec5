// ember quantize: calibrates a model on sample inputs with the reference
// backend and writes a quantization profile (docs/quantization.md); with
// --emit-onnx it also writes the int8 model as an ONNX QDQ model.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include "Commands.h"
#include "Tool.h"
#include "ember/Npy.h"
#include "ember/Pass.h"
#include "ember/Quantization.h"
#include "ember/TextEscape.h"
#include "exporter/QdqExport.h"

namespace ember::cli {
namespace {

/// `--calibrate A B C` is `--calibrate A --calibrate B --calibrate C`: the
/// words after --calibrate that are not options are calibration paths (a
/// MODEL.onnx not yet given stays the positional).
std::vector<std::string> expandCalibrate(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  bool inList = false, haveModel = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--calibrate") {
      inList = true;
      continue;
    }
    if (!a.empty() && a[0] == '-') {
      inList = false;
      out.push_back(a);
      // Options with a separate value: keep the value with them.
      bool takesValue = a == "-o" || a == "--output" || a == "--profile" || a == "--emit-onnx" ||
                        a == "--schema" || a == "--calibration" || a == "--dim" || a == "--percentile" ||
                        a == "--backend-path";
      if (takesValue && i + 1 < args.size()) out.push_back(args[++i]);
      continue;
    }
    bool isModel = !haveModel && a.ends_with(".onnx");
    if (inList && !isModel) {
      out.push_back("--calibrate");
      out.push_back(a);
    } else {
      haveModel |= isModel || !inList;
      out.push_back(a);
    }
  }
  return out;
}

/// The .npy files of PATH: itself, or the *.npy of a directory in name order.
Expected<std::vector<std::string>> npyFiles(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    if (!std::filesystem::exists(path, ec)) return makeError(path, ": no such calibration file or directory");
    return std::vector<std::string>{path};
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec))
    if (entry.path().extension() == ".npy") files.push_back(entry.path().string());
  if (ec) return makeError(path, ": cannot list the directory: ", ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) return makeError(path, ": the directory holds no .npy file");
  return files;
}

/// Splits `t` into samples of `type`: the leading dimension may hold several
/// batches (a multiple of the model's batch size).
Expected<std::vector<Tensor>> splitSamples(const Tensor& t, const Type& type, const std::string& file,
                                           const std::string& input) {
  if (t.type().kind != type.kind)
    return makeError(file, ": input '", input, "' expects ", elemKindName(type.kind), ", the file holds ",
                     elemKindName(t.type().kind));
  const Dims& d = t.type().dims;
  if (d == type.dims) return std::vector<Tensor>{t};
  bool stackable = type.rank() >= 1 && d.size() == type.rank() && type.dims[0] > 0 &&
                   std::equal(d.begin() + 1, d.end(), type.dims.begin() + 1) && d[0] % type.dims[0] == 0;
  if (!stackable)
    return makeError(file, ": shape ", dimsStr(d), " does not fit input '", input, "' ", type.str(),
                     " (the leading dimension may be a multiple of ", type.rank() ? type.dims[0] : 1, ")");
  std::vector<Tensor> samples;
  const size_t bytes = type.sizeInBytes();
  for (int64_t i = 0; i < d[0] / type.dims[0]; ++i) {
    Tensor s(type);
    std::memcpy(s.data(), static_cast<const std::byte*>(t.data()) + size_t(i) * bytes, bytes);
    samples.push_back(std::move(s));
  }
  return samples;
}

/// Converts MODEL with `profile` as 'ember run --quantize' does on the
/// reference backend and writes it as an ONNX QDQ model.
int emitOnnx(const PipelineArgs& pipeline, const QuantizationProfile& profile, const std::string& path,
             bool quiet) {
  Expected<std::unique_ptr<Backend>> backend = BackendRegistry::global().create("reference");
  if (!backend) return fail(backend.error());
  Expected<LoadedModel> loaded = importModel(pipeline);
  if (!loaded) return fail(loaded.error());
  Function& function = *loaded->function;
  PassManager pm;
  addGraphOptimizationPasses(pm);
  if (Error e = pm.run(function)) return fail(e.withContext(pipeline.model));
  QuantizationReport report;
  if (Error e = quantizeFunction(function, profile, **backend, &report))
    return fail(e.withContext(pipeline.model));
  QdqExportSummary summary;
  if (Error e = exportQdqOnnx(pipeline.model, function, path, &summary)) return fail(e);
  if (!quiet) {
    std::cout << "wrote " << path << ": " << summary.quantizedTensors << " tensors through QuantizeLinear/"
              << "DequantizeLinear, " << summary.quantizedWeights << " int8 weights";
    if (!summary.floatNodes.empty()) {
      std::cout << ", " << summary.floatNodes.size() << " float node"
                << (summary.floatNodes.size() == 1 ? "" : "s") << ":";
      for (const std::string& n : summary.floatNodes) std::cout << " " << n;
    }
    std::cout << "\n";
  }
  return kExitSuccess;
}

/// Fails early when `path` cannot be created, before a long calibration.
Error checkWritable(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    return makeError(path, ": cannot write the file (no directory ", parent.string(), ")");
  return Error::success();
}

/// What the command line asks for.
struct QuantizeArgs {
  PipelineArgs pipeline;
  std::vector<std::string> calibrateSpecs;
  std::string outputPath, profilePath, emitPath, schema = "asymmetric", method = "minmax",
                                                 percentile = "99.99";
  bool perChannel = false, quiet = false;
};

void addQuantizeOptions(OptionParser& parser, QuantizeArgs& a) {
  parser.addPositional("MODEL.onnx", &a.pipeline.model, "the ONNX model");
  parser.addList("--calibrate", "[NAME=]PATH", &a.calibrateSpecs,
                 "calibration inputs for model input NAME (NAME= may be left out for a one-input model)");
  parser.addString("--output", "PROFILE.yaml", &a.outputPath,
                   "where to write the profile (required unless --emit-onnx)");
  parser.addAlias("-o", "--output");
  parser.addString("--profile", "PROFILE.yaml", &a.profilePath,
                   "use this profile instead of calibrating (with --emit-onnx)");
  parser.addString(
      "--emit-onnx", "Q.onnx", &a.emitPath,
      "also write the int8 model as an ONNX QDQ model for ONNX Runtime (docs/quantization.md 7)");
  parser.addString("--schema", "S", &a.schema, "asymmetric (default), symmetric or symmetric-power2");
  parser.addString("--calibration", "M", &a.method, "minmax (default), percentile or kl");
  parser.addString("--percentile", "P", &a.percentile,
                   "percentile of --calibration percentile (default 99.99)");
  parser.addFlag("--per-channel", &a.perChannel, "per-output-channel weight scales");
  parser.addList("--dim", "NAME=VALUE", &a.pipeline.dims, "size of the symbolic input dimension NAME");
  parser.addList("--backend-path", "DIR", &a.pipeline.backendPaths, "load backend plugins from DIR");
  parser.addFlag("--quiet", &a.quiet, "print nothing on success");
}

/// --schema, --calibration, --percentile and --per-channel as calibration
/// options; an exit status on a bad value.
std::optional<int> parseCalibrationOptions(const OptionParser& parser, const QuantizeArgs& a,
                                           CalibrationOptions& options) {
  options.perChannel = a.perChannel;
  Expected<QuantSchema> parsedSchema = parseSchema(a.schema);
  if (!parsedSchema) return parser.usageError("--schema: " + parsedSchema.error().message());
  options.schema = *parsedSchema;
  Expected<CalibrationMethod> parsedMethod = parseCalibration(a.method);
  if (!parsedMethod) return parser.usageError("--calibration: " + parsedMethod.error().message());
  options.method = *parsedMethod;
  char* end = nullptr;
  options.percentile = std::strtod(a.percentile.c_str(), &end);
  if (*end != '\0' || !(options.percentile > 50 && options.percentile <= 100))
    return parser.usageError("--percentile expects a number in (50, 100], got '" + a.percentile + "'");
  return std::nullopt;
}

/// Reads the samples of each --calibrate spec into `perInput` (by model input name).
Error readCalibrationSpecs(const Function& function, const QuantizeArgs& a,
                           std::map<std::string, std::vector<Tensor>>& perInput) {
  for (const std::string& spec : a.calibrateSpecs) {
    size_t eq = spec.find('=');
    std::string name, path = spec;
    if (eq != std::string::npos && !function.findInput(spec)) {
      name = spec.substr(0, eq);
      path = spec.substr(eq + 1);
    } else if (function.inputs().size() == 1) {
      name = function.inputs()[0]->name();
    } else {
      return makeError("--calibrate ", spec, ": the model has ", function.inputs().size(),
                       " inputs; write NAME=PATH");
    }
    const Node* input = function.findInput(name);
    if (!input)
      return makeError("--calibrate ", spec, ": '", name, "' is not an input of ", a.pipeline.model);
    Expected<std::vector<std::string>> files = npyFiles(path);
    if (!files) return files.error();
    for (const std::string& file : *files) {
      Expected<Tensor> tensor = readNpy(file);
      if (!tensor) return tensor.error();
      // NumPy's default float64 calibration data is rounded to a float input's kind.
      Expected<std::vector<Tensor>> samples = splitSamples(
          narrowFloat64(tensor.take(), input->resultType().kind), input->resultType(), file, name);
      if (!samples) return samples.error();
      for (Tensor& s : *samples) perInput[name].push_back(std::move(s));
    }
  }
  return Error::success();
}

/// The calibration samples: every model input's data, as many samples for each.
Expected<std::vector<CalibrationSample>> readCalibrationSamples(const Function& function,
                                                                const QuantizeArgs& a) {
  std::map<std::string, std::vector<Tensor>> perInput;
  if (Error e = readCalibrationSpecs(function, a, perInput)) return e;
  size_t count = 0;
  for (const Node* input : function.inputs()) {
    auto it = perInput.find(input->name());
    if (it == perInput.end()) return makeError("no calibration data for model input '" + input->name() + "'");
    if (count && it->second.size() != count)
      return makeError("model inputs have different numbers of calibration samples (" +
                       std::to_string(count) + " and " + std::to_string(it->second.size()) + " for '" +
                       input->name() + "')");
    count = it->second.size();
  }
  std::vector<CalibrationSample> samples(count);
  for (auto& [name, tensors] : perInput)
    for (size_t i = 0; i < count; ++i) samples[i][name] = std::move(tensors[i]);
  return samples;
}

/// --profile: converts with a profile read from a file instead of calibrating.
int emitFromProfile(const OptionParser& parser, const QuantizeArgs& a) {
  if (a.emitPath.empty()) return parser.usageError("--profile needs --emit-onnx");
  if (!a.calibrateSpecs.empty()) return parser.usageError("--profile and --calibrate exclude each other");
  Expected<QuantizationProfile> profile = QuantizationProfile::load(a.profilePath);
  if (!profile) return fail(profile.error());
  if (Error e = loadBackends(a.pipeline.backendPaths)) return fail(e);
  return emitOnnx(a.pipeline, *profile, a.emitPath, a.quiet);
}

}  // namespace

int quantizeCommand(const std::vector<std::string>& rawArgs) {
  QuantizeArgs a;
  OptionParser parser("ember quantize",
                      "MODEL.onnx --calibrate [NAME=]PATH... -o PROFILE.yaml [--emit-onnx Q.onnx] [options]\n"
                      "       ember quantize MODEL.onnx --profile PROFILE.yaml --emit-onnx Q.onnx [options]",
                      "Runs MODEL.onnx in f32 on the reference backend over calibration inputs, records the\n"
                      "range of every tensor and writes a quantization profile for 'ember run/compile\n"
                      "--quantize'. PATH is an .npy file or a directory of them; the leading dimension may\n"
                      "hold several samples (a multiple of the model's batch size).");
  addQuantizeOptions(parser, a);
  if (auto status = parser.parse(expandCalibrate(rawArgs))) return *status;
  if (auto status = a.pipeline.validate(parser)) return *status;
  if (!a.emitPath.empty())
    if (Error e = checkWritable(a.emitPath)) return fail(e);
  if (!a.profilePath.empty()) return emitFromProfile(parser, a);
  if (a.calibrateSpecs.empty()) return parser.usageError("--calibrate (or --profile) is required");
  if (a.outputPath.empty() && a.emitPath.empty())
    return parser.usageError("-o PROFILE.yaml or --emit-onnx is required");
  CalibrationOptions options;
  if (auto status = parseCalibrationOptions(parser, a, options)) return *status;

  if (Error e = loadBackends(a.pipeline.backendPaths)) return fail(e);
  Expected<std::unique_ptr<Backend>> backend = BackendRegistry::global().create("reference");
  if (!backend) return fail(backend.error());
  Expected<LoadedModel> loaded = importModel(a.pipeline);
  if (!loaded) return fail(loaded.error());
  Function& function = *loaded->function;
  Expected<std::vector<CalibrationSample>> samples = readCalibrationSamples(function, a);
  if (!samples) return fail(samples.error());
  const size_t count = samples->size();

  // The profile describes the graph after the graph optimizer, where
  // `run/compile --quantize` converts it.
  PassManagerOptions pmOptions;
  pmOptions.verifyEachPass = a.pipeline.verifyEachPass;
  PassManager pm(pmOptions);
  addGraphOptimizationPasses(pm);
  if (Error e = function.verify()) return fail(e.withContext(a.pipeline.model));
  if (Error e = pm.run(function)) return fail(e.withContext(a.pipeline.model));
  Expected<QuantizationProfile> profile = ember::calibrate(function, backend.take(), *samples, options);
  if (!profile) return fail(profile.error().withContext(a.pipeline.model));
  // A file name need not be UTF-8; the profile is YAML, which must be.
  profile->model = escapeControlChars(std::filesystem::path(a.pipeline.model).filename().string());
  if (!a.outputPath.empty())
    if (Error e = writeTextFile(a.outputPath, profile->toYaml())) return fail(e);
  if (!a.quiet)
    std::cout << "calibrated " << profile->tensors.size() << " tensors on " << count << " sample"
              << (count == 1 ? "" : "s") << " (" << a.schema << ", " << a.method
              << (a.perChannel ? ", per-channel" : "") << ")"
              << (a.outputPath.empty() ? "" : "; wrote " + a.outputPath) << "\n";
  if (!a.emitPath.empty()) return emitOnnx(a.pipeline, *profile, a.emitPath, a.quiet);
  return kExitSuccess;
}

}  // namespace ember::cli
