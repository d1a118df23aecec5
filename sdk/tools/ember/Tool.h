// Pieces shared by the `ember` subcommands: error reporting, the options of
// every command that compiles a model, backend loading, model import and the
// report printed and written as JSON.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "DeviceReportFormat.h"
#include "Options.h"
#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/IR.h"
#include "ember/Importer.h"
#include "ember/JsonWriter.h"
#include "ember/Quantization.h"
#include "ember/Runtime.h"

namespace ember::cli {

/// Prints "ember: <message>" on stderr; returns kExitFailure.
int fail(const Error& error);
int fail(const std::string& message);

/// The options of every subcommand that imports and compiles a model.
struct PipelineArgs {
  std::string model;
  std::string backend = "reference";
  std::vector<std::string> backendPaths;
  std::vector<std::string> dims;
  std::string config;
  std::vector<std::string> backendOptions;
  std::string fallback;  ///< --fallback: comma-separated backends, or "none"
  std::string quantize;
  std::string quantizeFor;
  std::string memoryLimit;
  bool noGraphOpt = false;
  bool noIROpt = false;
  bool verifyEachPass = false;
  std::vector<std::string> disabledPasses;  ///< --disable-pass NAME
  int64_t passLimit = -1;                   ///< --pass-limit N (opt-bisect)

  /// Declares the options on `parser` (and the MODEL positional, optional
  /// when `modelRequired` is false).
  void addTo(OptionParser& parser, bool modelRequired = true);
  /// Checks what parse() cannot: --dim syntax and options not available yet.
  /// Returns the exit status when the command must stop.
  std::optional<int> validate(const OptionParser& parser);
  CompileOptions compileOptions() const;
  /// Creates the --backend and applies --config and --backend-option.
  Expected<std::unique_ptr<Backend>> createBackend() const;

  uint64_t memoryLimitBytes = 0;  ///< parsed --memory-limit
  /// Names `--memory-limit VALUE` in an error that the limit caused (the
  /// importer's and the pipeline's messages give only the byte count).
  Error nameMemoryLimit(Error error) const;

  ImportOptions importOptions;  ///< filled by validate()
  /// --quantize: the profile (loaded by validate()) and what conversion did.
  std::shared_ptr<const QuantizationProfile> profile;
  std::shared_ptr<QuantizationReport> quantizationReport;
};

/// Registers the built-in backends, then loads the plugins of every
/// directory in EMBER_BACKEND_PATH and `paths` (each colon separated).
Error loadBackends(const std::vector<std::string>& paths);

/// A model imported into its own module.
struct LoadedModel {
  std::unique_ptr<Module> module;
  Function* function = nullptr;
};
Expected<LoadedModel> importModel(const PipelineArgs& args);

/// Replaces every character outside [A-Za-z0-9._-] with '_' (docs/design.md, the CLI contract).
std::string sanitizeFileName(std::string_view name);

/// "1.5 KiB", "12 B".
std::string formatBytes(uint64_t bytes);
/// "12.3 ms", "1.20 s".
std::string formatSeconds(double seconds);

/// Prints the human-readable compile/run report; `device` (an accelerator's
/// figures) adds the totals and the per-layer table.
void printReport(std::ostream& os, const std::string& backend, const CompileReport& report,
                 std::optional<double> runSecondsMedian, int64_t repeat,
                 const DeviceReport* device = nullptr);
/// What the import decided from given values: inputs bound as constants
/// (shape specialisation) and value-dependent outputs compiled at their bound.
struct ImportNotes {
  std::vector<std::pair<std::string, const Tensor*>> boundInputs;
  std::vector<std::string> warnings;
};

/// The --report-json document (keys in docs/cli.md).
/// With --quantize, `quantization` adds `quantized_nodes` and `float_nodes`;
/// `device` adds the NPU keys and `layers`; `notes` adds `bound_inputs` and `warnings`;
/// `moreKeys` writes further top-level keys (the end-to-end latency of a run).
std::string reportJson(const std::string& backend, const CompileReport& report,
                       std::optional<double> runSecondsMedian, int64_t repeat, int64_t threads,
                       const QuantizationReport* quantization = nullptr, const DeviceReport* device = nullptr,
                       const ImportNotes* notes = nullptr,
                       const std::function<void(JsonWriter&)>& moreKeys = {});

/// Writes `text` to `path`, naming the path on failure.
Error writeTextFile(const std::string& path, const std::string& text);

/// `ember dump --stage ir`'s text: the instruction IR, or every partition's IR
/// headed by its backend, or a note that no compute node is left.
std::string compiledIRText(const CompiledModel& model);

}  // namespace ember::cli
