// .npy reading and writing (NumPy format versions 1.0, 2.0 and 3.0).
//
// The header is a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Files come from users, so the parser bounds every length, accepts only the
// three keys NumPy writes, and reports problems as Errors naming the file.
#include "ember/Npy.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

#include "ember/FileIO.h"
#include "ember/TextEscape.h"

namespace ember {
namespace {

static_assert(std::endian::native == std::endian::little, "the .npy code assumes a little-endian host");

constexpr std::string_view kMagic = "\x93NUMPY";
/// Magic, two version bytes: the length field follows.
constexpr size_t kPreambleSize = kMagic.size() + 2;
/// NumPy itself refuses headers above 10000 bytes by default; allow more, but
/// never an arbitrary amount.
constexpr size_t kMaxHeaderSize = size_t(1) << 20;
/// NumPy aligns the data to 64 bytes.
constexpr size_t kAlignment = 64;

/// The parsed header dict.
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  Dims shape;
};

/// A tiny parser for the Python literal subset NumPy writes: a dict of string
/// keys whose values are strings, True/False or tuples of integers.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  Expected<NpyHeader> parse() {
    NpyHeader header;
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skipSpace();
    if (!consume('{')) return fail("expected '{'");
    while (true) {
      skipSpace();
      if (consume('}')) break;
      std::string key;
      EMBER_RETURN_IF_ERROR(parseString(key));
      skipSpace();
      if (!consume(':')) return fail("expected ':' after key '" + key + "'");
      skipSpace();
      if (key == "descr") {
        if (peek() == '[') return Error::make("structured (record) arrays are not supported");
        EMBER_RETURN_IF_ERROR(parseString(header.descr));
        haveDescr = true;
      } else if (key == "fortran_order") {
        EMBER_RETURN_IF_ERROR(parseBool(header.fortranOrder));
        haveOrder = true;
      } else if (key == "shape") {
        EMBER_RETURN_IF_ERROR(parseShape(header.shape));
        haveShape = true;
      } else {
        return fail("unexpected key '" + key + "'");
      }
      skipSpace();
      if (consume(',')) continue;
      skipSpace();
      if (consume('}')) break;
      return fail("expected ',' or '}'");
    }
    skipSpace();
    if (pos_ != text_.size()) return fail("unexpected text after the header dict");
    if (!haveDescr) return Error::make("header has no 'descr' key");
    if (!haveOrder) return Error::make("header has no 'fortran_order' key");
    if (!haveShape) return Error::make("header has no 'shape' key");
    return header;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  Error fail(const std::string& what) const {
    return makeError("malformed header: ", what, " at offset ", pos_);
  }

  Error parseString(std::string& out) {
    char quote = peek();
    if (quote != '\'' && quote != '"') return fail("expected a quoted string");
    ++pos_;
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return fail("unterminated string");
    out.assign(text_.substr(pos_, end - pos_));
    if (out.find('\\') != std::string::npos) return fail("escape sequences are not supported");
    pos_ = end + 1;
    return Error::success();
  }

  Error parseBool(bool& out) {
    if (text_.substr(pos_, 4) == "True") {
      out = true;
      pos_ += 4;
    } else if (text_.substr(pos_, 5) == "False") {
      out = false;
      pos_ += 5;
    } else {
      return fail("expected True or False");
    }
    return Error::success();
  }

  Error parseShape(Dims& out) {
    if (!consume('(')) return fail("expected '(' to start the shape");
    while (true) {
      skipSpace();
      if (consume(')')) return Error::success();
      if (out.size() > kMaxRank)
        return Error::make("shape has more than " + std::to_string(kMaxRank) + " dims");
      if (peek() == '-') return fail("negative dimension");
      if (peek() < '0' || peek() > '9') return fail("expected a dimension");
      int64_t value = 0;
      while (peek() >= '0' && peek() <= '9') {
        int digit = peek() - '0';
        if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return fail("dimension too large");
        value = value * 10 + digit;
        ++pos_;
      }
      consume('L');  // Python 2 long suffix in old files
      out.push_back(value);
      skipSpace();
      if (consume(',')) continue;
      skipSpace();
      if (consume(')')) return Error::success();
      return fail("expected ',' or ')' in the shape");
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

/// How the data of a descr is stored and what it becomes.
struct DtypeInfo {
  ElemKind kind;    ///< element kind of the resulting tensor
  size_t fileSize;  ///< bytes per element in the file
};

Expected<DtypeInfo> parseDescr(const std::string& descr) {
  if (descr.size() < 2) return makeError("unsupported dtype '", descr, "'");
  char order = descr[0];
  std::string code = descr.substr(1);
  switch (code[0]) {
    case 'O':
      return makeError("object arrays ('", descr, "') are not supported");
    case 'U':
    case 'S':
    case 'a':
      return makeError("string arrays ('", descr, "') are not supported");
    case 'V':
      return makeError("void/record arrays ('", descr, "') are not supported");
    case 'c':
      return makeError("complex arrays ('", descr, "') are not supported");
    default:
      break;
  }
  if (order != '<' && order != '|' && order != '=' && order != '>')
    return makeError("unsupported dtype '", descr, "'");

  // Single bytes have no byte order; wider elements must be little-endian.
  if (code == "i1") return DtypeInfo{ElemKind::Int8Q, 1};
  if (code == "u1") return DtypeInfo{ElemKind::UInt8Q, 1};
  if (code == "b1") return DtypeInfo{ElemKind::Bool, 1};
  std::optional<DtypeInfo> wide;
  if (code == "f4") wide = DtypeInfo{ElemKind::F32, 4};
  if (code == "f8") wide = DtypeInfo{ElemKind::F64, 8};
  if (code == "f2") wide = DtypeInfo{ElemKind::F16, 2};
  if (code == "i8") wide = DtypeInfo{ElemKind::I64, 8};
  if (code == "i4") wide = DtypeInfo{ElemKind::I32, 4};
  if (wide && order == '>') return makeError("big-endian arrays ('", descr, "') are not supported");
  if (wide && order != '|') return *wide;
  return makeError("unsupported dtype '", descr, "' (supported: <f4, <f8, <f2, <i8, <i4, |i1, |u1, |b1)");
}

uint32_t readLE(const std::string& bytes, size_t pos, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= uint32_t(uint8_t(bytes[pos + i])) << (8 * i);
  return v;
}

Expected<Tensor> parseNpyImpl(const std::string& bytes) {
  if (bytes.size() < kPreambleSize || std::string_view(bytes).substr(0, kMagic.size()) != kMagic)
    return Error::make("not a .npy file (bad magic)");
  unsigned major = uint8_t(bytes[6]), minor = uint8_t(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    return makeError("unsupported .npy format version ", major, ".", minor);
  size_t lengthWidth = major == 1 ? 2 : 4;
  if (bytes.size() < kPreambleSize + lengthWidth) return Error::make("truncated header");
  size_t headerLength = readLE(bytes, kPreambleSize, lengthWidth);
  if (headerLength > kMaxHeaderSize)
    return makeError("header length ", headerLength, " exceeds the limit of ", kMaxHeaderSize, " bytes");
  size_t dataStart = kPreambleSize + lengthWidth + headerLength;
  if (bytes.size() < dataStart) return Error::make("truncated header");
  std::string_view headerText = std::string_view(bytes).substr(kPreambleSize + lengthWidth, headerLength);
  if (headerText.find('\0') != std::string_view::npos) return Error::make("malformed header: NUL byte");

  Expected<NpyHeader> parsedHeader = HeaderParser(headerText).parse();
  if (!parsedHeader) return parsedHeader.error();
  const NpyHeader& header = *parsedHeader;
  if (header.fortranOrder) return Error::make("Fortran-order arrays are not supported");
  Expected<DtypeInfo> parsedDtype = parseDescr(header.descr);
  if (!parsedDtype) return parsedDtype.error();
  const DtypeInfo dtype = *parsedDtype;
  if (header.shape.size() > kMaxRank)
    return makeError("rank ", header.shape.size(), " exceeds the maximum rank ", kMaxRank);
  EMBER_RETURN_IF_ERROR(checkDims(header.shape).withContext("bad shape (" + dimsStr(header.shape) + ")"));

  Type type(dtype.kind, header.shape);
  uint64_t count = uint64_t(type.numElements());
  uint64_t available = bytes.size() - dataStart;
  uint64_t needed = count * dtype.fileSize;  // count <= 2^40 after checkDims: no overflow
  if (needed != available) {
    return makeError(available < needed ? "truncated data: " : "trailing bytes after the data: ", "shape ",
                     dimsStr(header.shape), " of '", header.descr, "' needs ", needed,
                     " bytes, the file has ", available);
  }

  Tensor tensor(type);
  const char* data = bytes.data() + dataStart;
  if (dtype.kind == ElemKind::Bool) {
    // NumPy bools are 0/1; normalise anything else instead of keeping odd bytes.
    auto* out = tensor.as<uint8_t>();
    for (uint64_t i = 0; i < count; ++i) out[i] = data[i] != 0;
  } else if (count > 0) {
    std::memcpy(tensor.data(), data, count * dtype.fileSize);
  }
  return tensor;
}

/// The descr a tensor is written with and the kind its data is stored as.
struct WriteFormat {
  const char* descr;
  ElemKind storedAs;
};

WriteFormat writeFormat(ElemKind kind) {
  switch (kind) {
    case ElemKind::F32:
      return {"<f4", ElemKind::F32};
    case ElemKind::F16:
      return {"<f2", ElemKind::F16};
    case ElemKind::BF16:
      return {"<f4", ElemKind::F32};  // NumPy has no bfloat16: widen
    case ElemKind::Int8Q:
      return {"|i1", ElemKind::Int8Q};
    case ElemKind::UInt8Q:
      return {"|u1", ElemKind::UInt8Q};
    case ElemKind::Int32Q:
      return {"<i4", ElemKind::Int32Q};
    case ElemKind::I32:
      return {"<i4", ElemKind::I32};
    case ElemKind::I64:
      return {"<i8", ElemKind::I64};
    case ElemKind::Bool:
      return {"|b1", ElemKind::Bool};
    case ElemKind::F64:
      return {"<f8", ElemKind::F64};
  }
  assert(false && "unknown ElemKind");
  return {"<f4", ElemKind::F32};
}

}  // namespace

Expected<Tensor> parseNpy(const std::string& bytes, const std::string& origin) {
  Expected<Tensor> result = parseNpyImpl(bytes);
  if (!result) return oneLineError(result.error().withContext(origin));
  return result;
}

Expected<Tensor> readNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open: ", std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return makeError(path, ": read error");
  return parseNpy(buffer.str(), path);
}

std::string serializeNpy(const Tensor& tensor) {
  const Type& type = tensor.type();
  WriteFormat format = writeFormat(type.kind);

  std::string dict = std::string("{'descr': '") + format.descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < type.dims.size(); ++i) {
    if (i) dict += ", ";
    dict += std::to_string(type.dims[i]);
  }
  if (type.dims.size() == 1) dict += ",";
  dict += "), }";
  // Like NumPy (>= 1.23): spare room so the leading dim can grow in place,
  // which also makes our files byte-identical to np.save's.
  constexpr size_t kGrowthDigits = 21;
  if (!type.dims.empty()) dict.append(kGrowthDigits - std::to_string(type.dims[0]).size(), ' ');

  // Version 1.0 has a 16-bit header length; use 2.0 only when it overflows.
  // The padding rule (1..64 spaces) is NumPy's.
  auto paddedLength = [&](size_t lengthWidth) {
    size_t unpadded = kPreambleSize + lengthWidth + dict.size() + 1;
    return dict.size() + 1 + (kAlignment - unpadded % kAlignment);
  };
  size_t lengthWidth = 2;
  unsigned major = 1;
  size_t headerLength = paddedLength(2);
  if (headerLength > 0xFFFF) {
    lengthWidth = 4;
    major = 2;
    headerLength = paddedLength(4);
  }
  size_t padding = headerLength - dict.size() - 1;

  std::string out(kMagic);
  out += char(major);
  out += char(0);
  for (size_t i = 0; i < lengthWidth; ++i) out += char((headerLength >> (8 * i)) & 0xFF);
  out += dict;
  out.append(padding, ' ');
  out += '\n';

  int64_t count = type.numElements();
  if (format.storedAs == type.kind) {
    if (count > 0) out.append(static_cast<const char*>(tensor.data()), tensor.sizeInBytes());
  } else {
    // BF16 widened to f32 exactly: its bits become the f32's upper half (a
    // detour through double would quiet signalling NaNs).
    out.reserve(out.size() + size_t(count) * 4);
    const auto* halves = static_cast<const uint16_t*>(tensor.data());
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t wide = uint32_t(halves[i]) << 16;
      char raw[4];
      std::memcpy(raw, &wide, 4);
      out.append(raw, 4);
    }
  }
  return out;
}

Tensor narrowFloat64(Tensor tensor, ElemKind kind) {
  if (tensor.type().kind != ElemKind::F64 || !isFloat(kind) || kind == ElemKind::F64) return tensor;
  Tensor narrowed(tensor.type().withKind(kind));
  for (int64_t i = 0, n = tensor.type().numElements(); i < n; ++i)
    narrowed.setElementFromDouble(i, tensor.elementAsDouble(i));
  return narrowed;
}

Error writeNpy(const std::string& path, const Tensor& tensor) {
  return writeFile(path, serializeNpy(tensor));
}

}  // namespace ember
