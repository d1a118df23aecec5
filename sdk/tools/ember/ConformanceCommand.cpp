// ember conformance: runs the conformance kit (sdk/conformance) on a backend
// against the reference backend and prints pass / fail / unsupported per op.
#include <unistd.h>

#include <cstdlib>
#include <iomanip>
#include <iostream>

#include "Commands.h"
#include "Conformance.h"
#include "Tool.h"
#include "ember/JsonWriter.h"

namespace ember::cli {
namespace {

std::string formatValue(double v) {
  std::ostringstream os;
  os << std::setprecision(9) << v;
  return os.str();
}

/// "Add/f32/7+7: output 'out0' differs at index 3: expected 0.5, got 0.75".
std::string describeFailure(const conformance::CaseResult& r) {
  std::string s = r.name + ": " + r.detail;
  if (r.mismatch && r.mismatch->index >= 0)
    s += ": expected " + formatValue(r.mismatch->expected) + ", got " + formatValue(r.mismatch->got);
  return s;
}

const conformance::CaseResult* firstFailure(const conformance::Report& report, const std::string& op) {
  for (const auto& r : report.cases)
    if (r.op == op && r.outcome == conformance::Outcome::Failed) return &r;
  return nullptr;
}

std::string reportJson(const conformance::Report& report, const conformance::Options& options) {
  JsonWriter json;
  json.beginObject();
  json.key("backend").value(report.backend);
  json.key("seed").value(uint64_t(options.seed));
  json.key("rtol").value(options.rtol);
  json.key("atol").value(options.atol);
  json.key("passed").value(report.passed);
  json.key("failed").value(report.failed);
  json.key("unsupported").value(report.unsupported);
  json.key("skipped").value(report.skipped);
  json.key("ops").beginObject();
  for (const auto& op : report.ops) {
    json.key(op.op).beginObject();
    json.key("category").value(op.category);
    json.key("passed").value(op.passed);
    json.key("failed").value(op.failed);
    json.key("unsupported").value(op.unsupported);
    json.key("skipped").value(op.skipped);
    if (const conformance::CaseResult* f = firstFailure(report, op.op)) {
      json.key("first_failure").beginObject();
      json.key("case").value(f->name);
      json.key("detail").value(f->detail);
      if (f->mismatch && f->mismatch->index >= 0) {
        json.key("output").value(f->mismatch->output);
        json.key("index").value(f->mismatch->index);
        json.key("expected").value(f->mismatch->expected);
        json.key("got").value(f->mismatch->got);
      }
      json.endObject();
    }
    json.endObject();
  }
  json.endObject();
  json.key("cases").beginArray();
  for (const auto& r : report.cases) {
    json.beginObject();
    json.key("name").value(r.name);
    json.key("op").value(r.op);
    json.key("outcome").value(conformance::outcomeName(r.outcome));
    if (!r.detail.empty()) json.key("detail").value(r.detail);
    json.endObject();
  }
  json.endArray();
  json.key("notes").beginArray();
  for (const auto& note : report.notes) json.value(note);
  json.endArray();
  json.endObject();
  return json.str();
}

/// What the command line asks for.
struct ConformanceArgs {
  std::string backendName, reportPath, onnxData, filter;
  std::optional<double> rtol, atol;
  std::vector<std::string> backendPaths;
  int64_t seed = 2024, timeout = 60;
  bool verbose = false, list = false, quiet = false, isolate = false;
};

void addConformanceOptions(OptionParser& parser, ConformanceArgs& a) {
  parser.addString("--backend", "NAME", &a.backendName,
                   "backend under test (required; see 'ember backends')");
  parser.addList("--backend-path", "DIR", &a.backendPaths,
                 "load backend plugins (lib*.so) from DIR; colon-separated list allowed");
  parser.addString("--report", "FILE.json", &a.reportPath,
                   "write passed, failed, unsupported, the per-op table and every case as JSON");
  parser.addString("--onnx-data", "DIR", &a.onnxData,
                   "also run the ONNX node tests in DIR (<test>/model.onnx, test_data_set_*)");
  parser.addString("--filter", "TEXT", &a.filter, "run only the cases whose name contains TEXT");
  parser.addInt("--seed", "N", &a.seed, "seed of the random inputs (default: 2024)");
  parser.addNonNegativeNumber("--rtol", "X", &a.rtol, "relative tolerance for floats (default: 1e-4)");
  parser.addNonNegativeNumber("--atol", "X", &a.atol, "absolute tolerance for floats (default: 1e-5)");
  parser.addFlag(
      "--isolate", &a.isolate,
      "run each case in a child process: a crash or a hang is a failed case, not the end of the run");
  parser.addInt("--timeout", "SECONDS", &a.timeout,
                "with --isolate, fail a case that runs longer (default: 60)", 1, 86400);
  parser.addFlag("--verbose", &a.verbose, "print every case, not only the per-op table");
  parser.addFlag("--quiet", &a.quiet, "print only the totals line");
  parser.addFlag("--list", &a.list, "list the operator suite's case names and exit");
}

conformance::Options conformanceOptions(const ConformanceArgs& a) {
  conformance::Options options;
  options.seed = uint64_t(a.seed);
  options.filter = a.filter;
  options.onnxDataDir = a.onnxData;
  options.isolate = a.isolate;
  options.caseTimeoutSeconds = unsigned(a.timeout);
  if (a.rtol) options.rtol = *a.rtol;
  if (a.atol) options.atol = *a.atol;
  return options;
}

/// Each case is named on stderr before it runs, so that a backend that
/// crashes the process (without --isolate) leaves the case's name behind.
/// A terminal gets one line, rewritten per case; a log gets every line.
/// With --verbose every case's outcome goes to stdout.
void addProgressHooks(conformance::Options& options, bool terminal, bool verbose) {
  options.beforeCase = [terminal](const std::string& name) {
    if (terminal)
      std::cerr << "\r\033[Krunning " << name << std::flush;
    else
      std::cerr << "running " << name << std::endl;
  };
  if (verbose)
    options.onCase = [](const conformance::CaseResult& r) {
      std::cout << std::left << std::setw(12) << conformance::outcomeName(r.outcome) << r.name;
      if (!r.detail.empty()) std::cout << "  (" << describeFailure(r).substr(r.name.size() + 2) << ")";
      std::cout << "\n";
    };
}

/// The per-op table (ops with at least one case), each op's first failure, and the notes.
void printOpTable(const conformance::Report& report) {
  std::cout << std::left << std::setw(24) << "op" << std::setw(12) << "category" << std::right << std::setw(8)
            << "passed" << std::setw(8) << "failed" << std::setw(13) << "unsupported" << std::setw(9)
            << "skipped"
            << "\n";
  for (const auto& op : report.ops) {
    if (op.passed + op.failed + op.unsupported + op.skipped == 0) continue;
    std::cout << std::left << std::setw(24) << op.op << std::setw(12) << op.category << std::right
              << std::setw(8) << op.passed << std::setw(8) << op.failed << std::setw(13) << op.unsupported
              << std::setw(9) << op.skipped << "\n";
    if (const conformance::CaseResult* f = firstFailure(report, op.op))
      std::cout << "    first failure: " << describeFailure(*f) << "\n";
  }
  for (const std::string& note : report.notes) std::cout << "note: " << note << "\n";
}

}  // namespace

int conformanceCommand(const std::vector<std::string>& args) {
  ConformanceArgs a;
  OptionParser parser(
      "ember conformance", "--backend NAME [--backend-path DIR] [--report FILE.json] [options]",
      "Runs the operator conformance kit on a backend: every primitive and high-level op of\n"
      "Ops.def over many shapes and attributes (f32, int and int8-quantized), built as small\n"
      "functions, compiled for the backend and for the reference backend, run on the same\n"
      "seeded random inputs and compared (floats: |got - expected| <= atol + rtol * |expected|;\n"
      "ints, bools and quantized values exactly). The backend's supports() decides which\n"
      "cases apply; the others are counted as unsupported. Cases the reference backend cannot\n"
      "run are skipped. With --onnx-data, ONNX's node tests also run against their golden data.\n"
      "Each case is named on stderr before it runs, so a crash names its case.\n"
      "Exit status: 0 when no case fails, 1 otherwise (also when --filter matches no case).");
  addConformanceOptions(parser, a);
  if (auto status = parser.parse(args)) return *status;

  conformance::Options options = conformanceOptions(a);
  if (a.list) {
    for (const std::string& name : conformance::listCases(options.seed)) std::cout << name << "\n";
    return kExitSuccess;
  }
  if (a.backendName.empty()) return parser.usageError("missing --backend NAME");
  if (Error e = loadBackends(a.backendPaths)) return fail(e);
  // Fail fast (one line) on an unknown backend, before any case runs.
  if (auto probe = BackendRegistry::global().create(a.backendName); !probe) return fail(probe.error());

  const bool terminal = isatty(STDERR_FILENO) != 0;
  addProgressHooks(options, terminal, a.verbose);
  auto factory = [&](const std::string& name) {
    return [name]() { return BackendRegistry::global().create(name); };
  };
  Expected<conformance::Report> report =
      conformance::runConformance(factory(a.backendName), factory("reference"), options);
  if (terminal) std::cerr << "\r\033[K" << std::flush;
  if (!report) return fail(report.error());
  if (!a.filter.empty() && report->cases.empty())
    return fail(makeError("no conformance case matches --filter '", a.filter, "' (see --list)"));

  if (!a.quiet) printOpTable(*report);
  std::cout << "conformance of backend '" << report->backend << "': " << report->passed << " passed, "
            << report->failed << " failed, " << report->unsupported << " unsupported, " << report->skipped
            << " skipped (" << report->cases.size() << " cases)\n";
  if (!a.reportPath.empty())
    if (Error e = writeTextFile(a.reportPath, reportJson(*report, options))) return fail(e);
  return report->failed == 0 ? kExitSuccess : kExitFailure;
}

}  // namespace ember::cli
