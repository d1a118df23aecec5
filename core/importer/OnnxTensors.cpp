// ONNX element types and TensorProto decoding. Every size read from the file
// is checked before it is used: a malformed model gives an Error, never a
// crash or an oversized allocation.

#include <cstring>
#include <filesystem>
#include <fstream>

#include "OnnxImporter.h"

namespace ember::onnx_import {
namespace {

using onnx::TensorProto;

/// Bytes per element of an ONNX type in raw_data, or 0 when unsupported.
size_t onnxElemSize(int32_t dataType) {
  switch (dataType) {
    case TensorProto::FLOAT:
    case TensorProto::INT32:
      return 4;
    case TensorProto::INT64:
    case TensorProto::DOUBLE:
      return 8;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      return 2;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      return 1;
    default:
      return 0;
  }
}

/// Copies little-endian raw bytes of `dataType` into `out` (same element count).
void copyRaw(const char* bytes, int32_t dataType, Tensor& out) {
  const int64_t n = out.type().numElements();
  if (n == 0) return;
  const size_t size = onnxElemSize(dataType);
  if (size == elemSize(out.type().kind) && dataType != TensorProto::BOOL) {
    std::memcpy(out.data(), bytes, size_t(n) * size);
    return;
  }
  // Bool: any non-zero byte is true; stored as Ember's bool.
  for (int64_t i = 0; i < n; ++i) out.setElementFromDouble(i, bytes[i] != 0 ? 1.0 : 0.0);
}

Expected<Tensor> readExternal(const TensorProto& proto, const TensorSource& source, const Type& type) {
  if (source.baseDir.empty())
    return makeError(
        "tensor data is stored in an external file; load the model from a file, "
        "not from bytes, to read it");
  std::string location;
  int64_t offset = 0;
  std::optional<int64_t> length;
  for (const auto& entry : proto.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    } catch (const std::exception&) {
      return makeError("bad external_data entry '", entry.key(), "' = '", entry.value(), "'");
    }
  }
  namespace fs = std::filesystem;
  fs::path relative(location);
  if (location.empty() || relative.is_absolute())
    return makeError("external data location '", location, "' must be a relative path");
  for (const auto& part : relative)
    if (part == "..") return makeError("external data location '", location, "' must not contain '..'");
  const fs::path path = fs::path(source.baseDir) / relative;
  const size_t needed = type.sizeInBytes();
  if (offset < 0) return makeError("negative external data offset in '", location, "'");
  if (length && uint64_t(*length) != needed)
    return makeError("external data length ", *length, " does not match the tensor's ", needed, " bytes");
  std::error_code ec;
  const auto fileSize = fs::file_size(path, ec);
  if (ec) return makeError("cannot read external data file '", path.string(), "': ", ec.message());
  if (uint64_t(offset) > fileSize || fileSize - uint64_t(offset) < needed)
    return makeError("external data file '", path.string(), "' is too short (", fileSize, " bytes, need ",
                     needed, " at offset ", offset, ")");
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes(needed);
  in.seekg(offset);
  if (needed > 0 && !in.read(bytes.data(), std::streamsize(needed)))
    return makeError("cannot read external data file '", path.string(), "'");
  Tensor out = Tensor::forOverwrite(type);  // every element is written below
  copyRaw(bytes.data(), proto.data_type(), out);
  return out;
}

template <typename Field>
Error checkCount(const Field& field, int64_t n, const char* fieldName) {
  if (int64_t(field.size()) != n)
    return makeError(fieldName, " holds ", field.size(), " values but the shape has ", n, " elements");
  return Error::success();
}

}  // namespace

std::string onnxTypeName(int32_t dataType) {
  if (TensorProto::DataType_IsValid(dataType))
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(dataType));
  return "type " + std::to_string(dataType);
}

Expected<Type> typeFromOnnx(int32_t dataType, Dims dims) {
  switch (dataType) {
    case TensorProto::FLOAT:
      return Type(ElemKind::F32, std::move(dims));
    case TensorProto::DOUBLE:
      return Type(ElemKind::F64, std::move(dims));
    case TensorProto::FLOAT16:
      return Type(ElemKind::F16, std::move(dims));
    case TensorProto::BFLOAT16:
      return Type(ElemKind::BF16, std::move(dims));
    case TensorProto::INT32:
      return Type(ElemKind::I32, std::move(dims));
    case TensorProto::INT64:
      return Type(ElemKind::I64, std::move(dims));
    case TensorProto::BOOL:
      return Type(ElemKind::Bool, std::move(dims));
    // Plain 8-bit integers are modelled as quantized values with the identity
    // mapping, which data-movement ops handle.
    case TensorProto::INT8:
      return Type(ElemKind::Int8Q, std::move(dims), 1.0f, 0);
    case TensorProto::UINT8:
      return Type(ElemKind::UInt8Q, std::move(dims), 1.0f, 0);
    default:
      return makeError("unsupported element type ", onnxTypeName(dataType));
  }
}

namespace {

/// A tensor of `type` from the typed data fields of `proto` (float_data,
/// int64_data, double_data or int32_data), each checked to hold its elements.
Expected<Tensor> typedDataTensor(const TensorProto& proto, const Type& type) {
  const int64_t n = type.numElements();
  const int32_t dataType = proto.data_type();
  switch (dataType) {
    case TensorProto::FLOAT:
      EMBER_RETURN_IF_ERROR(checkCount(proto.float_data(), n, "float_data"));
      break;
    case TensorProto::INT64:
      EMBER_RETURN_IF_ERROR(checkCount(proto.int64_data(), n, "int64_data"));
      break;
    case TensorProto::DOUBLE:
      EMBER_RETURN_IF_ERROR(checkCount(proto.double_data(), n, "double_data"));
      break;
    default:
      EMBER_RETURN_IF_ERROR(checkCount(proto.int32_data(), n, "int32_data"));
      break;
  }
  Tensor out = Tensor::forOverwrite(type);  // every element is written below
  switch (dataType) {
    case TensorProto::FLOAT:
      if (n > 0) std::memcpy(out.data(), proto.float_data().data(), size_t(n) * sizeof(float));
      break;
    case TensorProto::INT64:
      if (n > 0) std::memcpy(out.data(), proto.int64_data().data(), size_t(n) * sizeof(int64_t));
      break;
    case TensorProto::DOUBLE:
      if (n > 0) std::memcpy(out.data(), proto.double_data().data(), size_t(n) * sizeof(double));
      break;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16: {
      // int32_data holds the 16-bit patterns.
      auto* bits = out.as<uint16_t>();
      for (int64_t i = 0; i < n; ++i) bits[i] = uint16_t(proto.int32_data(int(i)));
      break;
    }
    case TensorProto::INT32:
      if (n > 0) std::memcpy(out.data(), proto.int32_data().data(), size_t(n) * sizeof(int32_t));
      break;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL: {
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = proto.int32_data(int(i));
        if (dataType == TensorProto::BOOL)
          out.setElementFromDouble(i, v != 0 ? 1.0 : 0.0);
        else
          out.as<uint8_t>()[i] = uint8_t(v);  // two's complement for int8
      }
      break;
    }
    default:
      return makeError("unsupported element type ", onnxTypeName(dataType));
  }
  return out;
}

}  // namespace

Expected<Tensor> tensorFromProto(const TensorProto& proto, const TensorSource& source,
                                 std::optional<std::string_view> cutRawData) {
  Dims dims;
  for (int64_t d : proto.dims()) {
    if (d < 0) return makeError("negative dimension ", d);
    dims.push_back(d);
  }
  if (Error e = checkDims(dims, source.maxElements)) return e;
  EMBER_TRY(Type type, typeFromOnnx(proto.data_type(), dims));
  if (Error e = checkTensorBytes(type, source.maxTensorBytes)) return e;
  if (proto.has_segment()) return makeError("segmented tensors are unsupported");
  const int64_t n = type.numElements();
  const int32_t dataType = proto.data_type();

  // Sizes are checked against the data actually present before the tensor is
  // allocated: a few bytes claiming a huge shape must not allocate it.
  if (proto.data_location() == TensorProto::EXTERNAL) return readExternal(proto, source, type);
  if (cutRawData || proto.has_raw_data()) {
    const std::string_view raw = cutRawData ? *cutRawData : std::string_view(proto.raw_data());
    const uint64_t expected = uint64_t(n) * onnxElemSize(dataType);
    if (raw.size() != expected)
      return makeError("raw_data has ", raw.size(), " bytes but the shape ", dimsStr(dims), " needs ",
                       expected);
    Tensor out = Tensor::forOverwrite(type);  // every element is written below
    copyRaw(raw.data(), dataType, out);
    return out;
  }
  return typedDataTensor(proto, type);
}

}  // namespace ember::onnx_import
