#include "ember/Graph.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <set>
#include <sstream>
#include <unordered_set>

namespace ember {

const Type& NodeValue::type() const { return node->resultType(resNo); }

const Tensor& Node::payload() const {
  assert(kind_ == OpKind::Constant && payload_);
  return *payload_;
}

const std::shared_ptr<const Tensor>& Node::sharedPayload() const {
  assert(kind_ == OpKind::Constant && payload_);
  return payload_;
}

std::string Node::str() const {
  std::ostringstream os;
  os << '%' << name_ << " = " << info().name;
  if (!inputs_.empty()) {
    os << '(';
    for (size_t i = 0; i < inputs_.size(); ++i) {
      os << (i ? ", " : "") << '%' << inputs_[i].node->name();
      if (inputs_[i].node->numResults() > 1) os << '#' << inputs_[i].resNo;
    }
    os << ')';
  }
  if (!attrs_.entries().empty()) os << ' ' << attrs_.str();
  os << " : ";
  for (size_t i = 0; i < resultTypes_.size(); ++i) os << (i ? ", " : "") << resultTypes_[i].str();
  return os.str();
}

Node* Function::insert(std::unique_ptr<Node> node) {
  nameCounts_.emplace(node->name(), 0);
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

std::string Function::uniqueName(std::string_view base) {
  std::string name(base.empty() ? "node" : base);
  auto [it, inserted] = nameCounts_.emplace(name, 0);
  if (inserted) return name;
  // Names are cheap to check: bump the counter until the candidate is free.
  for (;;) {
    std::string candidate = name + "_" + std::to_string(++it->second);
    if (nameCounts_.emplace(candidate, 0).second) return candidate;
  }
}

Expected<Node*> Function::create(OpKind kind, std::string name, std::vector<NodeValue> inputs,
                                 Attributes attrs) {
  const OpInfo& info = opInfo(kind);
  auto fail = [&](const Error& e) { return e.withContext("node '" + name + "' (" + info.name + ")"); };
  if (info.category == OpCategory::Storage || info.category == OpCategory::IROnly)
    return fail(makeError("cannot be created with Function::create"));
  for (const NodeValue& v : inputs)
    if (!v) return fail(makeError("null operand"));
  if (Error e = checkOperandsAndAttributes(info, inputs.size(), attrs)) return fail(e);
  std::vector<Type> inputTypes;
  inputTypes.reserve(inputs.size());
  for (const NodeValue& v : inputs) inputTypes.push_back(v.type());
  auto types = inferResultTypes(kind, inputTypes, attrs);
  if (!types) return fail(types.error());
  for (const Type& t : *types)
    if (Error e = checkDims(t.dims)) return fail(e);
  std::string unique = uniqueName(name);
  return insert(
      std::unique_ptr<Node>(new Node(kind, unique, std::move(inputs), types.take(), std::move(attrs))));
}

Node* Function::createPlaceholder(const std::string& name, Type type) {
  Node* n = insert(
      std::unique_ptr<Node>(new Node(OpKind::Placeholder, uniqueName(name), {}, {std::move(type)}, {})));
  inputs_.push_back(n);
  return n;
}

Node* Function::createConstant(const std::string& name, Tensor value) {
  return createConstant(name, std::make_shared<const Tensor>(std::move(value)));
}

Node* Function::createConstant(const std::string& name, std::shared_ptr<const Tensor> value) {
  assert(value && "a constant needs a value");
  Node* n =
      insert(std::unique_ptr<Node>(new Node(OpKind::Constant, uniqueName(name), {}, {value->type()}, {})));
  n->payload_ = std::move(value);
  return n;
}

Node* Function::findInput(std::string_view name) const {
  for (Node* n : inputs_)
    if (n->name() == name) return n;
  return nullptr;
}

std::vector<Node*> Function::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<Node*> Function::topologicalOrder() const {
  // Iterative DFS post-order from the nodes in insertion order: deterministic,
  // and keeps the original order wherever it is already topological.
  std::vector<Node*> order;
  order.reserve(nodes_.size());
  std::unordered_set<const Node*> done;
  std::vector<std::pair<Node*, size_t>> stack;
  for (const auto& root : nodes_) {
    if (done.count(root.get())) continue;
    stack.push_back({root.get(), 0});
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->numInputs()) {
        Node* in = node->input(next++).node;
        if (!done.count(in)) stack.push_back({in, 0});
        continue;
      }
      if (done.insert(node).second) order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

std::unordered_map<const Node*, std::vector<Use>> Function::computeUses() const {
  std::unordered_map<const Node*, std::vector<Use>> uses;
  for (const auto& n : nodes_)
    for (unsigned i = 0; i < n->numInputs(); ++i) uses[n->input(i).node].push_back({n.get(), i});
  return uses;
}

void Function::replaceAllUsesWith(NodeValue from, NodeValue to) {
  assert(from.type() == to.type() && "replacement must keep the type");
  for (const auto& n : nodes_)
    for (unsigned i = 0; i < n->numInputs(); ++i)
      if (n->input(i) == from) n->setInput(i, to);
  for (auto& out : outputs_)
    if (out.second == from) out.second = to;
}

void Function::erase(Node* node) {
  inputs_.erase(std::remove(inputs_.begin(), inputs_.end(), node), inputs_.end());
  nameCounts_.erase(node->name());
  nodes_.remove_if([&](const std::unique_ptr<Node>& n) { return n.get() == node; });
}

namespace {

/// One node's own checks: storage has no operands, operands are nodes of
/// `own`, attributes are declared, and the type rule gives its result types.
Error verifyNode(const Node& n, const std::unordered_set<const Node*>& own) {
  const OpInfo& info = n.info();
  if (info.category == OpCategory::IROnly) return makeError("IR-only op in a graph");
  if (info.category == OpCategory::Storage) {
    if (n.numInputs() != 0 || n.numResults() != 1) return makeError("storage node with operands");
    if (n.isConstant() && n.payload().type() != n.resultType())
      return makeError("payload type ", n.payload().type().str(), " differs from ", n.resultType().str());
    return Error::success();
  }
  for (const NodeValue& v : n.inputs()) {
    if (!v || !own.count(v.node)) return makeError("operand is not a node of this function");
    if (v.resNo >= v.node->numResults()) return makeError("operand result index out of range");
  }
  if (Error e = checkOperandsAndAttributes(info, n.numInputs(), n.attrs())) return e;
  std::vector<Type> inputTypes;
  inputTypes.reserve(n.numInputs());
  for (const NodeValue& v : n.inputs()) inputTypes.push_back(v.type());
  auto types = inferResultTypes(n.kind(), inputTypes, n.attrs());
  if (!types) return types.error();
  if (*types != n.resultTypes()) {
    std::string got, want;
    for (const Type& t : n.resultTypes()) got += t.str() + " ";
    for (const Type& t : *types) want += t.str() + " ";
    return makeError("result types ", got, "differ from the type rule's ", want);
  }
  return Error::success();
}

}  // namespace

Error Function::verify() const {
  std::unordered_set<const Node*> own;
  std::set<std::string> names;
  for (const auto& n : nodes_) {
    own.insert(n.get());
    if (!names.insert(n->name()).second) return makeError(name_, ": duplicate node name '", n->name(), "'");
  }
  for (const auto& n : nodes_)
    if (Error e = verifyNode(*n, own))
      return e.withContext(name_ + ": node '" + n->name() + "' (" + n->info().name + ")");
  for (const Node* in : inputs_)
    if (!own.count(in) || !in->isPlaceholder())
      return makeError(name_, ": input list holds a non-placeholder");
  for (const auto& [outName, v] : outputs_)
    if (!v || !own.count(v.node) || v.resNo >= v.node->numResults())
      return makeError(name_, ": output '", outName, "' refers to no node of this function");
  // Acyclic: a topological order must place every operand before its user.
  std::unordered_map<const Node*, size_t> position;
  auto order = topologicalOrder();
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  for (const Node* n : order)
    for (const NodeValue& v : n->inputs())
      if (position[v.node] >= position[n]) return makeError(name_, ": cycle through node '", n->name(), "'");
  return Error::success();
}

std::string Function::str() const {
  std::ostringstream os;
  os << "function " << name_ << " {\n";
  for (const Node* n : topologicalOrder()) os << "  " << n->str() << '\n';
  for (const auto& [outName, v] : outputs_) {
    os << "  output \"" << outName << "\" = %" << v.node->name();
    if (v.node->numResults() > 1) os << '#' << v.resNo;
    os << '\n';
  }
  os << "}\n";
  return os.str();
}

namespace {
std::string dotEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\' || c == '{' || c == '}' || c == '<' || c == '>' || c == '|') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string Function::dot() const {
  std::ostringstream os;
  os << "digraph \"" << dotEscape(name_) << "\" {\n  rankdir=TB;\n  node [shape=record, fontsize=10];\n";
  std::unordered_map<const Node*, size_t> ids;
  for (const Node* n : topologicalOrder()) {
    size_t id = ids.size();
    ids[n] = id;
    std::string fill = n->isConstant() ? "lightgrey" : n->isPlaceholder() ? "lightblue" : "white";
    os << "  n" << id << " [style=filled, fillcolor=" << fill << ", label=\"{" << dotEscape(n->name()) << "|"
       << n->info().name << "|" << dotEscape(n->resultType().str()) << "}\"];\n";
  }
  for (const auto& [node, id] : ids)
    for (const NodeValue& v : node->inputs()) os << "  n" << ids[v.node] << " -> n" << id << ";\n";
  size_t outIndex = 0;
  for (const auto& [outName, v] : outputs_) {
    os << "  out" << outIndex << " [shape=oval, label=\"" << dotEscape(outName) << "\"];\n";
    os << "  n" << ids[v.node] << " -> out" << outIndex++ << ";\n";
  }
  os << "}\n";
  return os.str();
}

Function& Module::createFunction(std::string name) {
  functions_.push_back(std::make_unique<Function>(std::move(name)));
  return *functions_.back();
}

std::vector<Function*> Module::functions() const {
  std::vector<Function*> out;
  out.reserve(functions_.size());
  for (const auto& f : functions_) out.push_back(f.get());
  return out;
}

Function* Module::function(std::string_view name) const {
  for (const auto& f : functions_)
    if (f->name() == name) return f.get();
  return nullptr;
}

}  // namespace ember
