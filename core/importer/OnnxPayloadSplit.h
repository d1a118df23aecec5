// Cuts the main graph's large initializer payloads out of a serialized ONNX
// model, so that protobuf parses only the graph's structure and the importer
// reads each payload in place (from the mapped file) instead of from a copy.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::onnx_import {

struct SplitModel {
  /// The model with each large `raw_data` of the main graph's initializers
  /// replaced by an empty one: parse this instead of the original bytes.
  std::string structure;
  /// Per initializer of the main graph, in order: the bytes of its cut-out
  /// `raw_data` (a view into the original bytes), or nullopt when it was kept.
  std::vector<std::optional<std::string_view>> payloads;
};

/// Splits `model` (ModelProto wire format). Payloads shorter than
/// `minPayloadBytes` stay in place. Returns nullopt when the bytes are not
/// well-formed protobuf along the path it walks: the caller then parses the
/// original bytes and lets protobuf report the error.
std::optional<SplitModel> splitInitializerPayloads(std::string_view model, size_t minPayloadBytes);

}  // namespace ember::onnx_import
