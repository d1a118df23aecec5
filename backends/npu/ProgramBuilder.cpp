#include "ProgramBuilder.h"

#include <algorithm>
#include <cassert>

#include "Instructions.h"

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
}

void ProgramBuilder::emit(Instruction in) {
  in.layer = tag_;
  program_.push_back(in);
}

std::pair<uint64_t, uint64_t> ProgramBuilder::endLayer() {
  const uint64_t first = program_.size();
  const int numSteps = int(steps_.size());
  // The previous layer's step releases and barrier: popped before any load.
  for (; pendingLoadPops_ > 0; --pendingLoadPops_) {
    Instruction sync = makeSync(Queue::Load);
    sync.deps.popNext = true;
    emit(sync);
  }
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
  steps_.clear();
  return {first, program_.size() - 1};
}

void ProgramBuilder::finish() {
  tag_ = 0;
  for (; pendingLoadPops_ > 0; --pendingLoadPops_) {
    Instruction sync = makeSync(Queue::Load);
    sync.deps.popNext = true;
    emit(sync);
  }
  Instruction fin;
  fin.opcode = npu::isa::Opcode::Finish;
  emit(fin);
}

}  // namespace ember::npu_backend
