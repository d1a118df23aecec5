// The address-only instruction IR.
//
// An IRFunction has values (buffers and views of buffers) and a list of
// instructions over them. Each instruction is a primitive from Ops.def (or an
// IR-only kind) whose operands are values with an access mode: the results
// come first as Out, then the node's inputs as In. After memory planning every
// buffer has a static byte offset in one of three regions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/Attributes.h"
#include "ember/Error.h"
#include "ember/Graph.h"
#include "ember/PassGate.h"
#include "ember/Tensor.h"

namespace ember {

enum class ValueKind : uint8_t {
  Constant,    ///< weight; lives in the constants region
  Input,       ///< model input; lives in the I/O region
  Output,      ///< model output; lives in the I/O region
  Activation,  ///< intermediate; AllocActivation..DeallocActivation; activations region
  View,        ///< a typed window onto another value at a byte offset
};

enum class Region : uint8_t { Constants, IO, Activations };

enum class Access : uint8_t { In, Out, InOut };

using ValueId = uint32_t;

struct IRValue {
  std::string name;
  Type type;
  ValueKind kind;
  ValueId base = 0;                       ///< View: the viewed value
  uint64_t viewOffset = 0;                ///< View: byte offset into base
  std::shared_ptr<const Tensor> payload;  ///< Constant: its data
  uint64_t offset = 0;                    ///< planned byte offset in its region (not View)
};

struct Operand {
  ValueId value;
  Access access;
};

struct Instruction {
  OpKind kind;
  std::string name;  ///< the graph node it came from, for reports and errors
  std::vector<Operand> operands;
  Attributes attrs;
};

/// Region sizes and the lower bound that the planner reports.
struct MemoryPlan {
  uint64_t constantBytes = 0;
  uint64_t ioBytes = 0;
  uint64_t activationBytes = 0;
  uint64_t activationLowerBoundBytes = 0;  ///< max over time of live activation bytes
  uint64_t alignment = 64;
};

class IRFunction {
 public:
  explicit IRFunction(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }

  ValueId addValue(IRValue value);
  ValueId addView(std::string name, ValueId base, Type type, uint64_t byteOffset);
  const IRValue& value(ValueId id) const { return values_[id]; }
  IRValue& value(ValueId id) { return values_[id]; }
  size_t numValues() const { return values_.size(); }
  /// The non-view value a (possibly nested) view ultimately refers to, and
  /// the accumulated byte offset into it.
  std::pair<ValueId, uint64_t> resolve(ValueId id) const;
  Region regionOf(ValueId id) const;

  std::vector<Instruction>& instructions() { return instrs_; }
  const std::vector<Instruction>& instructions() const { return instrs_; }

  MemoryPlan& plan() { return plan_; }
  const MemoryPlan& plan() const { return plan_; }

  /// Values of kind Input / Output, in model order.
  std::vector<ValueId> inputs() const;
  std::vector<ValueId> outputs() const;

  /// Checks operand counts, access modes, types against the op's type rule,
  /// that views stay inside their base, and that every activation is used only
  /// between its AllocActivation and DeallocActivation.
  Error verify() const;
  /// Checks the memory plan: every value inside its region, no two
  /// simultaneously live activations overlap. Independent of the planner.
  Error verifyPlan() const;
  /// Text form, with planned offsets.
  std::string str() const;

 private:
  std::string name_;
  std::vector<IRValue> values_;
  std::vector<Instruction> instrs_;
  MemoryPlan plan_;
};

/// A topological order of `function` that lowers the peak of live
/// activations (used by IRGen).
std::vector<Node*> memoryAwareOrder(const Function& function);

/// Generates the IR from a lowered Function: each primitive, and each
/// high-level node the backend kept (shouldLower() == false), becomes one
/// instruction. Reshape becomes a view; outputs get their own buffers.
Expected<std::unique_ptr<IRFunction>> generateIR(const Function& function);

/// Re-derives DeallocActivation: each activation is freed right after its
/// last use (views count as uses of their base).
void insertDeallocs(IRFunction& ir);

/// The instruction-IR optimizer (core/ir): runs its passes in order, with the
/// verifier after each when `verifyEachPass`; `gate` (optional) decides which
/// passes run and records them.
Error optimizeIR(IRFunction& ir, bool verifyEachPass = false, PassGate* gate = nullptr);

/// The IR optimizer's pass names, in order.
std::vector<std::string> irPassNames();

/// Max over instructions of the live activation bytes (each rounded up to
/// `alignment`): no plan of this instruction order can use less.
uint64_t activationLowerBound(const IRFunction& ir, uint64_t alignment = 64);

/// Plans static offsets in the three regions (alignment in bytes).
Error planMemory(IRFunction& ir, uint64_t alignment = 64);

}  // namespace ember
