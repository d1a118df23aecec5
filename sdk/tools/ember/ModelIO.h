// Model inputs and outputs on the command line: --input NAME=FILE.npy,
// --random-inputs, --output-dir and the printed output summary.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ember/Backend.h"
#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/Tensor.h"
#include "ember/npu/Simulator.h"

namespace ember::cli {

class OptionParser;

/// A model's inputs or outputs: names and types, in model order.
using Signature = std::vector<std::pair<std::string, Type>>;

struct InputArgs {
  std::vector<std::string> inputs;  ///< NAME=FILE.npy, or FILE.npy for a one-input model
  bool randomInputs = false;
  int64_t seed = 0;

  /// Declares --input (with `inputHelp`), --random-inputs and --seed.
  void addTo(OptionParser& parser, const std::string& inputHelp =
                                       "value of model input NAME (FILE.npy alone for a one-input model)");
};

/// Reads the NAME=FILE.npy specs (--input, --bind) into values by name, for
/// shape specialisation (ImportOptions). A bare FILE.npy names no input and is
/// skipped; errors name the input and file.
Expected<std::map<std::string, Tensor>> readNamedInputs(const std::vector<std::string>& specs);

/// The graph inputs that import bound as constants: those of `given` that
/// `function` no longer has as inputs, sorted.
std::vector<std::string> boundInputNames(const std::map<std::string, Tensor>& given,
                                         const Function& function);

/// "bound:        shape = i64<2> [3, 1] (decides shapes; compiled for this value)" per bound input.
void printBoundInputs(std::ostream& os, const std::vector<std::string>& names,
                      const std::map<std::string, Tensor>& values);

/// Reads every --input and fills the rest with random data when asked. The
/// tensors are checked against `signature`; errors name the input and file.
Error prepareInputs(const Signature& signature, const InputArgs& args, ExecutionContext& context);

/// Deterministic pseudo-random data: f32/f16/bf16 uniform in [-1, 1), i32 and
/// i64 in [0, 10), raw quantized integers over their whole range, bool 0/1.
Tensor randomTensor(const Type& type, uint64_t& state);

/// Writes each output to DIR/<sanitised name>.npy; returns the paths written
/// (none when `dir` is empty: --output-dir not given).
Expected<std::vector<std::string>> writeOutputs(const std::string& dir, const Signature& outputs,
                                                const ExecutionContext& context);

/// "output <summary>" for each output of `outputs`, and "  written to PATH"
/// for those writeOutputs wrote; an error when the backend produced one not.
Error printOutputs(std::ostream& os, const Signature& outputs, const ExecutionContext& context,
                   const std::vector<std::string>& written);

/// "y f32<2x3>: [0.5, -1, ...]  min -1  max 2  mean 0.25".
void printTensorSummary(std::ostream& os, const std::string& name, const Tensor& tensor);

/// The tensor that an NPU bundle's output symbol holds in `dram` after a
/// simulation: i8q/u8q with the symbol's scale and zero point, or i32.
Tensor outputSymbolTensor(const npu::Symbol& symbol, const npu::DramImage& dram);

/// Whether data of kind `kind` fits an input symbol of type `type` (i8 <- i8q,
/// u8 <- u8q, i32 <- i32 or i32q).
bool symbolAcceptsKind(npu::SymbolType type, ElemKind kind);

/// An NPU bundle, or assembly (a path ending in .s) assembled first.
Expected<npu::Bundle> loadNpuProgram(const std::string& path);

}  // namespace ember::cli
