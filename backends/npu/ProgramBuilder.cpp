#include "ProgramBuilder.h"

#include <algorithm>
#include <cassert>

#include "Instructions.h"
#include "WeightPrefetch.h"

namespace ember::npu_backend {

using npu::isa::Instruction;
using npu::isa::Queue;

void ProgramBuilder::beginLayer(const std::string& name) {
  assert(steps_.empty());
  // Layer names key the bundle's layer table and the per-layer statistics, so
  // they must be unique; instructions of one node (a Concat's copies, a copy
  // into an output) share the node's name.
  std::string unique = name;
  for (int k = 2; std::find(layers_.begin(), layers_.end(), unique) != layers_.end(); ++k)
    unique = name + "." + std::to_string(k);
  layers_.push_back(unique);
  tag_ = uint16_t(layers_.size());
  layerSeparate_ = separate_;
  layerVectorLoadSlots_ = 0;
}

void ProgramBuilder::emit(const Instruction& in) {
  program_.push_back(in);
  program_.back().layer = tag_;
}

void ProgramBuilder::reserveForSteps() {
  // A step adds at most one sync per queue beyond its own instructions, the
  // barrier a few more.
  size_t more = 8;
  for (const Step& step : steps_)
    more += step.loads.size() + step.computes.size() + step.vectors.size() + step.stores.size() + 4;
  const size_t needed = program_.size() + more;
  if (needed <= program_.capacity()) return;
  // A decoded instruction is ~550 bytes and ResNet-50 emits ~10^6 of them:
  // growing 8x at a time instead of vector's 2x copies (and page-faults in)
  // far less memory; the capacity not yet written is never touched.
  // Up to 2^23 instructions (4.6 GB of address space), then 2x again.
  constexpr size_t kFastGrowthLimit = size_t(1) << 23;
  const size_t grown = program_.capacity() * (program_.capacity() * 8 <= kFastGrowthLimit ? 8 : 2);
  program_.reserve(std::max(needed, grown));
}

void ProgramBuilder::popOwedLoadTokens() {
  for (; pendingLoadPops_ > 0; --pendingLoadPops_) {
    Instruction sync = makeSync(Queue::Load);
    sync.deps.popNext = true;
    emit(sync);
  }
  for (; pendingLoadSidePops_ > 0; --pendingLoadSidePops_) {
    Instruction sync = makeSync(Queue::Load);
    sync.deps.popSide = true;
    emit(sync);
  }
}

void ProgramBuilder::emitPrefetchedLoads() {
  if (!hoistable_ || steps_.empty() || layers_.size() < 2) return;
  std::vector<Instruction>& loads = steps_.front().loads;
  // A load moves ahead of the others only when it overlaps none of them, so
  // the first step's SRAM contents do not depend on the new order.
  std::vector<bool> hoist(loads.size());
  for (size_t i = 0; i < loads.size(); ++i) {
    hoist[i] = hoistable_(loads[i]);
    for (size_t j = 0; j < loads.size() && hoist[i]; ++j)
      hoist[i] = j == i || loads[j].opcode != npu::isa::Opcode::Load ||
                 !loadSpan(loads[i]).meets(loadSpan(loads[j]));
  }
  size_t kept = 0;
  for (size_t i = 0; i < loads.size(); ++i) {
    if (hoist[i])
      emit(loads[i]);
    else
      loads[kept++] = loads[i];
  }
  loads.resize(kept);
}

std::pair<uint64_t, uint64_t> ProgramBuilder::endLayer() {
  const uint64_t first = program_.size();
  const int numSteps = int(steps_.size());
  // Weight loads that need nothing from the previous layer start first.
  emitPrefetchedLoads();
  // The previous layer's step releases and barrier: popped before any load.
  popOwedLoadTokens();
  reserveForSteps();
  bool hasGemm = false, hasVector = false;
  for (const Step& step : steps_)
    for (const Instruction& in : step.computes) {
      hasGemm = hasGemm || in.opcode == npu::isa::Opcode::Gemm;
      hasVector = hasVector || npu::isa::isVectorOpcode(in.opcode);
    }
  if (layerSeparate_ && hasGemm && hasVector)
    emitSeparateSteps(numSteps);
  else
    emitSharedSteps(numSteps);
  steps_.clear();
  return {first, program_.size() - 1};
}

void ProgramBuilder::emitSharedSteps(int numSteps) {
  auto emitLoads = [&](int s) {
    std::vector<Instruction>& loads = steps_[size_t(s)].loads;
    if (loads.empty()) loads.push_back(makeSync(Queue::Load));
    if (s >= kDepth) loads.front().deps.popNext = true;  // slot freed by compute s-2
    loads.back().deps.pushNext = true;                   // tile s is in SRAM
    for (const Instruction& in : loads) emit(in);
  };
  if (numSteps > 0) emitLoads(0);
  for (int s = 0; s < numSteps; ++s) {
    if (s + 1 < numSteps) emitLoads(s + 1);
    std::vector<Instruction>& computes = steps_[size_t(s)].computes;
    if (computes.empty()) computes.push_back(makeSync(Queue::Compute));
    computes.front().deps.popPrev = true;                   // tile s loaded
    if (s >= kDepth) computes.front().deps.popNext = true;  // output slot stored by step s-2
    computes.back().deps.pushPrev = true;                   // input slots of step s free
    computes.back().deps.pushNext = true;                   // output of step s ready
    for (const Instruction& in : computes) emit(in);
    std::vector<Instruction>& stores = steps_[size_t(s)].stores;
    if (stores.empty()) stores.push_back(makeSync(Queue::Store));
    stores.front().deps.popPrev = true;
    stores.back().deps.pushPrev = true;  // output slot free, tile in DRAM
    for (const Instruction& in : stores) emit(in);
  }
  // Barrier: wait for every store still in flight, then release the loads.
  const int inFlight = std::min(numSteps, kDepth);
  for (int i = 0; i < inFlight; ++i) {
    Instruction sync = makeSync(Queue::Compute);
    sync.deps.popNext = true;
    if (i + 1 == inFlight) sync.deps.pushPrev = true;
    emit(sync);
  }
  if (inFlight == 0) {
    Instruction sync = makeSync(Queue::Compute);
    sync.deps.pushPrev = true;
    emit(sync);
  }
  pendingLoadPops_ = inFlight + 1;
}

// Tokens per step s with the vector queue (two slots per resource, so the
// last user of a slot step s overwrites is step s-2):
//   loads   pop compute->load (input/weight slots) and, when the layer loads
//           accumulator tiles (bias by DMA), vector->load when s >= 2; push
//           load->compute.
//   gemms   pop load->compute, and vector->compute when s >= 2 (the tile's
//           previous requant is done); push compute->load and compute->vector.
//   vector  pops compute->vector, and store->vector when s >= 2 (output slot
//           stored); pushes vector->compute, vector->store and (bias by DMA)
//           vector->load.
//   stores  pop vector->store; push store->vector.
void ProgramBuilder::moveVectorInstructionsToVectorQueue() {
  for (Step& step : steps_) {  // the step's vector instructions leave the compute queue
    size_t kept = 0;           // the matrix instructions stay in order at the front
    for (Instruction& in : step.computes) {
      if (npu::isa::isVectorOpcode(in.opcode)) {
        in.vectorQueue = true;
        step.vectors.push_back(in);
      } else {
        if (&step.computes[kept] != &in) step.computes[kept] = in;
        ++kept;
      }
    }
    step.computes.resize(kept);
  }
}

int ProgramBuilder::vectorToLoadLag(int numSteps) const {
  // Side tokens (vector->load) only when a load overwrites an accumulator
  // tile a requant of step s-2 reads (bias by DMA): otherwise the loads would
  // wait for the vector queue for nothing.
  // A fused residual add's operand slots are read by the vector queue too,
  // in a rotation of `layerVectorLoadSlots_` (three: a load then waits for
  // the epilogue of three steps before, not two, so the loads stay ahead).
  bool accumulatorLoads = false;
  for (int s = kDepth; s < numSteps; ++s)
    for (const Instruction& in : steps_[size_t(s)].loads)
      accumulatorLoads =
          accumulatorLoads || (in.opcode == npu::isa::Opcode::Load &&
                               in[npu::isa::Field::Mem] == int64_t(npu::isa::Memory::Accumulator));
  return accumulatorLoads ? kDepth : layerVectorLoadSlots_;
}

void ProgramBuilder::emitSeparateSteps(int numSteps) {
  moveVectorInstructionsToVectorQueue();
  const int sideLag = vectorToLoadLag(numSteps);
  const bool sideTokens = sideLag > 0;
  auto emitLoads = [&](int s) {
    std::vector<Instruction>& loads = steps_[size_t(s)].loads;
    if (loads.empty()) loads.push_back(makeSync(Queue::Load));
    if (s >= kDepth) loads.front().deps.popNext = true;  // input and weight slots freed by the gemms of s-2
    // Accumulator tile (or residual slot) freed by the vector queue at s-sideLag.
    if (sideTokens && s >= sideLag) loads.front().deps.popSide = true;
    loads.back().deps.pushNext = true;
    for (const Instruction& in : loads) emit(in);
  };
  if (numSteps > 0) emitLoads(0);
  for (int s = 0; s < numSteps; ++s) {
    if (s + 1 < numSteps) emitLoads(s + 1);
    Step& step = steps_[size_t(s)];
    if (step.computes.empty()) step.computes.push_back(makeSync(Queue::Compute));
    step.computes.front().deps.popPrev = true;
    if (s >= kDepth) step.computes.front().deps.popSide = true;
    step.computes.back().deps.pushPrev = true;
    step.computes.back().deps.pushSide = true;
    for (const Instruction& in : step.computes) emit(in);
    if (step.vectors.empty()) step.vectors.push_back(makeSync(Queue::Vector));
    step.vectors.front().deps.popPrev = true;
    if (s >= kDepth) step.vectors.front().deps.popNext = true;
    step.vectors.back().deps.pushPrev = true;
    step.vectors.back().deps.pushNext = true;
    step.vectors.back().deps.pushSide = sideTokens;
    for (const Instruction& in : step.vectors) emit(in);
    if (step.stores.empty()) step.stores.push_back(makeSync(Queue::Store));
    step.stores.front().deps.popSide = true;
    step.stores.back().deps.pushSide = true;
    for (const Instruction& in : step.stores) emit(in);
  }
  emitSeparateBarrier(numSteps, sideTokens ? std::min(numSteps, sideLag) : 0);
}

void ProgramBuilder::emitSeparateBarrier(int numSteps, int sideCredits) {
  // Barrier: the vector queue waits for every store in flight, then releases
  // the loads; the compute queue takes back its tile credits, then releases
  // the loads too. The next layer's loads pop what is owed.
  const int inFlight = std::min(numSteps, kDepth);
  for (int i = 0; i < inFlight; ++i) {
    Instruction sync = makeSync(Queue::Vector);
    sync.deps.popNext = true;
    if (i + 1 == inFlight) sync.deps.pushSide = true;
    emit(sync);
  }
  for (int i = 0; i < inFlight; ++i) {
    Instruction sync = makeSync(Queue::Compute);
    sync.deps.popSide = true;
    if (i + 1 == inFlight) sync.deps.pushPrev = true;
    emit(sync);
  }
  pendingLoadPops_ = inFlight + 1;  // leftover slot credits + the compute barrier
  // Leftover tile credits + the vector barrier.
  pendingLoadSidePops_ = sideCredits + 1;
}

void ProgramBuilder::finish() {
  tag_ = 0;
  popOwedLoadTokens();
  Instruction fin;
  fin.opcode = npu::isa::Opcode::Finish;
  emit(fin);
}

}  // namespace ember::npu_backend
