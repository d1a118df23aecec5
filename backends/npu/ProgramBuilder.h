// Assembles the program layer by layer from pipeline steps and sets the
// dependency tokens (docs/npu/isa.md; the protocol is in docs/npu/compiler.md,
// "Scheduling and tokens").
//
// A layer is a sequence of steps; a step is the loads, computes and stores of
// one tile. Every SRAM resource a step loads is double buffered (its slot
// alternates on every new load), so a step's loads may start once the compute
// of the step two before has finished, and a step's compute may overwrite its
// output slot once the store of the step two before has finished. Program
// order is L0, then L(s+1) C(s) S(s): the loads of the next tile are fetched
// before the computes of this one, so a full compute queue never keeps the
// next load from being fetched. A layer ends with a barrier: every store has
// reached DRAM before the next layer's first load starts.
//
// With the vector queue (vector.queue: separate, ISA v3) a layer that has
// both gemms and vector instructions runs each step's vector instructions on
// the vector queue: the gemms of step s+1 overlap the bias and requant of
// step s, whose accumulator tiles alternate (docs/npu/compiler.md,
// "Scheduling and tokens").
//
// The program is kept encoded (32 bytes an instruction, docs/npu/compiler.md
// "Program representation"): a step's instructions are encoded when the step
// is added, so a value that does not fit its field is an error naming the
// field, the instruction and the layer at once, and no decoded copy of a
// layer or of a program of millions of instructions is ever held.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ember/Error.h"
#include "ember/npu/Isa.h"

namespace ember::npu_backend {

/// One tile's instructions as a lowering builds them (decoded, tokens unset).
struct Step {
  std::vector<npu::isa::Instruction> loads, computes, stores;
};

class ProgramBuilder {
 public:
  /// Slots per double-buffered resource (the pipeline depth).
  static constexpr int kDepth = 2;

  ProgramBuilder();

  /// With two weight buffers (matrix_engine.weight_buffers: 2) each preload
  /// takes the buffer the previous gemm does not stream from, so it overlaps
  /// that stream; a gemm without preload streams the buffer of the last preload.
  void setWeightBuffers(int buffers) { alternateWeightBuffers_ = buffers == 2; }
  /// Whether vector instructions of layers with gemms go to the vector queue.
  void setVectorQueue(bool separate) { separate_ = separate; }
  /// The current layer keeps its vector instructions on the compute queue
  /// (its tiling chose one accumulator tile).
  void keepVectorsOnComputeQueue() { layerSeparate_ = false; }
  /// The current layer's vector instructions read scratchpad slots its loads
  /// fill, `slots` of them in rotation (a fused residual add's operand), so a
  /// load that overwrites one waits for the vector queue `slots` steps before.
  void vectorReadsLoadedSlots(int slots) { layerVectorLoadSlots_ = slots; }
  /// From now on, the loads of each layer's first step that `hoistable`
  /// accepts (and that no other first-step load overlaps) are emitted before
  /// the previous layer's barrier is popped, so they overlap its end
  /// (compiler.prefetch_weights).
  void prefetchFirstLoads(std::function<bool(const npu::isa::Instruction&)> hoistable) {
    hoistable_ = std::move(hoistable);
  }
  /// Starts a layer; its instructions carry the new layer tag.
  void beginLayer(const std::string& name);
  /// Encodes the step's instructions (the first that does not encode is
  /// error()) and buffers them until endLayer.
  void addStep(const Step& step);
  /// Emits the buffered steps with their tokens and the layer barrier.
  /// Returns the [first, last] program indices of the layer.
  std::pair<uint64_t, uint64_t> endLayer();
  /// Pops the tokens still owed to the load queue and appends FINISH.
  void finish();

  /// The first instruction that did not encode (a field value out of its
  /// range), naming the field, the instruction and its layer.
  const Error& error() const { return error_; }
  /// The encoded program; the builder is left empty.
  std::vector<npu::isa::EncodedInstruction> takeProgram();
  const std::vector<std::string>& layers() const { return layers_; }

 private:
  using Encoded = npu::isa::EncodedInstruction;
  /// A step as the builder keeps it: encoded, its vector instructions moved
  /// to `vectors` when they run on the vector queue.
  struct EncodedStep {
    std::vector<Encoded> loads, computes, vectors, stores;
  };

  /// Encodes `in`, with its weight buffer when two alternate.
  Expected<Encoded> encodeOne(const npu::isa::Instruction& in);
  /// Encodes `from` onto `to`; the first failure becomes error_.
  void encodeInto(const std::vector<npu::isa::Instruction>& from, std::vector<Encoded>& to, const char* part);
  /// Tags and appends `in`.
  void emit(Encoded in);
  /// The previous layer's owed tokens, popped by load-queue syncs.
  void popOwedLoadTokens();
  /// Emits the first step's loads `hoistable_` accepts, ahead of the barrier.
  void emitPrefetchedLoads();
  void emitSharedSteps(int numSteps);
  void emitSeparateSteps(int numSteps);
  /// Separate vector queue: each step's vector instructions leave its computes.
  void moveVectorInstructionsToVectorQueue();
  /// How many steps behind the loads the vector queue's side tokens run (0:
  /// none, the loads never wait for it).
  int vectorToLoadLag() const;
  /// The layer's end: the vector and compute queues drain and release the
  /// loads; `sideCredits` vector->load tokens are left over.
  void emitSeparateBarrier(int numSteps, int sideCredits);

  std::vector<npu::isa::EncodedInstruction> program_;
  Error error_;
  std::vector<std::string> layers_;
  std::vector<EncodedStep> steps_;
  uint16_t tag_ = 0;
  int pendingLoadPops_ = 0;      ///< compute->load tokens the load queue has not popped yet
  int pendingLoadSidePops_ = 0;  ///< vector->load tokens the load queue has not popped yet
  bool separate_ = false, layerSeparate_ = false;
  bool alternateWeightBuffers_ = false;
  int64_t weightBuffer_ = 1;      ///< the buffer of the last preload; the first preload fills buffer 0
  int layerVectorLoadSlots_ = 0;  ///< 0: the vector queue reads no loaded scratchpad slot
  bool layerHasGemm_ = false, layerHasVector_ = false;
  bool layerLoadsAccumulator_ = false;  ///< a step >= kDepth loads an accumulator tile (bias by DMA)
  std::function<bool(const npu::isa::Instruction&)> hoistable_;  ///< empty: no prefetch
};

}  // namespace ember::npu_backend
