// Internal interface of the ONNX importer, shared by its .cpp files. Not part
// of the SDK: the public entry points are in ember/Importer.h.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/Importer.h"
#include "ember/Tensor.h"

// Declares `decl` from an Expected expression, returning its Error on failure
// (the importer's short name for EMBER_ASSIGN_OR_RETURN):
//   EMBER_TRY(Value x, b.input(0));
#define EMBER_TRY(decl, expr) EMBER_ASSIGN_OR_RETURN(decl, expr)

namespace ember::onnx_import {

/// An ONNX value during import. A value known at import time (initializer,
/// Constant, or the folded result of constant inputs) is kept as a tensor and
/// only becomes a Constant node when a non-folded node consumes it, so that
/// weights that are transposed at import time are not stored twice.
struct Value {
  Type type;
  NodeValue node;                          ///< set for graph values
  std::shared_ptr<const Tensor> constant;  ///< set for import-time constants
  std::string name;                        ///< name hint for a materialised constant

  bool isConstant() const { return constant != nullptr; }
  const Dims& dims() const { return type.dims; }
  size_t rank() const { return type.rank(); }

  static Value ofNode(NodeValue nv) { return Value{nv.type(), nv, nullptr, {}}; }
  static Value ofTensor(Tensor t, std::string name = {}) {
    auto shared = std::make_shared<const Tensor>(std::move(t));
    return Value{shared->type(), {}, shared, std::move(name)};
  }
};

/// Where tensor data may come from, and size limits.
struct TensorSource {
  std::string baseDir;  ///< directory of the model file ("" for bytes: no external data)
  int64_t maxElements = int64_t(1) << 32;
  int64_t maxTensorBytes = int64_t(16) << 30;
};

/// "FLOAT", "DOUBLE", ... for messages.
std::string onnxTypeName(int32_t dataType);
/// ONNX element type -> Ember kind; INT8/UINT8 become Int8Q/UInt8Q with scale 1, offset 0.
Expected<Type> typeFromOnnx(int32_t dataType, Dims dims);
/// Decodes a TensorProto (typed fields, raw_data or external data), checking
/// every size. Errors do not name the tensor; the caller adds that.
/// `cutRawData` is the tensor's raw_data when it was cut out of the parsed
/// bytes (splitInitializerPayloads); it replaces the proto's empty one.
Expected<Tensor> tensorFromProto(const onnx::TensorProto& proto, const TensorSource& source,
                                 std::optional<std::string_view> cutRawData = std::nullopt);

class GraphImporter;

/// What an op handler sees of the ONNX node it imports: typed access to the
/// inputs and attributes, and emit() to create Ember nodes (folded at import
/// time when all their inputs are constants).
class NodeBuilder {
 public:
  NodeBuilder(GraphImporter& importer, const onnx::NodeProto& proto, std::string name, int64_t opset)
      : importer_(importer), proto_(proto), name_(std::move(name)), opset_(opset) {}

  const onnx::NodeProto& proto() const { return proto_; }
  const std::string& opType() const { return proto_.op_type(); }
  const std::string& name() const { return name_; }
  int64_t opset() const { return opset_; }
  int64_t maxElements() const;
  /// Checks that an import-time constant of `type` may be allocated: within
  /// the per-tensor and total limits of ImportOptions. Call before allocating.
  Error reserveConstant(const Type& type);

  // ---- inputs --------------------------------------------------------------
  /// Number of inputs listed (absent optional inputs included).
  size_t numInputs() const { return size_t(proto_.input_size()); }
  /// Whether input `i` is listed and not the empty name.
  bool hasInput(size_t i) const;
  Expected<Value> input(size_t i) const;
  /// All listed inputs (none may be absent).
  Expected<std::vector<Value>> inputs() const;
  /// Input `i` as integers; it must be a constant (`what` names it in errors).
  Expected<std::vector<int64_t>> constInts(size_t i, std::string_view what) const;
  /// Input `i` as floating-point values; it must be a constant.
  Expected<std::vector<double>> constFloats(size_t i, std::string_view what) const;

  // ---- attributes ----------------------------------------------------------
  const onnx::AttributeProto* attr(std::string_view name) const;
  bool hasAttr(std::string_view name) const { return attr(name) != nullptr; }
  Expected<int64_t> attrInt(std::string_view name, std::optional<int64_t> dflt = std::nullopt) const;
  Expected<double> attrFloat(std::string_view name, std::optional<double> dflt = std::nullopt) const;
  Expected<std::string> attrString(std::string_view name,
                                   std::optional<std::string> dflt = std::nullopt) const;
  Expected<std::vector<int64_t>> attrInts(std::string_view name,
                                          std::optional<std::vector<int64_t>> dflt = std::nullopt) const;
  Expected<std::vector<double>> attrFloats(std::string_view name,
                                           std::optional<std::vector<double>> dflt = std::nullopt) const;
  Expected<Tensor> attrTensor(std::string_view name) const;

  // ---- building ------------------------------------------------------------
  /// Creates Ember node `kind` (or folds it into a constant). `suffix` names
  /// helper nodes ("conv1/nhwc"); the node that implements the op itself uses
  /// the ONNX node name (empty suffix).
  Expected<Value> emit(OpKind kind, const std::vector<Value>& inputs, Attributes attrs = {},
                       std::string_view suffix = {});
  Expected<std::vector<Value>> emitAll(OpKind kind, const std::vector<Value>& inputs, Attributes attrs = {},
                                       std::string_view suffix = {});
  /// Convenience wrappers.
  Expected<Value> reshape(const Value& v, Dims dims, std::string_view suffix);
  Expected<Value> transpose(const Value& v, std::vector<int64_t> perm, std::string_view suffix);
  /// A rank-0 constant of `kind`.
  Value scalar(ElemKind kind, double value) const;
  Value constant(Tensor t) const { return Value::ofTensor(std::move(t), name_ + "/const"); }

  // ---- outputs -------------------------------------------------------------
  size_t numOutputs() const { return size_t(proto_.output_size()); }
  /// Defines output `i` (ignored when the node does not list it).
  Error setOutput(size_t i, Value v);
  /// Whether output `i` is listed and consumed by a node or graph output.
  bool outputUsed(size_t i) const;
  /// Fails when any output from `first` on is consumed (outputs the importer
  /// does not produce, such as MaxPool's Indices).
  Error requireUnused(size_t first, std::string_view what) const;
  /// Asks shape specialisation to bind the given graph inputs behind `v` (a
  /// value-dependent output shape is exact only for a constant operand); unlike
  /// a required constant, import goes on with `v` as a graph value.
  void preferConstant(const Value& v);
  /// Adds a function output `name` after the model's own (a valid count).
  void addExtraOutput(std::string name, Value v);

 private:
  GraphImporter& importer_;
  const onnx::NodeProto& proto_;
  std::string name_;
  int64_t opset_;
};

using OpHandler = std::function<Error(NodeBuilder&)>;
using OpTable = std::unordered_map<std::string, OpHandler>;
/// The handler for a default-domain op type, or nullptr.
const OpHandler* findOpHandler(const std::string& opType);
// Each registers one family of handlers (OnnxOps*.cpp).
void registerMathOps(OpTable& table);
void registerTensorOps(OpTable& table);
void registerNNOps(OpTable& table);
void registerIndexingOps(OpTable& table);
void registerLossOps(OpTable& table);
void registerRecurrentOps(OpTable& table);
void registerValueDependentOps(OpTable& table);
void registerQuantizeOps(OpTable& table);
void registerRoiAlignOps(OpTable& table);
void registerBitShiftOps(OpTable& table);
void registerRandomOps(OpTable& table);

/// Maps `axis` in [-rank, rank) to [0, rank), or fails naming `what`.
Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank, std::string_view what = "axis");
/// Normalises, sorts and de-duplicates a list of axes.
Expected<std::vector<int64_t>> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank);
/// Product of dims[begin, end).
int64_t product(const Dims& dims, size_t begin, size_t end);
/// The normalised "axis" of Softmax, LogSoftmax and Hardmax: before opset 13
/// its default is 1 and the input is coerced to 2-D there, so axis == rank fails.
Expected<int64_t> softmaxAxis(NodeBuilder& b, int64_t rank);
/// Gather and GatherElements: `kind` of (data, indices) along the normalised "axis".
Error importGatherAlongAxis(NodeBuilder& b, OpKind kind);

/// Imports one ONNX graph into a Function.
class GraphImporter {
 public:
  /// `bind` names the inputs of options.inputValues to import as constants.
  GraphImporter(Function& function, const ImportOptions& options, TensorSource source, int64_t opset,
                std::set<std::string> bind = {})
      : function_(function),
        options_(options),
        source_(std::move(source)),
        opset_(opset),
        bind_(std::move(bind)) {}

  /// With `releaseInitializerBytes` (the last import of a model), each
  /// initializer's raw_data is freed once its tensor exists: the model's
  /// weights are then held once, not twice, through the rest of the import.
  /// `cutPayloads`: the initializers' raw_data cut out before parsing, by
  /// initializer index (empty when nothing was cut).
  Error importGraph(onnx::GraphProto& graph, bool releaseInitializerBytes,
                    std::span<const std::optional<std::string_view>> cutPayloads = {});

  Function& function() { return function_; }
  const ImportOptions& options() const { return options_; }
  const TensorSource& source() const { return source_; }

  Expected<Value> lookup(const std::string& name) const;
  Error define(const std::string& name, Value v);
  bool isUsed(const std::string& name) const { return used_.count(name) != 0; }
  /// The graph value for `v`, creating (once) a Constant node for a constant.
  NodeValue materialize(const Value& v);
  /// Counts a constant of `type` against ImportOptions' limits (per tensor and
  /// in total), or fails naming the limit.
  Error chargeConstant(const Type& type);
  /// Checks a graph value's size against ImportOptions::maxTensorBytes.
  Error checkValueSize(const Type& type) const;
  /// The error for an operand `what` that must be a constant but is the graph
  /// value `v`: names the graph inputs it depends on and how to bind them,
  /// and remembers them in shapeDecidingInputs().
  Error notConstant(std::string_view what, const Value& v);
  /// The graph inputs behind the last notConstant() error.
  const std::vector<std::string>& shapeDecidingInputs() const { return shapeDecidingInputs_; }
  /// Records the graph inputs behind `v` as ones whose values are worth binding.
  void preferConstant(const Value& v);
  /// Graph inputs recorded by preferConstant().
  const std::set<std::string>& preferredBindings() const { return preferredBindings_; }
  /// A function output added after the model's own outputs.
  void addExtraOutput(std::string name, Value v) {
    extraOutputs_.emplace_back(std::move(name), std::move(v));
  }

 private:
  Error importInitializers(onnx::GraphProto& graph, bool releaseBytes,
                           std::span<const std::optional<std::string_view>> cutPayloads);
  Error importInputs(const onnx::GraphProto& graph);
  /// The constant value of graph input `name` when it is bound (checked
  /// against the declared type), or nullopt.
  Expected<std::optional<Tensor>> boundValue(const std::string& name, const Type& declared) const;
  Error importNode(const onnx::NodeProto& node, size_t index);
  Error importOutputs(const onnx::GraphProto& graph);
  /// The Placeholders (graph inputs) that `v` depends on, sorted.
  std::vector<std::string> inputsBehind(const Value& v) const;

  Function& function_;
  const ImportOptions& options_;
  TensorSource source_;
  int64_t opset_;
  std::set<std::string> bind_;
  std::vector<std::string> shapeDecidingInputs_;
  std::set<std::string> preferredBindings_;
  std::vector<std::pair<std::string, Value>> extraOutputs_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_set<std::string> used_;
  int64_t constantBytes_ = 0;
  /// Constant nodes already created, by Value::constant. The map shares
  /// ownership so that a freed tensor's address cannot be reused by another
  /// constant and alias its node.
  std::unordered_map<const Tensor*, std::pair<std::shared_ptr<const Tensor>, NodeValue>> materialized_;
};

}  // namespace ember::onnx_import
