#include "OnnxPayloadSplit.h"

#include <cstdint>

namespace ember::onnx_import {
namespace {

// Field numbers of onnx.proto along the walked path.
constexpr uint64_t kModelGraph = 7;        // ModelProto.graph
constexpr uint64_t kGraphInitializer = 5;  // GraphProto.initializer
constexpr uint64_t kTensorRawData = 9;     // TensorProto.raw_data

enum WireType : uint64_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

/// Reads protobuf wire format; every read fails on truncated or malformed input.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  bool atEnd() const { return pos_ == bytes_.size(); }
  size_t position() const { return pos_; }

  bool varint(uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ == bytes_.size()) return false;
      const auto byte = uint8_t(bytes_[pos_++]);
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;  // more than ten bytes
  }

  /// The value of a field of `wireType` (for length-delimited fields, the
  /// payload without its length). Groups are refused: ONNX does not use them.
  bool value(uint64_t wireType, std::string_view& out) {
    const size_t start = pos_;
    uint64_t ignored = 0;
    switch (wireType) {
      case kVarint:
        if (!varint(ignored)) return false;
        out = bytes_.substr(start, pos_ - start);
        return true;
      case kFixed64:
      case kFixed32: {
        const size_t size = wireType == kFixed64 ? 8 : 4;
        if (bytes_.size() - pos_ < size) return false;
        out = bytes_.substr(pos_, size);
        pos_ += size;
        return true;
      }
      case kLengthDelimited: {
        uint64_t length = 0;
        if (!varint(length) || length > bytes_.size() - pos_) return false;
        out = bytes_.substr(pos_, size_t(length));
        pos_ += size_t(length);
        return true;
      }
      default:
        return false;
    }
  }

  std::string_view slice(size_t from, size_t to) const { return bytes_.substr(from, to - from); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

void appendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(char(uint8_t(value) | 0x80));
    value >>= 7;
  }
  out.push_back(char(value));
}

void appendLengthDelimited(std::string& out, uint64_t field, std::string_view payload) {
  appendVarint(out, (field << 3) | kLengthDelimited);
  appendVarint(out, payload.size());
  out.append(payload);
}

enum class Level { Model, Graph, Tensor };

class Splitter {
 public:
  explicit Splitter(size_t minPayloadBytes) : minPayloadBytes_(minPayloadBytes) {}

  /// Re-encodes `message` of `level` into `out`, cutting payloads out of the
  /// initializers below it. False on malformed input.
  bool copy(std::string_view message, Level level, std::string& out) {
    WireReader reader(message);
    std::optional<std::string_view> payload;  // of this tensor, when level is Tensor
    while (!reader.atEnd()) {
      const size_t fieldStart = reader.position();
      uint64_t tag = 0;
      std::string_view value;
      if (!reader.varint(tag) || (tag >> 3) == 0 || !reader.value(tag & 7, value)) return false;
      const uint64_t field = tag >> 3;
      const bool nested = (tag & 7) == kLengthDelimited;
      if (nested && level == Level::Model && field == kModelGraph) {
        if (!copyNested(value, Level::Graph, field, out)) return false;
      } else if (nested && level == Level::Graph && field == kGraphInitializer) {
        if (!copyNested(value, Level::Tensor, field, out)) return false;
      } else if (nested && level == Level::Tensor && field == kTensorRawData) {
        // The last occurrence wins, as in protobuf's parse.
        if (value.size() >= minPayloadBytes_) {
          payload = value;
          appendLengthDelimited(out, field, {});
        } else {
          payload.reset();
          out.append(reader.slice(fieldStart, reader.position()));
        }
      } else {
        out.append(reader.slice(fieldStart, reader.position()));
      }
    }
    if (level == Level::Tensor) result_.payloads.push_back(payload);
    return true;
  }

  SplitModel take() { return std::move(result_); }

 private:
  bool copyNested(std::string_view message, Level level, uint64_t field, std::string& out) {
    std::string inner;
    if (!copy(message, level, inner)) return false;
    appendLengthDelimited(out, field, inner);
    return true;
  }

  size_t minPayloadBytes_;
  SplitModel result_;
};

}  // namespace

std::optional<SplitModel> splitInitializerPayloads(std::string_view model, size_t minPayloadBytes) {
  Splitter splitter(minPayloadBytes);
  std::string structure;
  structure.reserve(4096);
  if (!splitter.copy(model, Level::Model, structure)) return std::nullopt;
  SplitModel split = splitter.take();
  split.structure = std::move(structure);
  return split;
}

}  // namespace ember::onnx_import
