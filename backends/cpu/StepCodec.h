// Steps as bytes: an AOT object carries each kernel step's descriptor as a
// blob in its read-only data, and the AOT runtime rebuilds the step from it.
// The blob's layout is private to one Ember build: the object and the
// runtime library must come from the same SDK (kStepFormat guards it).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "Steps.h"

namespace ember::cpu {

/// Bumped whenever a step's fields or their encoding change.
inline constexpr int32_t kStepFormat = 7;

/// The step's kind and fields; an error for a step kind without an encoding.
Expected<std::vector<uint8_t>> encodeStep(const Step& step);
/// The step a blob from encodeStep describes; an error for a malformed blob.
Expected<std::unique_ptr<Step>> decodeStep(const uint8_t* data, size_t size);

}  // namespace ember::cpu
