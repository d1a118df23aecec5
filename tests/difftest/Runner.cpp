// difftest_runner: replays difftest case directories (tests/difftest/generate.py)
// through Ember and reports every disagreement (docs/testing.md,
// "Differential random-model tester").
//
// Per case (meta.json "skip": true cases are counted, not compared):
//   reference   the reference backend against the oracle (f32: max error <= 1e-4 of max |expected|)
//   cpu         the cpu backend (fallback: reference) against the oracle, same tolerance
//   no-<pass>   the reference backend with one optional pass disabled, against the fully
//               optimised reference run: an IR pass bit-identical; a graph pass <= 1e-4 of
//               the max magnitude, or 10 x the oracle's own rounding noise (meta.json
//               "cond_error") when larger
//   int8-npu    calibrated on the case's inputs and quantized, the npu backend (fallback:
//               reference) against the reference backend, bit-exact, when the npu claims a node
//   PLUGIN      with --backend-path DIR --backend PLUGIN: that plugin's backend (fallback:
//               reference) against the oracle, cpu's tolerance (the toy example's fused
//               Conv+bias+ReLU vendor op on conv_bn_relu cases)
// A failure prints one line: FAIL <case> <check> <output>: <what>. An error (not a
// wrong answer) whose message contains a line of --known-errors FILE prints KNOWN
// instead and is counted apart: a reported bug that is not fixed yet.
// --inject-fault NAME adds a deliberately wrong graph pass to every compile
// (FaultInjection.h), to measure that the checks catch that bug class.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "FaultInjection.h"
#include "backends/BuiltinBackends.h"
#include "ember/Importer.h"
#include "ember/Npy.h"
#include "ember/Pass.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"

namespace {

namespace fs = std::filesystem;
using Outputs = std::map<std::string, ember::Tensor>;

constexpr double kOracleTolerance = 1e-4;  // relative to max |expected|
// Disabling a graph pass may reorder f32 arithmetic: BatchNorm folding moved
// outputs by up to 4.4e-5 of their magnitude (a conv of 1e3-scale inputs whose
// result cancels), so a graph pass gets the oracle's tolerance; disabling an
// IR pass only moves and shares buffers, so the outputs must be bit-identical.
constexpr double kGraphPassTolerance = kOracleTolerance;  // relative to max |fully optimised output|

struct Options {
  std::set<std::string> backends{"reference", "cpu", "npu"};
  std::vector<std::string> pluginBackends;  // --backend NAME of a --backend-path plugin: checked like cpu
  bool passes = true;
  int int8Every = 1;      // run the int8 check on every K-th compared case
  std::string onlyCheck;  // the minimiser's filter: run only checks with this name
  std::string npuConfig;
  std::vector<std::string> knownErrors;  // substrings of error messages of reported, unfixed bugs
  std::string fault;                     // --inject-fault: a deliberately wrong pass in every compile
  bool verbose = false;
};

struct Case {
  std::string name, dir;
  bool skip = false;
  std::string skipReason;
  double conditioningError = 0;  // the oracle's f32 vs f64 (or perturbed) relative difference
  std::vector<std::string> outputs;
  std::map<std::string, ember::Tensor> inputs;
  Outputs expected;
};

struct Tally {
  size_t cases = 0, compared = 0, skipped = 0, int8Cases = 0, failedCases = 0, mismatches = 0, known = 0;
  std::map<std::string, size_t> checksRun;
};

ember::Expected<Case> loadCase(const fs::path& dir) {
  Case c;
  c.dir = dir.string();
  c.name = dir.filename().string();
  try {
    YAML::Node meta = YAML::LoadFile((dir / "meta.json").string());
    c.skip = meta["skip"] && meta["skip"].as<bool>();
    if (meta["reason"]) c.skipReason = meta["reason"].as<std::string>();
    if (meta["cond_error"]) c.conditioningError = meta["cond_error"].as<double>();
    for (const auto& o : meta["outputs"]) c.outputs.push_back(o.as<std::string>());
  } catch (const std::exception& e) {
    return ember::makeError((dir / "meta.json").string(), ": ", e.what());
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir / "inputs", ec)) {
    EMBER_ASSIGN_OR_RETURN(ember::Tensor t, ember::readNpy(entry.path().string()));
    c.inputs[entry.path().stem().string()] = std::move(t);
  }
  if (ec) return ember::makeError(c.dir, ": cannot list inputs/: ", ec.message());
  if (!c.skip)
    for (const std::string& o : c.outputs) {
      EMBER_ASSIGN_OR_RETURN(ember::Tensor t, ember::readNpy((dir / "expected" / (o + ".npy")).string()));
      c.expected[o] = std::move(t);
    }
  return c;
}

struct Run {
  Outputs outputs;
  ember::CompileReport report;
};

/// Imports the case's model, compiles it for `backend` with `options` and runs it once.
ember::Expected<Run> compileAndRun(const Case& c, const std::string& backendName,
                                   ember::CompileOptions options, const std::string& npuConfig = "",
                                   const std::string& fault = "") {
  ember::Module module;
  EMBER_ASSIGN_OR_RETURN(ember::Function * function, ember::importOnnxFile(c.dir + "/model.onnx", module));
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<ember::Backend> backend,
                         ember::BackendRegistry::global().create(backendName));
  if (backendName == "npu" && !npuConfig.empty())
    EMBER_RETURN_IF_ERROR(backend->setOption("config", npuConfig));
  if (backendName != "reference") options.fallbackBackends = {"reference"};
  if (!fault.empty())
    options.extraGraphPasses.push_back([fault] { return difftest::createFaultPass(fault); });
  EMBER_ASSIGN_OR_RETURN(ember::CompiledModel compiled,
                         ember::compileFunction(*function, std::move(backend), options));
  ember::ExecutionContext context;
  for (const auto& [name, tensor] : c.inputs) context.setInput(name, tensor);
  EMBER_RETURN_IF_ERROR(ember::checkInputs(compiled, context));
  EMBER_RETURN_IF_ERROR(compiled.function->execute(context));
  Run run{{}, compiled.report};
  for (const auto& [name, type] : compiled.outputs) {
    const ember::Tensor* t = context.output(name);
    if (!t) return ember::makeError(c.dir, ": output '", name, "' was not produced");
    run.outputs[name] = *t;
  }
  return run;
}

/// Empty when `got` matches `want` (float: max error <= tolerance * max |want|;
/// integers and bool: equal); else what differs.
std::string compare(const ember::Tensor& got, const ember::Tensor& want, double tolerance) {
  std::ostringstream out;
  if (got.type().kind != want.type().kind || got.type().dims != want.type().dims) {
    out << "type " << got.type().str() << ", expected " << want.type().str();
    return out.str();
  }
  const int64_t n = want.type().numElements();
  const bool exact = !ember::isFloat(want.type().kind);
  double maxWant = 0, maxError = 0;
  int64_t worst = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double w = want.elementAsDouble(i), g = got.elementAsDouble(i);
    maxWant = std::max(maxWant, std::fabs(w));
    // Equal values (infinities included) and two NaNs agree; a NaN against a number never does.
    double error = g == w || (std::isnan(g) && std::isnan(w)) ? 0.0 : std::fabs(g - w);
    if (std::isnan(error)) error = INFINITY;
    if (error > maxError || (worst < 0 && error > 0)) {
      maxError = error;
      worst = i;
    }
  }
  const double limit = exact || tolerance == 0 ? 0 : tolerance * maxWant;
  if (maxError <= limit) return "";
  out << "max error " << maxError << " > " << limit << " (" << (maxWant > 0 ? maxError / maxWant : INFINITY)
      << " of max |expected| " << maxWant << "); element " << worst << ": got " << got.elementAsDouble(worst)
      << ", expected " << want.elementAsDouble(worst);
  return out.str();
}

/// The optional graph passes (the rest of optionalPassNames() are IR passes).
const std::set<std::string>& graphPassNames() {
  static const std::set<std::string> names = [] {
    ember::PassManager pm;
    ember::addGraphOptimizationPasses(pm);
    std::vector<std::string> list = pm.passNames();
    return std::set<std::string>(list.begin(), list.end());
  }();
  return names;
}

class CaseChecker {
 public:
  CaseChecker(const Case& c, const Options& options, Tally& tally)
      : c_(c), options_(options), tally_(tally) {}

  /// Runs the checks; returns the number of failures.
  size_t check(bool int8) {
    Outputs reference;
    if (wants("reference") || wants("passes")) {
      auto run = runCheck("reference", "reference", {});
      if (run) {
        reference = run->outputs;
        compareAll("reference", run->outputs, c_.expected, kOracleTolerance);
      }
    }
    if (wants("cpu")) {
      auto run = runCheck("cpu", "cpu", {});
      if (run) compareAll("cpu", run->outputs, c_.expected, kOracleTolerance);
    }
    for (const std::string& plugin : options_.pluginBackends)
      if (wants(plugin)) {  // a plugin's own kernels and vendor ops (docs/backend-guide.md)
        auto run = runCheck(plugin, plugin, {});
        if (run) compareAll(plugin, run->outputs, c_.expected, kOracleTolerance);
      }
    if (options_.passes && !reference.empty())
      for (const std::string& pass : ember::optionalPassNames()) {
        const bool graphPass = graphPassNames().count(pass) > 0;
        const std::string check = "no-" + pass;
        if (!options_.onlyCheck.empty() && options_.onlyCheck != check) continue;
        ember::CompileOptions compileOptions;
        compileOptions.disabledPasses = {pass};
        // Every pass must leave a valid graph and IR on its own, whichever ran before it.
        compileOptions.verifyEachPass = true;
        auto run = runCheck(check, "reference", compileOptions);
        // A graph pass may reorder f32 arithmetic: allow the larger of the
        // floor and 10x the rounding noise the oracle itself showed.
        const double tolerance = graphPass ? std::max(kGraphPassTolerance, 10 * c_.conditioningError) : 0.0;
        if (run) compareAll(check, run->outputs, reference, tolerance);
      }
    if (int8 && wants("int8-npu")) checkInt8();
    if (int8 && wants("int8-cpu")) checkInt8Cpu();
    return failures_;
  }

 private:
  bool wants(const std::string& check) const {
    if (!options_.onlyCheck.empty())
      return options_.onlyCheck == check || (check == "passes" && options_.onlyCheck.starts_with("no-"));
    if (check == "reference" || check == "passes") return true;  // the passes' baseline
    if (check == "cpu") return options_.backends.count("cpu") > 0;
    if (check == "int8-npu") return options_.backends.count("npu") > 0;
    if (check == "int8-cpu") return options_.backends.count("cpu") > 0;
    return true;
  }

  ember::Expected<Run> runCheck(const std::string& check, const std::string& backend,
                                const ember::CompileOptions& compileOptions) {
    ++tally_.checksRun[check];
    // An injected fault stands for a compiler bug: it is in every compile.
    auto run = compileAndRun(c_, backend, compileOptions, options_.npuConfig, options_.fault);
    if (!run) error(check, "error: " + run.error().message());
    return run;
  }

  void compareAll(const std::string& check, const Outputs& got, const Outputs& want, double tolerance) {
    for (const auto& [name, expected] : want) {
      auto it = got.find(name);
      if (it == got.end()) {
        fail(check, name, "missing output");
        continue;
      }
      std::string what = compare(it->second, expected, tolerance);
      if (!what.empty()) fail(check, name, what);
    }
  }

  /// An error instead of a result: a failure, unless it is a known, reported bug.
  void error(const std::string& check, const std::string& what) {
    for (const std::string& known : options_.knownErrors)
      if (what.find(known) != std::string::npos) {
        ++tally_.known;
        std::cout << "KNOWN " << c_.name << " " << check << " -: " << what << "\n" << std::flush;
        return;
      }
    fail(check, "-", what);
  }

  void fail(const std::string& check, const std::string& output, const std::string& what) {
    ++failures_;
    std::cout << "FAIL " << c_.name << " " << check << " " << output << ": " << what << "\n" << std::flush;
  }

  /// Calibrates on the case's inputs, quantizes for the npu (with reference
  /// fallback) and for the reference alone, and compares the bits.
  void checkInt8() {
    const std::string check = "int8-npu";
    auto profile = calibrate();
    if (!profile) return error(check, "calibration error: " + profile.error().message());
    ember::CompileOptions options;
    options.beforeLowering = [&](ember::Function& f, const ember::Backend& backend) {
      return ember::quantizeFunction(f, *profile, backend);
    };
    auto npu = compileAndRun(c_, "npu", options, options_.npuConfig, options_.fault);
    if (!npu) return error(check, "npu error: " + npu.error().message());
    bool claimed = std::any_of(npu->report.partitions.begin(), npu->report.partitions.end(),
                               [](const std::string& p) { return p.starts_with("npu:"); });
    if (!claimed) return;  // the npu runs no node of this model
    ++tally_.int8Cases;
    ++tally_.checksRun[check];
    auto reference = compileAndRun(c_, "reference", options, "", options_.fault);
    if (!reference) return error(check, "reference int8 error: " + reference.error().message());
    for (const auto& [name, want] : reference->outputs) {
      const ember::Tensor& got = npu->outputs.at(name);
      if (got.type().str() != want.type().str() || got.sizeInBytes() != want.sizeInBytes() ||
          std::memcmp(got.data(), want.data(), want.sizeInBytes()) != 0)
        fail(check, name, "npu differs from the reference int8 run: " + compare(got, want, 0));
    }
  }

  /// The same int8 model (quantized for the cpu backend) on cpu and on the
  /// reference: the cpu's int8 kernels must match bit for bit. Outputs of f32
  /// ops the quantizer left in f32 (a final Gemm, say) are the cpu's f32
  /// kernels, which round differently: f32 outputs get the oracle's tolerance.
  void checkInt8Cpu() {
    const std::string check = "int8-cpu";
    auto profile = calibrate();
    if (!profile) return error(check, "calibration error: " + profile.error().message());
    ember::CompileOptions options;
    options.beforeLowering = [&](ember::Function& f, const ember::Backend& backend) {
      return ember::quantizeFunction(f, *profile, backend);
    };
    ++tally_.checksRun[check];
    auto cpu = compileAndRun(c_, "cpu", options, "", options_.fault);
    if (!cpu) return error(check, "cpu int8 error: " + cpu.error().message());
    auto reference = compileAndRun(c_, "reference", options, "", options_.fault);
    if (!reference) return error(check, "reference int8 error: " + reference.error().message());
    for (const auto& [name, want] : reference->outputs) {
      const ember::Tensor& got = cpu->outputs.at(name);
      if (want.type().kind == ember::ElemKind::F32 && got.type() == want.type()) {
        std::string what = compare(got, want, kOracleTolerance);
        if (!what.empty()) fail(check, name, "cpu differs from the reference int8 run: " + what);
        continue;
      }
      if (got.type().str() != want.type().str() || got.sizeInBytes() != want.sizeInBytes() ||
          std::memcmp(got.data(), want.data(), want.sizeInBytes()) != 0)
        fail(check, name, "cpu differs from the reference int8 run: " + compare(got, want, 0));
    }
  }

  ember::Expected<ember::QuantizationProfile> calibrate() {
    ember::Module module;
    EMBER_ASSIGN_OR_RETURN(ember::Function * function, ember::importOnnxFile(c_.dir + "/model.onnx", module));
    ember::PassManager pm;
    ember::addGraphOptimizationPasses(pm);
    EMBER_RETURN_IF_ERROR(pm.run(*function));
    EMBER_ASSIGN_OR_RETURN(std::unique_ptr<ember::Backend> backend,
                           ember::BackendRegistry::global().create("reference"));
    std::vector<ember::CalibrationSample> samples{c_.inputs};
    return ember::calibrate(*function, std::move(backend), samples, ember::CalibrationOptions{});
  }

  const Case& c_;
  const Options& options_;
  Tally& tally_;
  size_t failures_ = 0;
};

/// The case directories under `path` (itself when it holds model.onnx), sorted;
/// directories named "pending" are left out.
void collectCases(const fs::path& path, std::vector<fs::path>& out) {
  if (fs::exists(path / "model.onnx")) {
    out.push_back(path);
    return;
  }
  std::vector<fs::path> children;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path, ec))
    if (entry.is_directory() && entry.path().filename() != "pending") children.push_back(entry.path());
  std::sort(children.begin(), children.end());
  for (const fs::path& child : children) collectCases(child, out);
}

int usage(const char* message) {
  std::cerr << "difftest_runner: " << message << "\n"
            << "usage: difftest_runner [--backend reference|cpu|npu|PLUGIN]... [--backend-path DIR]\n"
            << "                       [--no-passes] [--int8-every K]\n"
            << "                       [--check NAME] [--npu-config FILE.yaml] [--known-errors FILE]\n"
            << "                       [--inject-fault equal-shape-transpose|sub-swap] [--verbose]\n"
            << "                       CASE_OR_DIR...\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::vector<fs::path> roots;
  std::set<std::string> chosenBackends;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--backend") {
      chosenBackends.insert(value());
    } else if (a == "--no-passes") {
      options.passes = false;
    } else if (a == "--int8-every") {
      options.int8Every = std::max(0, std::atoi(value().c_str()));
    } else if (a == "--check") {
      options.onlyCheck = value();
    } else if (a == "--backend-path") {
      if (ember::Error e = ember::BackendRegistry::global().loadDirectory(value()))
        return usage(e.message().c_str());
    } else if (a == "--npu-config") {
      options.npuConfig = value();
    } else if (a == "--known-errors") {
      std::string path = value();
      std::ifstream in(path);
      if (!in) return usage(("cannot read " + path).c_str());
      for (std::string line; std::getline(in, line);) {
        line = line.substr(0, line.find('#'));
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
        if (!line.empty()) options.knownErrors.push_back(line);
      }
    } else if (a == "--inject-fault") {
      options.fault = value();
      if (!difftest::createFaultPass(options.fault)) return usage(("unknown fault " + options.fault).c_str());
    } else if (a == "--verbose") {
      options.verbose = true;
    } else if (a == "--help" || a == "-h") {
      usage("replays difftest cases");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage(("unknown option " + a).c_str());
    } else {
      roots.emplace_back(a);
    }
  }
  if (roots.empty()) return usage("no case directory given");
  if (!chosenBackends.empty()) {
    for (const std::string& b : chosenBackends)
      if (b != "reference" && b != "cpu" && b != "npu") {
        if (!ember::BackendRegistry::global().create(b)) return usage(("unknown backend " + b).c_str());
        options.pluginBackends.push_back(b);
      }
    options.backends = chosenBackends;
  }
  ember::registerBuiltinBackends();

  std::vector<fs::path> dirs;
  for (const fs::path& root : roots) {
    if (!fs::is_directory(root)) return usage((root.string() + ": not a directory").c_str());
    collectCases(root, dirs);
  }
  const auto start = std::chrono::steady_clock::now();
  Tally tally;
  for (const fs::path& dir : dirs) {
    ++tally.cases;
    auto c = loadCase(dir);
    if (!c) {
      std::cout << "FAIL " << dir.filename().string() << " load -: " << c.error().message() << "\n";
      ++tally.failedCases;
      ++tally.mismatches;
      continue;
    }
    if (c->skip) {
      ++tally.skipped;
      if (options.verbose) std::cout << "skip " << c->name << ": " << c->skipReason << "\n";
      continue;
    }
    const bool int8 = options.int8Every > 0 && tally.compared % size_t(options.int8Every) == 0;
    ++tally.compared;
    size_t failures = CaseChecker(*c, options, tally).check(int8);
    tally.mismatches += failures;
    tally.failedCases += failures > 0;
    if (options.verbose) std::cout << (failures ? "fail " : "ok   ") << c->name << "\n" << std::flush;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "difftest: " << tally.cases << " cases, " << tally.compared << " compared, " << tally.skipped
            << " skipped (ill-conditioned), " << tally.int8Cases << " int8 on the npu, " << tally.mismatches
            << " mismatches in " << tally.failedCases << " cases, " << tally.known << " known errors, "
            << seconds << " s\n";
  std::cout << "checks run:";
  for (const auto& [check, n] : tally.checksRun) std::cout << " " << check << "=" << n;
  std::cout << "\n";
  return tally.mismatches ? 1 : 0;
}
