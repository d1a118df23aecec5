// The conformance kit: a cross-backend operator suite. Every primitive and
// high-level op of Ops.def is built as a small ember::Function over many shapes
// and attributes, compiled for the backend under test and for the reference
// backend, run on the same seeded random inputs, and compared with tolerances.
// The backend's supports() decides which cases apply.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/Backend.h"
#include "ember/Error.h"
#include "ember/Graph.h"

namespace ember::conformance {

/// Makes a fresh instance of a backend (the one under test or the oracle).
using BackendFactory = std::function<Expected<std::unique_ptr<Backend>>()>;

struct Options {
  uint64_t seed = 2024;
  /// Floats match when |got - expected| <= atol + rtol * |expected|; other
  /// kinds (ints, bools, quantized) must match exactly.
  double rtol = 1e-4;
  double atol = 1e-5;
  /// Runs only cases whose name contains this text ("" = all).
  std::string filter;
  /// Run the graph optimizer on each case (off by default: a case tests one op).
  bool optimizeGraph = false;
  /// Directory of ONNX node tests (<dir>/<test>/model.onnx and
  /// test_data_set_*/{input,output}_N.pb); empty = skip them.
  std::string onnxDataDir;
  /// ONNX golden-data tolerances (ONNX's own runner uses rtol 1e-3).
  double onnxRtol = 1e-3;
  double onnxAtol = 1e-5;
  /// Run each case of the operator suite in a forked child process, so that a
  /// crash (or a hang past caseTimeoutSeconds) is a failed case, not the end
  /// of the run.
  bool isolate = false;
  unsigned caseTimeoutSeconds = 60;
  /// Called with each case's name just before it runs, so that a crash of
  /// the backend can be traced to its case; may be empty.
  std::function<void(const std::string&)> beforeCase;
  /// Called after each case (progress printing); may be empty.
  std::function<void(const struct CaseResult&)> onCase;
};

enum class Outcome { Passed, Failed, Unsupported, Skipped };
const char* outcomeName(Outcome outcome);

/// The first element that differs.
struct Mismatch {
  std::string output;
  int64_t index = 0;
  double expected = 0;
  double got = 0;
};

struct CaseResult {
  std::string op;    ///< Ops.def name, or "onnx:<OpType>" for an ONNX node test
  std::string name;  ///< unique case name, e.g. "Add/f32/2x3x4+4"
  Outcome outcome = Outcome::Failed;
  /// Why it failed, was unsupported or skipped (one line).
  std::string detail;
  std::optional<Mismatch> mismatch;
};

/// Per-op tallies, in Ops.def order, then ONNX op types.
struct OpTally {
  std::string op;
  std::string category;  ///< primitive, high-level, onnx
  int passed = 0, failed = 0, unsupported = 0, skipped = 0;
  std::string firstFailure;  ///< "<case>: <detail>" of the first failed case
};

struct Report {
  std::string backend;
  int passed = 0, failed = 0, unsupported = 0, skipped = 0;
  std::vector<OpTally> ops;
  std::vector<CaseResult> cases;
  /// Remarks about coverage (ops without cases, skipped data sets).
  std::vector<std::string> notes;
};

/// Runs the operator suite (and the ONNX node tests when asked) on `backend`,
/// comparing with `oracle`. Fails only when a backend cannot be created.
Expected<Report> runConformance(const BackendFactory& backend, const BackendFactory& oracle,
                                const Options& options);

/// The names of every case of the operator suite, in order.
std::vector<std::string> listCases(uint64_t seed = 2024);

/// Whether `a` matches `expected`: same type, values within tolerance.
/// Returns a description of the first difference.
std::optional<Mismatch> compareTensors(const std::string& output, const Tensor& expected, const Tensor& got,
                                       double rtol, double atol, std::string* typeError);

}  // namespace ember::conformance
