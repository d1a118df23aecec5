// The ONNX importer: model parsing, graph inputs and outputs, and the
// NodeBuilder that op handlers (OnnxOps.cpp) use to create Ember nodes.

#include "OnnxImporter.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "OnnxPayloadSplit.h"
#include "ember/Importer.h"
#include "ember/Kernels.h"
#include "ember/TextEscape.h"

namespace ember {
namespace onnx_import {
namespace {

bool isDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

/// Reads integer element i of an i32/i64 tensor exactly (doubles would lose
/// INT64_MAX, which Slice uses as "to the end").
int64_t intElement(const Tensor& t, int64_t i) {
  return t.type().kind == ElemKind::I64 ? t.as<int64_t>()[i] : int64_t(t.as<int32_t>()[i]);
}

}  // namespace

// ---- NodeBuilder: inputs ------------------------------------------------------

int64_t NodeBuilder::maxElements() const { return importer_.options().maxElements; }

Error NodeBuilder::reserveConstant(const Type& type) { return importer_.chargeConstant(type); }

bool NodeBuilder::hasInput(size_t i) const { return i < numInputs() && !proto_.input(int(i)).empty(); }

Expected<Value> NodeBuilder::input(size_t i) const {
  if (!hasInput(i)) return makeError("missing input ", i);
  return importer_.lookup(proto_.input(int(i)));
}

Expected<std::vector<Value>> NodeBuilder::inputs() const {
  std::vector<Value> result;
  for (size_t i = 0; i < numInputs(); ++i) {
    EMBER_TRY(Value v, input(i));
    result.push_back(std::move(v));
  }
  return result;
}

Expected<std::vector<int64_t>> NodeBuilder::constInts(size_t i, std::string_view what) const {
  EMBER_TRY(Value v, input(i));
  if (!v.isConstant()) return importer_.notConstant(what, v);
  const ElemKind kind = v.type.kind;
  if (kind != ElemKind::I64 && kind != ElemKind::I32)
    return makeError("input '", what, "' must be int32 or int64, not ", elemKindName(kind));
  std::vector<int64_t> result;
  for (int64_t k = 0; k < v.constant->type().numElements(); ++k) result.push_back(intElement(*v.constant, k));
  return result;
}

Expected<std::vector<double>> NodeBuilder::constFloats(size_t i, std::string_view what) const {
  EMBER_TRY(Value v, input(i));
  if (!v.isConstant()) return importer_.notConstant(what, v);
  std::vector<double> result;
  for (int64_t k = 0; k < v.constant->type().numElements(); ++k)
    result.push_back(v.type.kind == ElemKind::I64 ? double(intElement(*v.constant, k))
                                                  : v.constant->elementAsDouble(k));
  return result;
}

// ---- NodeBuilder: attributes -----------------------------------------------------

const onnx::AttributeProto* NodeBuilder::attr(std::string_view name) const {
  for (const auto& a : proto_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

namespace {
using AP = onnx::AttributeProto;

// Old exporters may leave `type` unset; then the filled field decides.
bool attrIs(const AP& a, AP::AttributeType type, bool filled) {
  return a.type() == type || (a.type() == AP::UNDEFINED && filled);
}
Error attrTypeError(const AP& a, const char* expected) {
  return makeError("attribute '", a.name(), "' must be ", expected);
}
}  // namespace

Expected<int64_t> NodeBuilder::attrInt(std::string_view name, std::optional<int64_t> dflt) const {
  const AP* a = attr(name);
  if (!a) {
    if (dflt) return *dflt;
    return makeError("missing attribute '", name, "'");
  }
  if (!attrIs(*a, AP::INT, a->has_i())) return attrTypeError(*a, "an int");
  return int64_t(a->i());
}

Expected<double> NodeBuilder::attrFloat(std::string_view name, std::optional<double> dflt) const {
  const AP* a = attr(name);
  if (!a) {
    if (dflt) return *dflt;
    return makeError("missing attribute '", name, "'");
  }
  if (!attrIs(*a, AP::FLOAT, a->has_f())) return attrTypeError(*a, "a float");
  return double(a->f());
}

Expected<std::string> NodeBuilder::attrString(std::string_view name, std::optional<std::string> dflt) const {
  const AP* a = attr(name);
  if (!a) {
    if (dflt) return *dflt;
    return makeError("missing attribute '", name, "'");
  }
  if (!attrIs(*a, AP::STRING, a->has_s())) return attrTypeError(*a, "a string");
  return a->s();
}

Expected<std::vector<int64_t>> NodeBuilder::attrInts(std::string_view name,
                                                     std::optional<std::vector<int64_t>> dflt) const {
  const AP* a = attr(name);
  if (!a) {
    if (dflt) return *dflt;
    return makeError("missing attribute '", name, "'");
  }
  if (!attrIs(*a, AP::INTS, a->ints_size() > 0)) return attrTypeError(*a, "a list of ints");
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

Expected<std::vector<double>> NodeBuilder::attrFloats(std::string_view name,
                                                      std::optional<std::vector<double>> dflt) const {
  const AP* a = attr(name);
  if (!a) {
    if (dflt) return *dflt;
    return makeError("missing attribute '", name, "'");
  }
  if (!attrIs(*a, AP::FLOATS, a->floats_size() > 0)) return attrTypeError(*a, "a list of floats");
  return std::vector<double>(a->floats().begin(), a->floats().end());
}

Expected<Tensor> NodeBuilder::attrTensor(std::string_view name) const {
  const AP* a = attr(name);
  if (!a) return makeError("missing attribute '", name, "'");
  if (!attrIs(*a, AP::TENSOR, a->has_t())) return attrTypeError(*a, "a tensor");
  auto t = tensorFromProto(a->t(), importer_.source());
  if (!t) return t.error().withContext("attribute '" + std::string(name) + "'");
  if (Error e = importer_.chargeConstant(t->type()))
    return e.withContext("attribute '" + std::string(name) + "'");
  return t;
}

// ---- NodeBuilder: building -------------------------------------------------------

Expected<std::vector<Value>> NodeBuilder::emitAll(OpKind kind, const std::vector<Value>& inputs,
                                                  Attributes attrs, std::string_view suffix) {
  std::vector<Type> inputTypes;
  inputTypes.reserve(inputs.size());
  bool allConstant = true;
  for (const Value& v : inputs) {
    inputTypes.push_back(v.type);
    allConstant = allConstant && v.isConstant();
  }
  const std::string base = suffix.empty() ? name_ : name_ + "/" + std::string(suffix);
  // The type rule's message has no node context; the caller adds the ONNX one.
  EMBER_TRY(std::vector<Type> resultTypes, inferResultTypes(kind, inputTypes, attrs));
  for (const Type& t : resultTypes) {
    if (Error e = checkDims(t.dims, maxElements()))
      return e.withContext(std::string(opName(kind)) + " result");
    if (Error e = importer_.checkValueSize(t)) return e.withContext(std::string(opName(kind)) + " result");
  }

  // Constant inputs: evaluate primitives now, so that shape subgraphs and
  // weight transposes leave only constants behind.
  if (allConstant && opInfo(kind).category == OpCategory::Primitive &&
      kernelSupports(kind, inputTypes, resultTypes)) {
    for (const Type& t : resultTypes)
      if (Error e = reserveConstant(t)) return e.withContext("folding " + std::string(opName(kind)));
    std::vector<Tensor> results;
    results.reserve(resultTypes.size());
    for (const Type& t : resultTypes) results.emplace_back(t);
    std::vector<ConstTensorRef> inRefs;
    inRefs.reserve(inputs.size());
    for (const Value& v : inputs) inRefs.push_back(v.constant->ref());
    std::vector<TensorRef> outRefs;
    outRefs.reserve(results.size());
    for (Tensor& t : results) outRefs.push_back(t.ref());
    if (!runKernel(kind, attrs, inRefs, outRefs)) {
      std::vector<Value> values;
      values.reserve(results.size());
      for (Tensor& t : results) values.push_back(Value::ofTensor(std::move(t), base));
      return values;
    }
    // A kernel failure leaves the node to the graph.
  }

  std::vector<NodeValue> operands;
  operands.reserve(inputs.size());
  for (const Value& v : inputs) operands.push_back(importer_.materialize(v));
  Function& fn = importer_.function();
  EMBER_TRY(Node * node, fn.create(kind, base, std::move(operands), std::move(attrs)));
  std::vector<Value> values;
  for (unsigned r = 0; r < node->numResults(); ++r) values.push_back(Value::ofNode(node->result(r)));
  return values;
}

Expected<Value> NodeBuilder::emit(OpKind kind, const std::vector<Value>& inputs, Attributes attrs,
                                  std::string_view suffix) {
  EMBER_TRY(std::vector<Value> values, emitAll(kind, inputs, std::move(attrs), suffix));
  assert(values.size() == 1 && "emit() is for single-result ops");
  return values[0];
}

Expected<Value> NodeBuilder::reshape(const Value& v, Dims dims, std::string_view suffix) {
  if (v.dims() == dims) return v;
  return emit(OpKind::Reshape, {v}, Attributes{{"shape", std::move(dims)}}, suffix);
}

Expected<Value> NodeBuilder::transpose(const Value& v, std::vector<int64_t> perm, std::string_view suffix) {
  return emit(OpKind::Transpose, {v}, Attributes{{"perm", std::move(perm)}}, suffix);
}

Value NodeBuilder::scalar(ElemKind kind, double value) const {
  Tensor t(isQuantized(kind) ? Type(kind, {}, 1.0f, 0) : Type(kind, {}));
  t.setElementFromDouble(0, value);
  return Value::ofTensor(std::move(t), name_ + "/const");
}

// ---- NodeBuilder: outputs --------------------------------------------------------

Error NodeBuilder::setOutput(size_t i, Value v) {
  if (i >= numOutputs() || proto_.output(int(i)).empty()) return Error::success();
  const std::string& outName = proto_.output(int(i));
  if (v.isConstant()) v.name = outName;
  return importer_.define(outName, std::move(v));
}

bool NodeBuilder::outputUsed(size_t i) const {
  return i < numOutputs() && !proto_.output(int(i)).empty() && importer_.isUsed(proto_.output(int(i)));
}

void NodeBuilder::preferConstant(const Value& v) { importer_.preferConstant(v); }

void NodeBuilder::addExtraOutput(std::string name, Value v) {
  importer_.addExtraOutput(std::move(name), std::move(v));
}

Error NodeBuilder::requireUnused(size_t first, std::string_view what) const {
  for (size_t i = first; i < numOutputs(); ++i)
    if (outputUsed(i))
      return makeError("output '", proto_.output(int(i)), "' (", what, ") is used but unsupported");
  return Error::success();
}

// ---- GraphImporter ---------------------------------------------------------------

Expected<Value> GraphImporter::lookup(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return makeError("input '", name, "' is not defined by an earlier node, initializer or graph input");
  return it->second;
}

namespace {

/// Graph names reach YAML profiles, JSON reports and bundles, which hold only
/// UTF-8; ONNX's proto2 strings are not checked by protobuf.
Error checkUtf8Name(std::string_view what, const std::string& name) {
  const size_t bad = invalidUtf8Offset(name);
  if (bad == std::string::npos) return Error::success();
  return makeError(what, " '", name, "' is not valid UTF-8 (at byte offset ", bad, ")");
}

}  // namespace

Error GraphImporter::define(const std::string& name, Value v) {
  EMBER_RETURN_IF_ERROR(checkUtf8Name("value", name));
  if (!values_.emplace(name, std::move(v)).second) return makeError("value '", name, "' is defined twice");
  return Error::success();
}

Error GraphImporter::checkValueSize(const Type& type) const {
  if (Error e = checkTensorBytes(type, options_.maxTensorBytes))
    return e.withContext("the per-tensor limit (ImportOptions::maxTensorBytes) is exceeded");
  return Error::success();
}

Error GraphImporter::chargeConstant(const Type& type) {
  EMBER_RETURN_IF_ERROR(checkValueSize(type));
  const int64_t bytes = int64_t(type.sizeInBytes());
  if (bytes > options_.maxConstantBytes - constantBytes_)
    return makeError("the model's constants need more than the limit of ", options_.maxConstantBytes,
                     " bytes (ImportOptions::maxConstantBytes)");
  constantBytes_ += bytes;
  return Error::success();
}

NodeValue GraphImporter::materialize(const Value& v) {
  if (!v.isConstant()) return v.node;
  auto it = materialized_.find(v.constant.get());
  if (it != materialized_.end()) return it->second.second;
  Node* node = function_.createConstant(v.name.empty() ? "constant" : v.name, v.constant);
  materialized_.emplace(v.constant.get(), std::make_pair(v.constant, node->result()));
  return node->result();
}

Error GraphImporter::importInitializers(onnx::GraphProto& graph, bool releaseBytes,
                                        std::span<const std::optional<std::string_view>> cutPayloads) {
  if (graph.sparse_initializer_size() > 0)
    return makeError("sparse initializer '", graph.sparse_initializer(0).values().name(), "' is unsupported");
  for (int i = 0; i < graph.initializer_size(); ++i) {
    onnx::TensorProto& init = *graph.mutable_initializer(i);
    const auto cut = size_t(i) < cutPayloads.size() ? cutPayloads[size_t(i)] : std::nullopt;
    auto tensor = tensorFromProto(init, source_, cut);
    if (!tensor) return tensor.error().withContext("initializer '" + init.name() + "'");
    if (init.name().empty()) return makeError("an initializer has no name");
    if (Error e = chargeConstant(tensor->type())) return e.withContext("initializer '" + init.name() + "'");
    if (Error e = define(init.name(), Value::ofTensor(tensor.take(), init.name()))) return e;
    // clear() would keep the capacity; swapping with an empty string frees it.
    if (releaseBytes) std::string().swap(*init.mutable_raw_data());
  }
  return Error::success();
}

Expected<std::optional<Tensor>> GraphImporter::boundValue(const std::string& name,
                                                          const Type& declared) const {
  const Tensor* value = nullptr;
  if (auto it = options_.boundInputs.find(name); it != options_.boundInputs.end())
    value = &it->second;
  else if (auto given = options_.inputValues.find(name);
           given != options_.inputValues.end() && bind_.count(name))
    value = &given->second;
  if (!value) return std::optional<Tensor>();
  const Type& got = value->type();
  if (got.kind != declared.kind || got.dims != declared.dims)
    return makeError("the value given has type ", got.str(), " but the model declares ", declared.str());
  Tensor copy(declared);  // takes the declared quantization, if any
  if (copy.sizeInBytes() > 0) std::memcpy(copy.data(), value->data(), copy.sizeInBytes());
  return std::optional<Tensor>(std::move(copy));
}

namespace {

/// Every value the options give names an input of the graph.
Error checkGivenInputs(const onnx::GraphProto& graph, const ImportOptions& options) {
  std::set<std::string> declared;
  std::string names;
  for (const auto& input : graph.input()) {
    declared.insert(input.name());
    names += (names.empty() ? "'" : ", '") + input.name() + "'";
  }
  for (const auto* values : {&options.inputValues, &options.boundInputs})
    for (const auto& [name, value] : *values)
      if (!declared.count(name))
        return makeError("a value is given for '", name, "', but the model has no input '", name,
                         "' (inputs: ", names, ")");
  return Error::success();
}

/// An input's static dims; a symbolic one must be pinned by --dim.
Expected<Dims> inputDims(const onnx::TensorShapeProto& shape, const std::string& what,
                         const std::map<std::string, int64_t>& dimValues) {
  Dims dims;
  for (int i = 0; i < shape.dim_size(); ++i) {
    const auto& dim = shape.dim(i);
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0) return makeError(what, " has negative dimension ", dim.dim_value());
      dims.push_back(dim.dim_value());
      continue;
    }
    const std::string param = dim.has_dim_param() ? dim.dim_param() : std::string();
    auto pinned = dimValues.find(param);
    if (param.empty() || pinned == dimValues.end()) {
      if (param.empty())
        return makeError(what, " has unknown dimension ", i, "; give it a static size in the model");
      return makeError(what, " has symbolic dimension '", param, "'; pin it with --dim ", param, "=VALUE");
    }
    if (pinned->second < 0) return makeError("--dim ", param, "=", pinned->second, " is negative");
    dims.push_back(pinned->second);
  }
  return dims;
}

}  // namespace

Error GraphImporter::importInputs(const onnx::GraphProto& graph) {
  EMBER_RETURN_IF_ERROR(checkGivenInputs(graph, options_));
  for (const auto& input : graph.input()) {
    const std::string& name = input.name();
    // IR < 4: initializers are also listed as inputs; they stay constants.
    if (values_.count(name)) continue;
    const std::string what = "input '" + name + "'";
    if (!input.type().has_tensor_type()) return makeError(what, " is not a tensor");
    const auto& tensorType = input.type().tensor_type();
    if (!tensorType.has_shape()) return makeError(what, " has no shape");
    EMBER_ASSIGN_OR_RETURN(Dims dims, inputDims(tensorType.shape(), what, options_.dimValues));
    if (Error e = checkDims(dims, options_.maxElements)) return e.withContext(what);
    auto type = typeFromOnnx(tensorType.elem_type(), dims);
    if (!type) return type.error().withContext(what);
    if (Error e = checkValueSize(*type)) return e.withContext(what);
    if (name.empty()) return makeError("a graph input has no name");
    Expected<std::optional<Tensor>> boundOrError = boundValue(name, *type);
    if (!boundOrError) return boundOrError.error().withContext(what);
    std::optional<Tensor> bound = boundOrError.take();
    if (bound) {
      // Shape specialisation: the input is a constant from here on.
      if (Error e = chargeConstant(bound->type())) return e.withContext(what);
      if (Error e = define(name, Value::ofTensor(std::move(*bound), name))) return e;
      continue;
    }
    Node* placeholder = function_.createPlaceholder(name, type.take());
    if (Error e = define(name, Value::ofNode(placeholder->result()))) return e;
  }
  return Error::success();
}

std::vector<std::string> GraphImporter::inputsBehind(const Value& v) const {
  std::vector<std::string> names;
  if (v.isConstant()) return names;
  std::vector<const Node*> pending = {v.node.node};
  std::set<const Node*> visited;
  while (!pending.empty()) {
    const Node* node = pending.back();
    pending.pop_back();
    if (!node || !visited.insert(node).second) continue;
    if (node->kind() == OpKind::Placeholder) names.push_back(node->name());
    for (const NodeValue& in : node->inputs()) pending.push_back(in.node);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void GraphImporter::preferConstant(const Value& v) {
  for (std::string& name : inputsBehind(v)) preferredBindings_.insert(std::move(name));
}

Error GraphImporter::notConstant(std::string_view what, const Value& v) {
  // The Placeholders that v's node depends on are the graph inputs behind it.
  shapeDecidingInputs_ = inputsBehind(v);
  std::string names, flags;
  for (const std::string& name : shapeDecidingInputs_) {
    names += (names.empty() ? "'" : ", '") + name + "'";
    flags += (flags.empty() ? "" : " ") + name + "=FILE.npy";
  }
  if (names.empty()) return makeError("input '", what, "' must be a constant under static shapes");
  return makeError("input '", what, "' must be a constant under static shapes; it depends on graph input",
                   shapeDecidingInputs_.size() > 1 ? "s " : " ", names,
                   ": give the value (ember run --input ", flags, ", ember compile --bind ", flags, ")");
}

Error GraphImporter::importNode(const onnx::NodeProto& node, size_t index) {
  const std::string name = node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
  // Every import error names the node, its op and the model's opset (the op's semantics depend on it).
  const std::string context =
      "node '" + name + "' (" + node.op_type() + ", opset " + std::to_string(opset_) + ")";
  shapeDecidingInputs_.clear();
  if (Error e = checkUtf8Name("the node's name", node.name())) return e.withContext(context);
  if (!isDefaultDomain(node.domain()))
    return makeError(context, ": unsupported operator ", node.domain(), ".", node.op_type());
  const OpHandler* handler = findOpHandler(node.op_type());
  if (!handler) return makeError(context, ": unsupported operator ", node.op_type());
  if (opset_ < 7) {
    // Opsets 1-6 are imported where their semantics match opset 7's; the
    // legacy broadcast-with-axis form does not.
    for (const auto& a : node.attribute())
      if (a.name() == "broadcast" && a.i() != 0 &&
          std::any_of(node.attribute().begin(), node.attribute().end(),
                      [](const auto& b) { return b.name() == "axis"; }))
        return makeError(context, ": legacy broadcasting with an axis is unsupported");
  }
  NodeBuilder builder(*this, node, name, opset_);
  if (Error e = (*handler)(builder)) return e.withContext(context);
  return Error::success();
}

Error GraphImporter::importOutputs(const onnx::GraphProto& graph) {
  if (graph.output_size() == 0) return makeError("the graph has no outputs");
  for (const auto& output : graph.output()) {
    EMBER_TRY(Value v, lookup(output.name()));
    function_.addOutput(output.name(), materialize(v));
  }
  for (const auto& [name, v] : extraOutputs_) {
    if (values_.count(name))
      return makeError("output '", name, "' (a valid count) clashes with a model value");
    function_.addOutput(name, materialize(v));
  }
  return Error::success();
}

Error GraphImporter::importGraph(onnx::GraphProto& graph, bool releaseInitializerBytes,
                                 std::span<const std::optional<std::string_view>> cutPayloads) {
  for (const auto& node : graph.node())
    for (const auto& in : node.input()) used_.insert(in);
  for (const auto& out : graph.output()) used_.insert(out.name());

  EMBER_RETURN_IF_ERROR(importInitializers(graph, releaseInitializerBytes, cutPayloads));
  EMBER_RETURN_IF_ERROR(importInputs(graph));
  for (int i = 0; i < graph.node_size(); ++i) EMBER_RETURN_IF_ERROR(importNode(graph.node(i), size_t(i)));
  EMBER_RETURN_IF_ERROR(importOutputs(graph));
  // Catches importer bugs as an error instead of a bad graph downstream.
  if (Error e = function_.verify()) return e.withContext("imported graph fails verification");
  return Error::success();
}

namespace {

/// Smaller payloads are parsed by protobuf as usual: cutting them saves
/// nothing worth the bookkeeping.
constexpr size_t kMinCutPayloadBytes = 4096;

Expected<Function*> importModel(std::string_view bytes, const std::string& origin, const std::string& baseDir,
                                Module& module, const ImportOptions& options) {
  auto fail = [&](const Error& e) -> Expected<Function*> { return oneLineError(e.withContext(origin)); };
  if (bytes.empty()) return fail(makeError("empty file"));
  // Protobuf would copy every weight into a string of its own; cutting the
  // large payloads out first lets the initializers read them in place.
  std::optional<SplitModel> split = splitInitializerPayloads(bytes, kMinCutPayloadBytes);
  std::span<const std::optional<std::string_view>> cutPayloads;
  if (split && std::any_of(split->payloads.begin(), split->payloads.end(),
                           [](const auto& payload) { return payload.has_value(); })) {
    bytes = split->structure;
    cutPayloads = split->payloads;
  }
  onnx::ModelProto model;
  if (bytes.size() > size_t(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), int(bytes.size())))
    return fail(makeError("not a valid ONNX model (protobuf parse failed)"));
  if (!model.has_graph()) return fail(makeError("the model has no graph"));

  // Without a default-domain opset_import (IR version < 3) the opset is 1.
  int64_t opset = 1;
  for (const auto& entry : model.opset_import())
    if (isDefaultDomain(entry.domain())) opset = entry.version();
  if (opset < 1) return fail(makeError("invalid opset version ", opset));
  if (module.function("main")) return fail(makeError("the module already has a function 'main'"));

  const TensorSource source{baseDir, options.maxElements, options.maxTensorBytes};
  // Shape specialisation: trial imports into a scratch module find the given
  // inputs that decide shapes, one failing operand at a time.
  std::set<std::string> bind;
  while (!options.inputValues.empty()) {
    Module scratch;
    GraphImporter trial(scratch.createFunction("main"), options, source, opset, bind);
    const bool imported = !trial.importGraph(*model.mutable_graph(), false, cutPayloads);
    bool grew = false;
    // A successful import may still prefer bindings (value-dependent shapes).
    for (const std::string& name : imported ? std::vector<std::string>(trial.preferredBindings().begin(),
                                                                       trial.preferredBindings().end())
                                            : trial.shapeDecidingInputs())
      if (options.inputValues.count(name)) grew |= bind.insert(name).second;
    if (!grew) break;  // the final import reports the error
  }
  Function& function = module.createFunction("main");
  GraphImporter importer(function, options, source, opset, bind);
  if (Error e = importer.importGraph(*model.mutable_graph(), true, cutPayloads)) return fail(e);
  return &function;
}

}  // namespace
}  // namespace onnx_import

namespace {

/// A read-only mapping of a whole regular, non-empty file.
class MappedFile {
 public:
  /// The mapping, or nothing when the file is not a regular non-empty file or
  /// cannot be mapped (the caller then reads it as a stream).
  static std::optional<MappedFile> open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    void* data = MAP_FAILED;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
      // Populated at once: the import reads every byte, and one mapping
      // call is far cheaper than a page fault per 64 KiB on a VM.
      data = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    ::close(fd);
    if (data == MAP_FAILED) return std::nullopt;
    return MappedFile(data, size_t(st.st_size));
  }
  MappedFile(MappedFile&& other) noexcept : data_(std::exchange(other.data_, nullptr)), size_(other.size_) {}
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile& operator=(MappedFile&&) = delete;
  ~MappedFile() {
    if (data_) ::munmap(data_, size_);
  }
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  MappedFile(void* data, size_t size) : data_(data), size_(size) {}
  void* data_;
  size_t size_;
};

}  // namespace

Expected<Function*> importOnnxBytes(const std::string& bytes, const std::string& origin, Module& module,
                                    const ImportOptions& options) {
  return onnx_import::importModel(bytes, origin, "", module, options);
}

Expected<Function*> importOnnxFile(const std::string& path, Module& module, const ImportOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return makeError(path, ": is a directory, not a model file");
  std::string baseDir = std::filesystem::path(path).parent_path().string();
  if (baseDir.empty()) baseDir = ".";
  // A regular file is mapped, not read: the initializers' payloads are read
  // in place (splitInitializerPayloads), so an in-memory copy of a large
  // model would only cost page faults and a memcpy.
  if (auto mapped = MappedFile::open(path))
    return onnx_import::importModel(mapped->bytes(), path, baseDir, module, options);
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open file");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return makeError(path, ": cannot read file");
  return onnx_import::importModel(contents.view(), path, baseDir, module, options);
}

}  // namespace ember
