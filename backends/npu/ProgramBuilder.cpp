#include "ProgramBuilder.h"

#include <algorithm>
#include <cassert>

#include "Instructions.h"
#include "WeightPrefetch.h"
#include "ember/npu/IsaHeader.h"

namespace ember::npu_backend {

using npu::isa::DepFlags;
using npu::isa::Instruction;
using npu::isa::Opcode;
using npu::isa::Queue;
namespace header = npu::isa::header;

namespace {

constexpr DepFlags kPopPrev{.popPrev = true}, kPopNext{.popNext = true}, kPushPrev{.pushPrev = true},
    kPushNext{.pushNext = true}, kPopSide{.popSide = true}, kPushSide{.pushSide = true};

/// A sync on `queue` with the tokens `deps`.
npu::isa::EncodedInstruction syncWith(Queue queue, const DepFlags& deps) {
  Instruction sync = makeSync(queue);
  sync.deps = deps;
  return *npu::isa::encode(sync);  // a sync with its queue's links always encodes
}

bool isVector(const npu::isa::EncodedInstruction& in) {
  return npu::isa::isVectorOpcode(Opcode(header::opcodeByte(in)));
}

}  // namespace

// Address space for 2^20 instructions (32 MB) up front: only the pages
// written are faulted in, and a program of up to a million instructions
// (ResNet-50 on npu-16x16-v3: 658 K) is never copied to a larger buffer.
constexpr size_t kReservedInstructions = size_t(1) << 20;

ProgramBuilder::ProgramBuilder() { program_.reserve(kReservedInstructions); }

std::vector<npu::isa::EncodedInstruction> ProgramBuilder::takeProgram() {
  // A small program does not keep the reservation (a bundle lives as long
  // as its compiled function).
  if (program_.capacity() > 2 * program_.size()) program_.shrink_to_fit();
  return std::move(program_);
}

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
  layerHasGemm_ = layerHasVector_ = layerLoadsAccumulator_ = false;
}

Expected<npu::isa::EncodedInstruction> ProgramBuilder::encodeOne(const Instruction& in) {
  if (!alternateWeightBuffers_ || in.opcode != Opcode::Gemm) return npu::isa::encode(in);
  // Gemms are added in program order (the prefetch moves only loads).
  Instruction gemm = in;
  if (gemm[npu::isa::Field::Preload]) weightBuffer_ ^= 1;
  gemm[npu::isa::Field::WeightBuffer] = weightBuffer_;
  return npu::isa::encode(gemm);
}

void ProgramBuilder::encodeInto(const std::vector<Instruction>& from, std::vector<Encoded>& to,
                                const char* part) {
  to.reserve(from.size());
  for (const Instruction& in : from) {
    auto encoded = encodeOne(in);
    if (!encoded && !error_)
      error_ = encoded.error().withContext("npu: layer '" + layers_.back() + "', step " +
                                           std::to_string(steps_.size() - 1) + " " + part);
    to.push_back(encoded ? *encoded : Encoded{});  // the compile fails on error()
  }
}

void ProgramBuilder::addStep(const Step& step) {
  const bool late = steps_.size() >= size_t(kDepth);
  for (const Instruction& in : step.loads)
    layerLoadsAccumulator_ =
        layerLoadsAccumulator_ || (late && in.opcode == Opcode::Load &&
                                   in[npu::isa::Field::Mem] == int64_t(npu::isa::Memory::Accumulator));
  for (const Instruction& in : step.computes) {
    layerHasGemm_ = layerHasGemm_ || in.opcode == Opcode::Gemm;
    layerHasVector_ = layerHasVector_ || npu::isa::isVectorOpcode(in.opcode);
  }
  EncodedStep& encoded = steps_.emplace_back();
  encodeInto(step.loads, encoded.loads, "(loads)");
  encodeInto(step.computes, encoded.computes, "(computes)");
  encodeInto(step.stores, encoded.stores, "(stores)");
}

void ProgramBuilder::emit(Encoded in) {
  header::setLayer(in, tag_);
  program_.push_back(in);
}

void ProgramBuilder::popOwedLoadTokens() {
  for (; pendingLoadPops_ > 0; --pendingLoadPops_) emit(syncWith(Queue::Load, kPopNext));
  for (; pendingLoadSidePops_ > 0; --pendingLoadSidePops_) emit(syncWith(Queue::Load, kPopSide));
}

void ProgramBuilder::emitPrefetchedLoads() {
  if (!hoistable_ || steps_.empty() || layers_.size() < 2) return;
  std::vector<Encoded>& loads = steps_.front().loads;
  std::vector<Instruction> decoded;  // the first step's loads: a few
  decoded.reserve(loads.size());
  for (const Encoded& in : loads) decoded.push_back(*npu::isa::decode(in));
  // A load moves ahead of the others only when it overlaps none of them, so
  // the first step's SRAM contents do not depend on the new order.
  std::vector<bool> hoist(loads.size());
  for (size_t i = 0; i < loads.size(); ++i) {
    hoist[i] = hoistable_(decoded[i]);
    for (size_t j = 0; j < loads.size() && hoist[i]; ++j)
      hoist[i] =
          j == i || decoded[j].opcode != Opcode::Load || !loadSpan(decoded[i]).meets(loadSpan(decoded[j]));
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
  if (!error_) emitPrefetchedLoads();
  // The previous layer's step releases and barrier: popped before any load.
  popOwedLoadTokens();
  if (layerSeparate_ && layerHasGemm_ && layerHasVector_)
    emitSeparateSteps(numSteps);
  else
    emitSharedSteps(numSteps);
  steps_.clear();
  return {first, program_.size() - 1};
}

void ProgramBuilder::emitSharedSteps(int numSteps) {
  auto emitLoads = [&](int s) {
    std::vector<Encoded>& loads = steps_[size_t(s)].loads;
    if (loads.empty()) loads.push_back(syncWith(Queue::Load, {}));
    if (s >= kDepth) header::addTokens(loads.front(), kPopNext);  // slot freed by compute s-2
    header::addTokens(loads.back(), kPushNext);                   // tile s is in SRAM
    for (const Encoded& in : loads) emit(in);
  };
  if (numSteps > 0) emitLoads(0);
  for (int s = 0; s < numSteps; ++s) {
    if (s + 1 < numSteps) emitLoads(s + 1);
    std::vector<Encoded>& computes = steps_[size_t(s)].computes;
    if (computes.empty()) computes.push_back(syncWith(Queue::Compute, {}));
    header::addTokens(computes.front(), kPopPrev);                   // tile s loaded
    if (s >= kDepth) header::addTokens(computes.front(), kPopNext);  // output slot stored by step s-2
    header::addTokens(computes.back(), kPushPrev);                   // input slots of step s free
    header::addTokens(computes.back(), kPushNext);                   // output of step s ready
    for (const Encoded& in : computes) emit(in);
    std::vector<Encoded>& stores = steps_[size_t(s)].stores;
    if (stores.empty()) stores.push_back(syncWith(Queue::Store, {}));
    header::addTokens(stores.front(), kPopPrev);
    header::addTokens(stores.back(), kPushPrev);  // output slot free, tile in DRAM
    for (const Encoded& in : stores) emit(in);
  }
  // Barrier: wait for every store still in flight, then release the loads.
  const int inFlight = std::min(numSteps, kDepth);
  for (int i = 0; i < inFlight; ++i)
    emit(syncWith(Queue::Compute, {.popNext = true, .pushPrev = i + 1 == inFlight}));
  if (inFlight == 0) emit(syncWith(Queue::Compute, kPushPrev));
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
  for (EncodedStep& step : steps_) {  // the step's vector instructions leave the compute queue
    size_t kept = 0;                  // the matrix instructions stay in order at the front
    for (Encoded& in : step.computes) {
      if (isVector(in)) {
        header::setVectorQueue(in);
        step.vectors.push_back(in);
      } else {
        if (&step.computes[kept] != &in) step.computes[kept] = in;
        ++kept;
      }
    }
    step.computes.resize(kept);
  }
}

int ProgramBuilder::vectorToLoadLag() const {
  // Side tokens (vector->load) only when a load overwrites an accumulator
  // tile a requant of step s-2 reads (bias by DMA): otherwise the loads would
  // wait for the vector queue for nothing.
  // A fused residual add's operand slots are read by the vector queue too,
  // in a rotation of `layerVectorLoadSlots_` (three: a load then waits for
  // the epilogue of three steps before, not two, so the loads stay ahead).
  return layerLoadsAccumulator_ ? kDepth : layerVectorLoadSlots_;
}

void ProgramBuilder::emitSeparateSteps(int numSteps) {
  moveVectorInstructionsToVectorQueue();
  const int sideLag = vectorToLoadLag();
  const bool sideTokens = sideLag > 0;
  auto emitLoads = [&](int s) {
    std::vector<Encoded>& loads = steps_[size_t(s)].loads;
    if (loads.empty()) loads.push_back(syncWith(Queue::Load, {}));
    // Input and weight slots freed by the gemms of s-2.
    if (s >= kDepth) header::addTokens(loads.front(), kPopNext);
    // Accumulator tile (or residual slot) freed by the vector queue at s-sideLag.
    if (sideTokens && s >= sideLag) header::addTokens(loads.front(), kPopSide);
    header::addTokens(loads.back(), kPushNext);
    for (const Encoded& in : loads) emit(in);
  };
  if (numSteps > 0) emitLoads(0);
  for (int s = 0; s < numSteps; ++s) {
    if (s + 1 < numSteps) emitLoads(s + 1);
    EncodedStep& step = steps_[size_t(s)];
    if (step.computes.empty()) step.computes.push_back(syncWith(Queue::Compute, {}));
    header::addTokens(step.computes.front(), kPopPrev);
    if (s >= kDepth) header::addTokens(step.computes.front(), kPopSide);
    header::addTokens(step.computes.back(), {.pushPrev = true, .pushSide = true});
    for (const Encoded& in : step.computes) emit(in);
    if (step.vectors.empty()) step.vectors.push_back(syncWith(Queue::Vector, {}));
    header::addTokens(step.vectors.front(), kPopPrev);
    if (s >= kDepth) header::addTokens(step.vectors.front(), kPopNext);
    header::addTokens(step.vectors.back(), {.pushPrev = true, .pushNext = true, .pushSide = sideTokens});
    for (const Encoded& in : step.vectors) emit(in);
    if (step.stores.empty()) step.stores.push_back(syncWith(Queue::Store, {}));
    header::addTokens(step.stores.front(), kPopSide);
    header::addTokens(step.stores.back(), kPushSide);
    for (const Encoded& in : step.stores) emit(in);
  }
  emitSeparateBarrier(numSteps, sideTokens ? std::min(numSteps, sideLag) : 0);
}

void ProgramBuilder::emitSeparateBarrier(int numSteps, int sideCredits) {
  // Barrier: the vector queue waits for every store in flight, then releases
  // the loads; the compute queue takes back its tile credits, then releases
  // the loads too. The next layer's loads pop what is owed.
  const int inFlight = std::min(numSteps, kDepth);
  for (int i = 0; i < inFlight; ++i)
    emit(syncWith(Queue::Vector, {.popNext = true, .pushSide = i + 1 == inFlight}));
  for (int i = 0; i < inFlight; ++i)
    emit(syncWith(Queue::Compute, {.pushPrev = i + 1 == inFlight, .popSide = true}));
  pendingLoadPops_ = inFlight + 1;  // leftover slot credits + the compute barrier
  // Leftover tile credits + the vector barrier.
  pendingLoadSidePops_ = sideCredits + 1;
}

void ProgramBuilder::finish() {
  tag_ = 0;
  popOwedLoadTokens();
  Instruction fin;
  fin.opcode = Opcode::Finish;
  emit(*npu::isa::encode(fin));
}

}  // namespace ember::npu_backend
