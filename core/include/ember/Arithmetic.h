// Small integer helpers shared by the compiler, the backends and the simulator.
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>

namespace ember {

/// ceil(numerator / denominator) for numerator >= 0 and denominator > 0.
/// Computed in 64 bits: unsigned when both operands are unsigned (the
/// simulator's byte and cycle counts), signed otherwise (shapes and tiles).
template <std::integral Numerator, std::integral Denominator>
constexpr auto ceilDiv(Numerator numerator, Denominator denominator) {
  using Wide =
      std::conditional_t<std::is_unsigned_v<Numerator> && std::is_unsigned_v<Denominator>, uint64_t, int64_t>;
  return (Wide(numerator) + Wide(denominator) - 1) / Wide(denominator);
}

/// The smallest multiple of `multiple` that is >= value, for value >= 0 and
/// multiple > 0 (a byte offset to an alignment, a size to a panel width), in
/// the value's type.
template <std::integral Value, std::integral Multiple>
constexpr Value alignUp(Value value, Multiple multiple) {
  const auto blocks = ceilDiv(value, multiple);
  return Value(blocks * decltype(blocks)(multiple));
}

}  // namespace ember
