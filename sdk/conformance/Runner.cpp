// Runs the operator suite: each case is built three times from the same seed
// (applicability check, oracle run, backend run) because compiling consumes a
// Function. A case applies when, after lowering for the backend, the backend
// supports() every node; otherwise it is counted as unsupported.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <set>

#include "Cases.h"
#include "Conformance.h"
#include "OnnxNodeTests.h"
#include "ember/Pass.h"
#include "ember/Runtime.h"

namespace ember::conformance {

const char* outcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::Passed:
      return "passed";
    case Outcome::Failed:
      return "failed";
    case Outcome::Unsupported:
      return "unsupported";
    case Outcome::Skipped:
      return "skipped";
  }
  return "?";
}

std::optional<Mismatch> compareTensors(const std::string& output, const Tensor& expected, const Tensor& got,
                                       double rtol, double atol, std::string* typeError) {
  const Type &e = expected.type(), &g = got.type();
  if (e.kind != g.kind || e.dims != g.dims ||
      (isQuantized(e.kind) && (e.scale != g.scale || e.offset != g.offset))) {
    if (typeError) *typeError = "output '" + output + "' is " + g.str() + ", expected " + e.str();
    return Mismatch{output, -1, 0, 0};
  }
  // Half-precision results carry 11 (f16) or 8 (bf16) significant bits.
  if (e.kind == ElemKind::F16) rtol = std::max(rtol, 1e-3);
  if (e.kind == ElemKind::BF16) rtol = std::max(rtol, 8e-3);
  const bool floating = isFloat(e.kind);
  for (int64_t i = 0; i < e.numElements(); ++i) {
    double x = expected.elementAsDouble(i), y = got.elementAsDouble(i);
    bool same;
    if (floating && (std::isnan(x) || std::isnan(y)))
      same = std::isnan(x) && std::isnan(y);
    else if (!floating || std::isinf(x) || std::isinf(y))  // exact: integers, infinities
      same = x == y;
    else
      same = std::fabs(x - y) <= atol + rtol * std::fabs(x);
    if (!same) return Mismatch{output, i, x, y};
  }
  return std::nullopt;
}

namespace {

struct BuiltCase {
  std::unique_ptr<Function> function;
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::vector<std::string> outputs;
};

uint64_t caseSeed(uint64_t seed, size_t index) {
  return seed * 0x100000001b3ull + uint64_t(index) * 0x9e3779b97f4a7c15ull;
}

Expected<BuiltCase> buildCase(const CaseSpec& spec, uint64_t seed) {
  BuiltCase built;
  built.function = std::make_unique<Function>("conformance");
  CaseBuilder builder(*built.function, seed);
  Expected<Node*> node = spec.build(builder);
  if (!node) return node.error().withContext("building case " + spec.name);
  for (unsigned r = 0; r < (*node)->numResults(); ++r) {
    std::string name = "out" + std::to_string(r);
    built.function->addOutput(name, (*node)->result(r));
    built.outputs.push_back(name);
  }
  built.inputs = builder.inputs();
  return built;
}

std::string describe(const Node& node) {
  std::string s = std::string(node.info().name) + "(";
  for (size_t i = 0; i < node.numInputs(); ++i) s += (i ? ", " : "") + node.input(i).type().str();
  return s + ")";
}

/// Lowers a copy of the case for `backend` and asks supports() about every
/// node. Returns the reason when the backend does not support the case.
std::optional<std::string> unsupportedReason(const CaseSpec& spec, uint64_t seed, const Backend& backend) {
  Expected<BuiltCase> built = buildCase(spec, seed);
  if (!built) return built.error().message();
  Function& f = *built->function;
  PassManager pm;
  pm.add(createLoweringPass(backend));
  pm.add(createDeadCodeEliminationPass());
  if (Error e = pm.run(f)) return "cannot be lowered: " + e.message();
  for (const Node* node : f.nodes()) {
    if (node->info().category == OpCategory::Storage) continue;
    if (!backend.supports(NodeInfo::of(*node))) return describe(*node) + " is not supported";
  }
  return std::nullopt;
}

/// Compiles and runs the case on a fresh backend; returns the outputs.
Expected<ExecutionContext> execute(const CaseSpec& spec, uint64_t seed, std::unique_ptr<Backend> backend,
                                   const Options& options) {
  EMBER_ASSIGN_OR_RETURN(BuiltCase built, buildCase(spec, seed));
  CompileOptions compileOptions;
  compileOptions.optimizeGraph = options.optimizeGraph;
  compileOptions.verifyEachPass = true;
  std::string backendName = backend->name();
  Expected<CompiledModel> model = compileFunction(*built.function, std::move(backend), compileOptions);
  if (!model) return model.error().withContext("compile");
  ExecutionContext context;
  for (auto& [name, tensor] : built.inputs) context.setInput(name, tensor);
  std::unique_ptr<Device> device = model->createDevice();
  if (!device) return makeError("createDevice returned no device");
  EMBER_RETURN_IF_ERROR(device->load("case", model->function).withContext("device load"));
  EMBER_RETURN_IF_ERROR(device->run("case", context).withContext("device run"));
  EMBER_RETURN_IF_ERROR(device->unload("case").withContext("device unload"));
  return context;
}

CaseResult runCase(const CaseSpec& spec, uint64_t seed, const BackendFactory& backendFactory,
                   const BackendFactory& oracleFactory, const Options& options) {
  CaseResult result;
  result.op = std::string(opName(spec.op));
  result.name = spec.name;
  auto outcome = [&](Outcome o, std::string detail) {
    result.outcome = o;
    result.detail = std::move(detail);
    return result;
  };
  try {
    // A case that cannot be built is a bug in the suite, not in a backend.
    if (Expected<BuiltCase> built = buildCase(spec, seed); !built)
      return outcome(Outcome::Failed, built.error().message());
    Expected<std::unique_ptr<Backend>> oracle = oracleFactory();
    if (!oracle) return outcome(Outcome::Failed, "oracle: " + oracle.error().message());
    if (auto reason = unsupportedReason(spec, seed, **oracle))
      return outcome(Outcome::Skipped, "the reference backend does not run it: " + *reason);
    Expected<std::unique_ptr<Backend>> backend = backendFactory();
    if (!backend) return outcome(Outcome::Failed, backend.error().message());
    if (auto reason = unsupportedReason(spec, seed, **backend)) return outcome(Outcome::Unsupported, *reason);

    Expected<ExecutionContext> expected = execute(spec, seed, oracle.take(), options);
    if (!expected) return outcome(Outcome::Failed, "reference backend: " + expected.error().message());
    Expected<ExecutionContext> got = execute(spec, seed, backend.take(), options);
    if (!got) return outcome(Outcome::Failed, got.error().message());
    for (const auto& [name, want] : expected->outputs()) {
      const Tensor* have = got->output(name);
      if (!have) return outcome(Outcome::Failed, "the backend produced no output '" + name + "'");
      std::string typeError;
      if (auto mismatch = compareTensors(name, want, *have, options.rtol, options.atol, &typeError)) {
        if (!typeError.empty()) return outcome(Outcome::Failed, typeError);
        result.mismatch = mismatch;
        return outcome(Outcome::Failed,
                       "output '" + name + "' differs at index " + std::to_string(mismatch->index));
      }
    }
    return outcome(Outcome::Passed, "");
  } catch (const std::exception& e) {
    return outcome(Outcome::Failed, std::string("threw an exception: ") + e.what());
  } catch (...) {
    return outcome(Outcome::Failed, "threw an unknown exception");
  }
}

// ---- Isolation: one forked child per case ------------------------------------

void writeAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n <= 0) return;
    p += n, size -= size_t(n);
  }
}

bool readAll(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::read(fd, p, size);
    if (n <= 0) return false;
    p += n, size -= size_t(n);
  }
  return true;
}

/// The child's result on the pipe: outcome, mismatch, detail.
struct WireResult {
  int32_t outcome;
  int32_t hasMismatch;
  int64_t index;
  double expected, got;
  uint32_t outputSize, detailSize;
};

CaseResult runIsolated(const CaseSpec& spec, uint64_t seed, const BackendFactory& backendFactory,
                       const BackendFactory& oracleFactory, const Options& options) {
  CaseResult result;
  result.op = std::string(opName(spec.op));
  result.name = spec.name;
  result.outcome = Outcome::Failed;
  int fds[2];
  if (::pipe(fds) != 0) {
    result.detail = std::string("cannot create a pipe: ") + std::strerror(errno);
    return result;
  }
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]), ::close(fds[1]);
    result.detail = std::string("cannot fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(options.caseTimeoutSeconds);
    CaseResult r = runCase(spec, seed, backendFactory, oracleFactory, options);
    std::string output = r.mismatch ? r.mismatch->output : "";
    WireResult wire{int32_t(r.outcome),
                    r.mismatch ? 1 : 0,
                    r.mismatch ? r.mismatch->index : 0,
                    r.mismatch ? r.mismatch->expected : 0,
                    r.mismatch ? r.mismatch->got : 0,
                    uint32_t(output.size()),
                    uint32_t(r.detail.size())};
    writeAll(fds[1], &wire, sizeof wire);
    writeAll(fds[1], output.data(), output.size());
    writeAll(fds[1], r.detail.data(), r.detail.size());
    ::close(fds[1]);
    ::_exit(0);  // no static destructors or atexit handlers of the parent's state
  }
  ::close(fds[1]);
  WireResult wire{};
  bool ok = readAll(fds[0], &wire, sizeof wire);
  std::string output(ok ? wire.outputSize : 0, '\0'), detail(ok ? wire.detailSize : 0, '\0');
  ok = ok && readAll(fds[0], output.data(), output.size()) && readAll(fds[0], detail.data(), detail.size());
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    result.detail = sig == SIGALRM ? "timed out after " + std::to_string(options.caseTimeoutSeconds) + " s"
                                   : std::string("crashed with signal ") + std::to_string(sig) + " (" +
                                         strsignal(sig) + ")";
    return result;
  }
  if (!ok) {
    // A sanitizer that catches the crash exits with a status instead of dying
    // by the signal; the status tells the vendor which.
    result.detail = WIFEXITED(status) ? "the case's process exited with status " +
                                            std::to_string(WEXITSTATUS(status)) + " without a result"
                                      : "the case's process ended without a result";
    return result;
  }
  result.outcome = Outcome(wire.outcome);
  result.detail = std::move(detail);
  if (wire.hasMismatch) result.mismatch = Mismatch{output, wire.index, wire.expected, wire.got};
  return result;
}

const char* categoryName(OpCategory c) {
  switch (c) {
    case OpCategory::Primitive:
      return "primitive";
    case OpCategory::HighLevel:
      return "high-level";
    default:
      return "other";
  }
}

}  // namespace

std::vector<std::string> listCases(uint64_t) {
  std::vector<std::string> names;
  for (const CaseSpec& spec : allCases()) names.push_back(spec.name);
  for (const CaseSpec& spec : vendorOpCases()) names.push_back(spec.name);
  return names;
}

void tally(Report& report, std::map<std::string, size_t>& index, const CaseResult& r,
           const std::string& category) {
  auto it = index.find(r.op);
  if (it == index.end()) {
    it = index.emplace(r.op, report.ops.size()).first;
    report.ops.push_back({r.op, category, 0, 0, 0, 0, ""});
  }
  OpTally& t = report.ops[it->second];
  switch (r.outcome) {
    case Outcome::Passed:
      ++t.passed, ++report.passed;
      break;
    case Outcome::Failed:
      ++t.failed, ++report.failed;
      if (t.firstFailure.empty()) t.firstFailure = r.name + ": " + r.detail;
      break;
    case Outcome::Unsupported:
      ++t.unsupported, ++report.unsupported;
      break;
    case Outcome::Skipped:
      ++t.skipped, ++report.skipped;
      break;
  }
}

Expected<Report> runConformance(const BackendFactory& backendFactory, const BackendFactory& oracleFactory,
                                const Options& options) {
  Report report;
  {
    Expected<std::unique_ptr<Backend>> backend = backendFactory();
    if (!backend) return backend.error();
    report.backend = (*backend)->name();
    Expected<std::unique_ptr<Backend>> oracle = oracleFactory();
    if (!oracle) return oracle.error().withContext("the reference backend");
  }
  // Every primitive and high-level op gets a row, in Ops.def order, even
  // without cases, so that missing coverage is visible.
  std::map<std::string, size_t> index;
  std::vector<CaseSpec> cases = allCases();
  for (CaseSpec& spec : vendorOpCases()) cases.push_back(std::move(spec));
  std::set<OpKind> covered;
  for (const CaseSpec& spec : cases) covered.insert(spec.op);
  for (size_t k = 0; k < kNumOpKinds; ++k) {
    const OpInfo& info = opInfo(OpKind(k));
    if (info.category != OpCategory::Primitive && info.category != OpCategory::HighLevel) continue;
    // VendorOp's cases come from the registered vendor ops (ember/VendorOp.h): none without a plugin.
    if (OpKind(k) == OpKind::VendorOp && !covered.count(OpKind::VendorOp)) continue;
    index.emplace(info.name, report.ops.size());
    report.ops.push_back({info.name, categoryName(info.category), 0, 0, 0, 0, ""});
    if (!covered.count(OpKind(k)) && options.filter.empty())
      report.notes.push_back("no conformance cases for " + info.name + " yet");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < cases.size(); ++i) {
    CaseSpec& spec = cases[i];
    // Names are the case identity in reports; keep them unique.
    if (!seen.insert(spec.name).second) spec.name += "#" + std::to_string(i);
    if (!options.filter.empty() && spec.name.find(options.filter) == std::string::npos) continue;
    uint64_t seed = caseSeed(options.seed, i);
    if (options.beforeCase) options.beforeCase(spec.name);
    CaseResult result = options.isolate ? runIsolated(spec, seed, backendFactory, oracleFactory, options)
                                        : runCase(spec, seed, backendFactory, oracleFactory, options);
    tally(report, index, result, categoryName(opInfo(spec.op).category));
    if (options.onCase) options.onCase(result);
    report.cases.push_back(std::move(result));
  }
  if (!options.onnxDataDir.empty()) {
    EMBER_RETURN_IF_ERROR(runOnnxNodeTests(backendFactory, oracleFactory, options, report, index));
  }
  return report;
}

}  // namespace ember::conformance
