// Static checks of an NPU program, run by the compiler on every program it
// emits and by `ember sim --check` (docs/npu/architecture.md "Static program
// checks", docs/npu/compiler.md). They are written
// independently of the compiler's allocator and scheduler, so a bug in either
// is caught before a program runs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ember/Error.h"
#include "ember/npu/Config.h"
#include "ember/npu/Isa.h"

namespace ember::npu {

namespace detail {
struct QueueView;
}

/// The executed part of a program (up to its first FINISH) split into its
/// queues, with every instruction's fields range-checked. checkTokens,
/// checkWeightBuffers and checkSramRaces all need it; a compiler builds it once
/// for all three (on programs of millions of instructions). Refers to
/// `program`, which must outlive it and stay unchanged.
class ProgramView {
 public:
  /// Fails on a program without FINISH, an undefined opcode, a field out of
  /// its range or a token toward a queue that does not exist.
  static Expected<ProgramView> of(const std::vector<isa::Instruction>& program);
  /// The same over the encoded program (a bundle's, or the compiler's as it
  /// emits it): a check decodes an instruction when it reads it, so no decoded
  /// copy of the program (~550 bytes an instruction) is ever held.
  static Expected<ProgramView> of(std::span<const isa::EncodedInstruction> program);
  ProgramView(ProgramView&&) noexcept;
  ProgramView& operator=(ProgramView&&) noexcept;
  ~ProgramView();

  /// Instruction `index` (below the first FINISH), decoded.
  isa::Instruction at(size_t index) const;
  const detail::QueueView& queues() const { return *queues_; }

 private:
  ProgramView(std::span<const isa::Instruction> decoded, std::span<const isa::EncodedInstruction> encoded,
              std::unique_ptr<detail::QueueView> queues);
  std::span<const isa::Instruction> decoded_;  ///< one of the two is empty
  std::span<const isa::EncodedInstruction> encoded_;
  std::unique_ptr<detail::QueueView> queues_;
};

/// Dependency tokens: executes the program abstractly (fetch in program order
/// into queues of the config's depths, each queue in order, counting
/// semaphores as in isa.md, no timing). Fails on a deadlock (naming the blocked
/// instruction of each queue and the token it waits for, and fetch blocked on a
/// full queue) and on unbalanced tokens: data-ready tokens (load->compute,
/// compute->store) never popped, naming the pushing instruction. Buffer-free
/// credits (compute->load, store->compute) may remain at the end, as double
/// buffering returns them after each buffer's last use.
Error checkTokens(const std::vector<isa::Instruction>& program, const NpuConfig& config);
/// checkTokens on a view already built.
Error checkTokens(const ProgramView& program, const NpuConfig& config);

/// SRAM races: every pair of instructions on different queues that touch
/// overlapping scratchpad or accumulator bytes, one of them writing, must be
/// ordered by program order within a queue plus the token edges. Also checks
/// every SRAM access lies inside the configured scratchpad/accumulator. Errors
/// name both instruction indices and the address range.
Error checkSramRaces(const std::vector<isa::Instruction>& program, const NpuConfig& config);
/// checkSramRaces on a view already built.
Error checkSramRaces(const ProgramView& program, const NpuConfig& config);

/// Weight buffers: every gemm's `wbuf` names a buffer the config has
/// (matrix_engine.weight_buffers), and a gemm without preload streams from a
/// buffer whose last preload (in program order) was exactly its k x n. Errors
/// name the gemm, its buffer and what that buffer holds. Preloading a buffer
/// that an earlier gemm still streams from is legal: the engine's weight
/// loader waits for that stream to end (docs/npu/timing-model.md).
Error checkWeightBuffers(const std::vector<isa::Instruction>& program, const NpuConfig& config);
/// checkWeightBuffers on a view already built.
Error checkWeightBuffers(const ProgramView& program, const NpuConfig& config);

/// One SRAM buffer of the compiler's static allocation.
struct SramBuffer {
  std::string name;                                    ///< e.g. "conv1.input[1]" (layer and role)
  bool accumulator = false;                            ///< accumulator (int32 entries) or scratchpad (bytes)
  uint64_t address = 0, size = 0;                      ///< bytes (scratchpad) or entries (accumulator)
  uint64_t firstInstruction = 0, lastInstruction = 0;  ///< live range, inclusive
};

/// The allocation overlap check: no two buffers live at the same time share
/// an address, and every buffer fits in its memory. Errors name both buffers.
Error checkAllocation(const std::vector<SramBuffer>& buffers, const NpuConfig& config);

}  // namespace ember::npu
