// The Python binding `ember._ember` (docs/python.md). It calls the library
// functions the `ember` tool calls (import, the compile pipeline with the
// tool's PipelineArgs, calibration, the simulator, the sweep), so that results
// are the tool's. The package `ember` (python/ember/__init__.py) wraps it.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "Commands.h"
#include "EndToEndLatency.h"
#include "ModelIO.h"
#include "NumpyTensor.h"
#include "Tool.h"
#include "ValueDependentReport.h"
#include "codesign/ProcessPool.h"
#include "ember/Npy.h"
#include "ember/Pass.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/Config.h"
#include "ember/npu/Simulator.h"

namespace py = pybind11;

namespace ember::python {
namespace {

/// Raises the package's exception class `name` (python/ember/_errors.py) with
/// the library's one-line message.
[[noreturn]] void raise(const char* name, const Error& error) {
  py::object cls = py::module_::import("ember._errors").attr(name);
  PyErr_SetString(cls.ptr(), error.message().c_str());
  throw py::error_already_set();
}

template <typename T>
T valueOr(const char* errorClass, Expected<T> expected) {
  if (!expected) raise(errorClass, expected.error());
  return expected.take();
}

void check(const char* errorClass, const Error& error) {
  if (error) raise(errorClass, error);
}

/// The built-in backends and EMBER_BACKEND_PATH's plugins, once per process.
void ensureBackends() {
  static bool loaded = false;
  if (loaded) return;
  check("ConfigError", cli::loadBackends({}));
  loaded = true;
}

/// A model as imported; each compile imports it again (the pipeline rewrites
/// the function in place), as every `ember` command does.
class Model {
 public:
  Model(std::string path, std::string bytes, std::map<std::string, int64_t> dims)
      : path_(std::move(path)), bytes_(std::move(bytes)) {
    importOptions_.dimValues = std::move(dims);
    imported_ = importFresh();
  }

  cli::LoadedModel importFresh() const {
    cli::LoadedModel loaded;
    loaded.module = std::make_unique<Module>();
    Expected<Function*> function = bytes_.empty()
                                       ? importOnnxFile(path_, *loaded.module, importOptions_)
                                       : importOnnxBytes(bytes_, path_, *loaded.module, importOptions_);
    if (!function) {
      std::error_code ec;
      const bool missing = bytes_.empty() && !std::filesystem::exists(path_, ec);
      raise(missing ? "ModelNotFoundError" : "ModelError", function.error());
    }
    loaded.function = *function;
    return loaded;
  }

  const std::string& path() const { return path_; }
  const ImportOptions& importOptions() const { return importOptions_; }
  const Function& function() const { return *imported_.function; }

  std::vector<std::pair<std::string, Type>> inputs() const {
    std::vector<std::pair<std::string, Type>> out;
    for (const Node* in : imported_.function->inputs()) out.push_back({in->name(), in->resultType()});
    return out;
  }
  std::vector<std::pair<std::string, Type>> outputs() const {
    std::vector<std::pair<std::string, Type>> out;
    for (const auto& [name, value] : imported_.function->outputs()) out.push_back({name, value.type()});
    return out;
  }

 private:
  std::string path_, bytes_;
  ImportOptions importOptions_;
  cli::LoadedModel imported_;
};

/// A calibration profile (the YAML of `ember quantize`).
struct Profile {
  std::shared_ptr<const QuantizationProfile> profile;
  std::string origin;  ///< the file it was loaded from, or "profile"
};

py::dict typeDict(const std::string& name, const Type& type) {
  py::dict d;
  d["name"] = name;
  d["shape"] = py::tuple(py::cast(type.dims));
  d["dtype"] = dtypeOf(type.kind);
  d["type"] = type.str();
  if (isQuantized(type.kind)) {
    d["scale"] = type.scale;
    d["offset"] = type.offset;
  }
  return d;
}

/// The `inputs` / `outputs` property of Model and Compiled: a typeDict each, in model order.
py::list signatureList(const std::vector<std::pair<std::string, Type>>& signature) {
  py::list list;
  for (const auto& [name, type] : signature) list.append(typeDict(name, type));
  return list;
}

/// The PipelineArgs of `ember compile/run` for these keyword arguments.
cli::PipelineArgs pipelineFor(const Model& model, const std::string& backend, const std::string& configPath,
                              const std::optional<Profile>& profile,
                              const std::optional<std::vector<std::string>>& fallback,
                              const std::map<std::string, std::string>& backendOptions, bool optimize) {
  cli::PipelineArgs args;
  args.model = model.path();
  args.backend = backend;
  args.config = configPath;
  args.importOptions = model.importOptions();
  for (const auto& [key, value] : backendOptions)
    args.backendOptions.push_back(std::string(key).append("=").append(value));
  if (fallback) {
    std::string list;
    for (const std::string& b : *fallback) {
      list += (list.empty() ? "" : ",");
      list += b;
    }
    args.fallback = list.empty() ? "none" : list;
  }
  if (profile) {
    args.quantize = profile->origin;
    args.profile = profile->profile;
    args.quantizationReport = std::make_shared<QuantizationReport>();
  }
  args.noGraphOpt = !optimize;
  args.noIROpt = !optimize;
  return args;
}

/// A model compiled for a backend and loaded on its device.
/// Ctrl-C during a simulation: the simulator asks every 1024 instructions;
/// the signal handlers run under the GIL at most every 50 ms.
class InterruptCheck {
 public:
  std::function<bool()> callback() {
    return [this] { return poll(); };
  }
  bool interrupted() const { return interrupted_; }

 private:
  bool poll() {
    const auto now = std::chrono::steady_clock::now();
    if (interrupted_ || now - lastCheck_ < std::chrono::milliseconds(50)) return interrupted_;
    lastCheck_ = now;
    py::gil_scoped_acquire acquire;
    interrupted_ = PyErr_CheckSignals() != 0;
    return interrupted_;
  }

  bool interrupted_ = false;
  std::chrono::steady_clock::time_point lastCheck_ = std::chrono::steady_clock::now();
};

class Compiled {
 public:
  Compiled(const Model& model, cli::PipelineArgs pipeline) : pipeline_(std::move(pipeline)) {
    ensureBackends();
    auto backend = pipeline_.createBackend();
    if (!backend) raise("ConfigError", backend.error());
    backendName_ = (*backend)->name();
    cli::LoadedModel loaded = model.importFresh();
    notes_.warnings = cli::valueDependentWarnings(*loaded.function);
    CompileOptions options = pipeline_.compileOptions();
    std::optional<Expected<CompiledModel>> compiled;
    {
      py::gil_scoped_release release;
      compiled.emplace(compileFunction(*loaded.function, backend.take(), options));
    }
    if (!*compiled) raise("CompileError", compiled->error().withContext(pipeline_.model));
    model_ = std::make_unique<CompiledModel>(compiled->take());
    device_ = model_->createDevice();
    check("RunError", device_->load(kId, model_->function).withContext(pipeline_.model));
  }
  ~Compiled() {
    if (device_) (void)device_->unload(kId);
  }

  py::dict run(const py::dict& inputs) {
    ExecutionContext context;
    std::set<std::string> known;
    for (const auto& [name, type] : model_->inputs) {
      known.insert(name);
      if (!inputs.contains(name)) continue;
      py::array array = py::array::ensure(inputs[py::str(name)]);
      if (!array) raise("InputError", makeError("input '", name, "': expected a numpy array"));
      context.setInput(name, valueOr("InputError", tensorFromArray(array, type, name)));
    }
    std::string unknown, missing;
    for (const auto& item : inputs) {
      const std::string name = py::str(item.first);
      if (!known.count(name)) unknown += (unknown.empty() ? "'" : ", '") + name + "'";
    }
    for (const auto& [name, type] : model_->inputs)
      if (!context.input(name)) missing += (missing.empty() ? "'" : ", '") + name + "' " + type.str();
    if (!unknown.empty()) raise("InputError", makeError("the model has no input(s) ", unknown));
    if (!missing.empty()) raise("InputError", makeError("missing model input(s) ", missing));
    check("InputError", checkInputs(*model_, context).withContext(pipeline_.model));
    Error error;
    InterruptCheck interrupt;
    {
      py::gil_scoped_release release;
      // The npu's device simulates with no options: Ctrl-C reaches it through the thread's check.
      npu::ScopedCancellation cancellation(interrupt.callback());
      const auto start = std::chrono::steady_clock::now();
      error = device_->run(kId, context);
      runSeconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (interrupt.interrupted()) throw py::error_already_set();
    check("RunError", error.withContext(pipeline_.model));
    py::dict outputs;
    for (const auto& [name, type] : model_->outputs) {
      auto it = context.outputs().find(name);
      if (it == context.outputs().end())
        raise("RunError", makeError("the backend produced no output '", name, "'"));
      outputs[py::str(name)] = arrayFromTensor(std::move(it->second));
    }
    return outputs;
  }

  /// The --report-json document of `ember compile` (before a run) or `ember run` (after one).
  std::string reportJson() const {
    const DeviceReport* device = model_->function->deviceReport();
    if (!runSeconds_) device = model_->report.device.layers.empty() ? nullptr : &model_->report.device;
    const char* threads = std::getenv("EMBER_THREADS");
    // After a simulated run, the end-to-end latency as `ember run` reports it
    // (host time measured, the default host link; docs/cli.md).
    std::function<void(JsonWriter&)> moreKeys;
    if (runSeconds_ && device && device->cycles > 0)
      moreKeys = [&](JsonWriter& json) {
        cli::writeEndToEndLatency(
            json, cli::endToEndLatency(*device, lastRunStatistics(*model_->function),
                                       *runSeconds_ - device->hostSeconds, cli::HostLinkOptions{}));
      };
    return cli::reportJson(backendName_, model_->report, runSeconds_, 1, threads ? std::atoll(threads) : 1,
                           pipeline_.quantizationReport.get(), device, &notes_, moreKeys);
  }

  void saveBundle(const std::string& path) const {
    check("Error",
          model_->function->writeArtifact(path).withContext(path + " (backend '" + backendName_ + "')"));
  }
  void trace(const std::string& path) const { check("Error", model_->function->writeTrace(path)); }

  const std::string& backend() const { return backendName_; }
  const CompiledModel& model() const { return *model_; }

 private:
  static constexpr const char* kId = "main";
  cli::PipelineArgs pipeline_;
  std::string backendName_;
  std::unique_ptr<CompiledModel> model_;
  std::unique_ptr<Device> device_;
  std::optional<double> runSeconds_;
  cli::ImportNotes notes_;  ///< the report's bound_inputs (none: the binding binds no input) and warnings
};

/// The graph at one stage, as `ember dump --stage` prints it.
std::string graphAt(const Model& model, const std::string& stage, const cli::PipelineArgs& pipeline) {
  if (stage != "graph" && stage != "optimized" && stage != "lowered" && stage != "ir")
    raise("Error", makeError("unknown stage '", stage, "' (expected graph, optimized, lowered or ir)"));
  if (stage == "graph") return model.function().str();
  ensureBackends();
  auto backend = pipeline.createBackend();
  if (!backend) raise("ConfigError", backend.error());
  cli::LoadedModel loaded = model.importFresh();
  Function& function = *loaded.function;
  CompileOptions options = pipeline.compileOptions();
  if (stage == "optimized") {
    PassManager pm;
    if (options.optimizeGraph) addGraphOptimizationPasses(pm);
    check("CompileError", function.verify().withContext(pipeline.model));
    check("CompileError", pm.run(function).withContext(pipeline.model));
    return function.str();
  }
  if (stage == "lowered") {
    check("CompileError", optimizeAndLower(function, **backend, options).withContext(pipeline.model));
    return function.str();
  }
  Expected<CompiledModel> compiled = compileFunction(function, backend.take(), options);
  if (!compiled) raise("CompileError", compiled.error().withContext(pipeline.model));
  return cli::compiledIRText(*compiled);
}

/// `ember quantize`: the graph optimizer, then calibration on the reference backend.
Profile quantize(const Model& model, const std::vector<std::map<std::string, py::array>>& samples,
                 const std::string& schema, const std::string& method, bool perChannel, double percentile) {
  CalibrationOptions options;
  options.perChannel = perChannel;
  Expected<QuantSchema> parsedSchema = parseSchema(schema);
  if (!parsedSchema) raise("QuantizationError", parsedSchema.error().withContext("scheme"));
  options.schema = *parsedSchema;
  Expected<CalibrationMethod> parsedMethod = parseCalibration(method);
  if (!parsedMethod) raise("QuantizationError", parsedMethod.error().withContext("method"));
  options.method = *parsedMethod;
  if (!(percentile > 50 && percentile <= 100))
    raise("QuantizationError", makeError("percentile expects a number in (50, 100], got ", percentile));
  options.percentile = percentile;
  if (samples.empty()) raise("QuantizationError", makeError("calibration: no samples"));
  ensureBackends();
  cli::LoadedModel loaded = model.importFresh();
  Function& function = *loaded.function;
  std::vector<CalibrationSample> converted;
  for (size_t i = 0; i < samples.size(); ++i) {
    CalibrationSample sample;
    for (const Node* input : function.inputs()) {
      auto it = samples[i].find(input->name());
      if (it == samples[i].end())
        raise("QuantizationError",
              makeError("calibration sample ", i, ": no data for model input '", input->name(), "'"));
      sample[input->name()] =
          valueOr("InputError", tensorFromArray(it->second, input->resultType(), input->name()));
    }
    for (const auto& [name, array] : samples[i])
      if (!function.findInput(name))
        raise("QuantizationError",
              makeError("calibration sample ", i, ": '", name, "' is not an input of ", model.path()));
    converted.push_back(std::move(sample));
  }
  auto backend = BackendRegistry::global().create("reference");
  if (!backend) raise("ConfigError", backend.error());
  Expected<QuantizationProfile> profile = Error::make("not run");
  {
    py::gil_scoped_release release;
    PassManager pm;
    addGraphOptimizationPasses(pm);
    Error e = function.verify();
    if (!e) e = pm.run(function);
    profile = e ? Expected<QuantizationProfile>(e) : calibrate(function, backend.take(), converted, options);
  }
  if (!profile) raise("QuantizationError", profile.error().withContext(model.path()));
  profile->model = std::filesystem::path(model.path()).filename().string();
  return Profile{std::make_shared<const QuantizationProfile>(profile.take()), "profile"};
}

/// What `ember sim` measured, and the output symbols.
struct SimResult {
  py::dict outputs;
  std::string statsJson, traceJson;
};

/// The NpuConfig of `ember sim`'s config= / config_text= / engine= arguments.
ember::npu::NpuConfig simConfigFor(const std::optional<std::string>& configPath,
                                   const std::optional<std::string>& configText, const std::string& engine) {
  using namespace ember::npu;
  NpuConfig config;
  if (configPath) config = valueOr("ConfigError", loadConfig(*configPath));
  if (configText) config = valueOr("ConfigError", parseConfig(*configText, "config"));
  if (engine == "rtl") config.matrixEngineModel = MatrixEngineModel::Rtl;
  if (engine == "fast") config.matrixEngineModel = MatrixEngineModel::Fast;
  if (!engine.empty() && engine != "rtl" && engine != "fast")
    raise("ConfigError", makeError("matrix_engine expects fast or rtl, got '", engine, "'"));
  return config;
}

/// The bundle at `bundlePath`, checked to fit the DRAM of `config`.
ember::npu::Bundle loadSimBundle(const std::string& bundlePath, const ember::npu::NpuConfig& config) {
  using namespace ember::npu;
  std::error_code ec;
  Expected<Bundle> loaded = cli::loadNpuProgram(bundlePath);
  if (!loaded)
    raise(std::filesystem::exists(bundlePath, ec) ? "SimulationError" : "ModelNotFoundError", loaded.error());
  Bundle bundle = loaded.take();
  if (bundle.dramBytes > uint64_t(config.dramBytes))
    raise("SimulationError",
          makeError(bundlePath, ": the bundle uses ", bundle.dramBytes, " bytes of DRAM but config '",
                    config.name, "' has ", config.dramBytes));
  return bundle;
}

/// Copies each array of `inputs` into its input symbol in `dram`; every input
/// symbol needs an array of its kind and shape, and every array a symbol.
void writeSimInputs(const ember::npu::Bundle& bundle, const std::map<std::string, py::array>& inputs,
                    ember::npu::DramImage& dram) {
  using namespace ember::npu;
  for (const auto& [name, array] : inputs) {
    bool known = false;
    for (const auto& s : bundle.symbols) known |= s.name == name && s.direction == Symbol::Direction::Input;
    if (!known)
      raise("InputError", makeError("input '", name, "': the bundle has no input symbol '", name, "'"));
  }
  std::string missing;
  for (const auto& s : bundle.symbols) {
    if (s.direction != Symbol::Direction::Input) continue;
    auto it = inputs.find(s.name);
    if (it == inputs.end()) {
      missing += (missing.empty() ? "" : ", ");
      missing += s.name;
      continue;
    }
    Tensor tensor = valueOr("InputError", tensorFromArrayAnyKind(it->second, s.name));
    const Dims shape(s.shape.begin(), s.shape.end());
    if (!cli::symbolAcceptsKind(s.type, tensor.type().kind))
      raise("InputError", makeError("input '", s.name, "' expects ", symbolTypeName(s.type),
                                    " data but the array holds ", elemKindName(tensor.type().kind)));
    if (tensor.type().dims != shape)
      raise("InputError", makeError("input '", s.name, "' expects shape ", dimsStr(shape),
                                    " but the array has ", dimsStr(tensor.type().dims)));
    std::memcpy(dram.bytes.data() + s.dramOffset, tensor.data(), s.sizeInBytes());
  }
  if (!missing.empty()) raise("InputError", makeError("missing inputs: ", missing));
}

/// `ember sim`: the bundle on the simulator with `inputs` in its input symbols.
SimResult simulateBundle(const std::string& bundlePath, const std::optional<std::string>& configPath,
                         const std::optional<std::string>& configText,
                         const std::map<std::string, py::array>& inputs, const std::string& engine,
                         uint64_t maxCycles) {
  using namespace ember::npu;
  const NpuConfig config = simConfigFor(configPath, configText, engine);
  const Bundle bundle = loadSimBundle(bundlePath, config);
  DramImage dram = makeDram(bundle);
  writeSimInputs(bundle, inputs, dram);

  InterruptCheck interrupt;
  SimOptions options;
  options.cancelled = interrupt.callback();
  options.maxCycles = maxCycles;
  std::optional<Expected<SimStats>> stats;
  {
    py::gil_scoped_release release;
    stats.emplace(simulate(bundle, config, dram, options));
  }
  if (interrupt.interrupted()) throw py::error_already_set();
  if (!*stats) raise("SimulationError", stats->error().withContext(bundlePath));

  SimResult result;
  for (const auto& s : bundle.symbols) {
    if (s.direction != Symbol::Direction::Output) continue;
    result.outputs[py::str(s.name)] = arrayFromTensor(cli::outputSymbolTensor(s, dram));
  }
  result.statsJson = statsToJson(**stats, bundle, false);
  result.traceJson = traceToJson(**stats, bundle);
  return result;
}

/// `ember sweep WORDS...` in this process (the same code as the tool; each
/// point still runs as its own `ember` process). Returns the exit status and
/// what it printed on stdout and stderr.
py::tuple sweepCommand(const std::vector<std::string>& words, const std::string& tool) {
  codesign::setSelfExecutable(tool);
  std::ostringstream out, err;
  int status = 0;
  {
    py::gil_scoped_release release;
    std::streambuf* oldOut = std::cout.rdbuf(out.rdbuf());
    std::streambuf* oldErr = std::cerr.rdbuf(err.rdbuf());
    status = cli::sweepCommand(words);
    std::cout.rdbuf(oldOut);
    std::cerr.rdbuf(oldErr);
  }
  return py::make_tuple(status, out.str(), err.str());
}

/// Model: an imported ONNX model (its signature, its graph at each stage, calibration).
void registerModel(py::module_& m) {
  py::class_<Model>(m, "Model")
      .def(py::init([](const std::string& path, const std::optional<py::bytes>& data,
                       std::map<std::string, int64_t> dims) {
             return std::make_unique<Model>(path, data ? std::string(*data) : std::string(), std::move(dims));
           }),
           py::arg("path"), py::arg("data") = py::none(), py::arg("dims") = std::map<std::string, int64_t>{})
      .def_property_readonly("path", &Model::path)
      .def_property_readonly("inputs", [](const Model& model) { return signatureList(model.inputs()); })
      .def_property_readonly("outputs", [](const Model& model) { return signatureList(model.outputs()); })
      .def(
          "graph",
          [](const Model& model, const std::string& stage, const std::string& backend,
             const std::string& config, const std::optional<Profile>& profile,
             const std::optional<std::vector<std::string>>& fallback) {
            return graphAt(model, stage, pipelineFor(model, backend, config, profile, fallback, {}, true));
          },
          py::arg("stage"), py::arg("backend"), py::arg("config"), py::arg("quantize"), py::arg("fallback"))
      .def("quantize", &quantize, py::arg("samples"), py::arg("scheme"), py::arg("method"),
           py::arg("per_channel"), py::arg("percentile"));
}

/// Profile: a quantization profile, loaded, parsed or made by Model.quantize.
void registerProfile(py::module_& m) {
  py::class_<Profile>(m, "Profile")
      .def_static(
          "load",
          [](const std::string& path) {
            return Profile{std::make_shared<const QuantizationProfile>(
                               valueOr("QuantizationError", QuantizationProfile::load(path))),
                           path};
          },
          py::arg("path"))
      .def_static(
          "parse",
          [](const std::string& text) {
            return Profile{std::make_shared<const QuantizationProfile>(
                               valueOr("QuantizationError", QuantizationProfile::parse(text, "profile"))),
                           "profile"};
          },
          py::arg("text"))
      .def("to_yaml", [](const Profile& p) { return p.profile->toYaml(); })
      .def(
          "save",
          [](const Profile& p, const std::string& path) {
            check("Error", cli::writeTextFile(path, p.profile->toYaml()));
          },
          py::arg("path"))
      .def_property_readonly("model", [](const Profile& p) { return p.profile->model; })
      .def_property_readonly("graph_hash", [](const Profile& p) { return p.profile->graphHash; })
      .def_property_readonly("scheme",
                             [](const Profile& p) { return std::string(schemaName(p.profile->schema)); })
      .def_property_readonly(
          "method", [](const Profile& p) { return std::string(calibrationName(p.profile->calibration)); })
      .def_property_readonly("per_channel", [](const Profile& p) { return p.profile->perChannel; })
      .def_property_readonly("tensors", [](const Profile& p) {
        py::dict tensors;
        for (const auto& [name, q] : p.profile->tensors) {
          py::dict d;
          d["min"] = q.min;
          d["max"] = q.max;
          d["dtype"] = std::string(elemKindName(q.kind));
          d["scale"] = q.scale;
          d["offset"] = q.offset;
          tensors[py::str(name)] = d;
        }
        return tensors;
      });
}

/// Compiled: a model compiled for a backend, run on numpy inputs.
void registerCompiled(py::module_& m) {
  py::class_<Compiled>(m, "Compiled")
      .def(py::init([](const Model& model, const std::string& backend, const std::string& config,
                       const std::optional<Profile>& profile,
                       const std::optional<std::vector<std::string>>& fallback,
                       const std::map<std::string, std::string>& options, bool optimize) {
             return std::make_unique<Compiled>(
                 model, pipelineFor(model, backend, config, profile, fallback, options, optimize));
           }),
           py::arg("model"), py::arg("backend"), py::arg("config"), py::arg("quantize"), py::arg("fallback"),
           py::arg("options"), py::arg("optimize"))
      .def("run", &Compiled::run, py::arg("inputs"))
      .def("report_json", &Compiled::reportJson)
      .def("save_bundle", &Compiled::saveBundle, py::arg("path"))
      .def("trace", &Compiled::trace, py::arg("path"))
      .def_property_readonly("backend", &Compiled::backend)
      .def_property_readonly("inputs", [](const Compiled& c) { return signatureList(c.model().inputs); })
      .def_property_readonly("outputs", [](const Compiled& c) { return signatureList(c.model().outputs); });
}

/// The NPU simulator, its configuration check and the design-space sweep.
void registerSimulatorAndSweep(py::module_& m) {
  m.def(
      "sim",
      [](const std::string& bundle, const std::optional<std::string>& configPath,
         const std::optional<std::string>& configText, const std::map<std::string, py::array>& inputs,
         const std::string& engine, uint64_t maxCycles) {
        SimResult r = simulateBundle(bundle, configPath, configText, inputs, engine, maxCycles);
        return py::make_tuple(r.outputs, r.statsJson, r.traceJson);
      },
      py::arg("bundle"), py::arg("config_path"), py::arg("config_text"), py::arg("inputs"),
      py::arg("matrix_engine"), py::arg("max_cycles") = 0);
  m.def(
      "check_config",
      [](const std::string& text) { (void)valueOr("ConfigError", npu::parseConfig(text, "config")); },
      py::arg("text"));
  m.def("sweep_command", &sweepCommand, py::arg("words"), py::arg("tool"));
}

/// The backend list and numpy helpers.
void registerUtilities(py::module_& m) {
  m.def("backends", []() {
    ensureBackends();
    py::list list;
    for (const auto& e : BackendRegistry::global().list()) {
      py::dict d;
      d["name"] = e.name;
      d["summary"] = e.summary;
      d["origin"] = e.origin;
      list.append(d);
    }
    return list;
  });
  m.def(
      "to_numpy_round_trip",
      [](const py::array& array, const std::string& kind) {
        // Tests: an array through a Tensor of `kind` and back (every element type).
        auto k = elemKindFromName(kind);
        if (!k) raise("Error", makeError("unknown element kind '", kind, "'"));
        Dims dims;
        for (py::ssize_t i = 0; i < array.ndim(); ++i) dims.push_back(array.shape(i));
        return arrayFromTensor(valueOr("InputError", tensorFromArray(array, Type(*k, dims), "array")));
      },
      py::arg("array"), py::arg("kind"));
  m.def(
      "read_npy", [](const std::string& path) { return arrayFromTensor(valueOr("Error", readNpy(path))); },
      py::arg("path"));
}

}  // namespace
}  // namespace ember::python

PYBIND11_MODULE(_ember, m) {
  using namespace ember::python;
  m.doc() = "Ember's compiler, runtime and NPU simulator (the C++ library behind the `ember` tool).";
  m.attr("__version__") = EMBER_VERSION_STRING;
  m.attr("TOOL_BUILD_PATH") = EMBER_TOOL_BUILD_PATH;

  registerModel(m);
  registerProfile(m);
  registerCompiled(m);
  registerSimulatorAndSweep(m);
  registerUtilities(m);
}
