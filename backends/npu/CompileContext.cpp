#include "CompileContext.h"

#include <cstring>

#include "WeightPrefetch.h"

namespace ember::npu_backend {

CompileContext::CompileContext(const IRFunction& ir, const npu::NpuConfig& config)
    : ir_(ir), config_(config), cost_(config), sram_(config) {
  activationBase_ = alignUp(ir.plan().ioBytes, 64);
  weightsOffset_ = alignUp(activationBase_ + ir.plan().activationBytes, 64);
  // The image holds the constants re-laid (plus biases and tables): reserved
  // once, so it is not copied and page-faulted in again on every doubling.
  weights_.reserve(ir.plan().constantBytes + ir.plan().constantBytes / 4);
  if (config.prefetchWeights)
    program_.prefetchFirstLoads(
        [this](const npu::isa::Instruction& load) { return prefetchable(load, weightsOffset_, sram_); });
}

uint64_t CompileContext::addressOf(ValueId id) {
  auto [root, offset] = ir_.resolve(id);
  const IRValue& value = ir_.value(root);
  switch (ir_.regionOf(root)) {
    case Region::IO:
      return ioBase() + value.offset + offset;
    case Region::Activations:
      return activationBase_ + value.offset + offset;
    case Region::Constants: {
      auto it = constants_.find(root);
      if (it == constants_.end())
        it = constants_.emplace(root, addWeights(value.payload->data(), value.type.sizeInBytes())).first;
      return it->second + offset;
    }
  }
  return 0;
}

uint64_t CompileContext::addWeights(const void* data, size_t bytes, size_t align) {
  const uint64_t at = alignUp(weights_.size(), align);
  weights_.resize(at + bytes);
  if (bytes) std::memcpy(weights_.data() + at, data, bytes);
  return weightsOffset_ + at;
}

uint64_t CompileContext::fillRegion(int8_t value, uint64_t bytes) {
  auto it = fills_.find(value);
  if (it != fills_.end() && it->second.second >= bytes) return it->second.first;
  std::vector<int8_t> fill(bytes, value);
  const uint64_t at = addWeights(fill.data(), bytes);
  fills_[value] = {at, bytes};
  return at;
}

}  // namespace ember::npu_backend
