// ONNX's backend node tests as part of the conformance kit (internal).
#pragma once

#include <map>
#include <string>

#include "Conformance.h"

namespace ember::conformance {

/// Adds one case result to the report's totals and per-op table.
void tally(Report& report, std::map<std::string, size_t>& index, const CaseResult& result,
           const std::string& category);

/// Runs every <options.onnxDataDir>/<test>/model.onnx on the backend and
/// compares with ONNX's golden outputs. A test is skipped when Ember cannot
/// import it or when the reference backend itself disagrees with the golden
/// data, so that only the backend under test is judged.
Error runOnnxNodeTests(const BackendFactory& backend, const BackendFactory& oracle, const Options& options,
                       Report& report, std::map<std::string, size_t>& index);

}  // namespace ember::conformance
