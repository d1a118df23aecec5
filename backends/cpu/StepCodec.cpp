// Step descriptors as bytes (StepCodec.h): a kind tag, then the fields in a
// fixed order. Plain structs of numbers (the kernels' call shapes, addresses)
// are copied whole; their pointers are null at compile time and are filled at
// run time from the region addresses.
#include "StepCodec.h"

#include <cstring>
#include <string>
#include <type_traits>

namespace ember::cpu {
namespace {

enum class StepTag : uint8_t {
  Gemm = 1,
  MatMul,
  Depthwise,
  Pool,
  Reduce,
  Transpose,
  Reference,
  Int8Conv,
  Int8Add,
  Int8Depthwise,
  Int8Pool,
  Int8Quantize,
  DirectConv,
  WinogradConv
};

class ByteWriter {
 public:
  template <typename T>
  void pod(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void str(const std::string& s) {
    pod(uint64_t(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    pod(uint64_t(v.size()));
    for (const T& x : v) pod(x);
  }
  std::vector<uint8_t> bytes;
};

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  T pod() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value{};
    if (!take(sizeof(T))) return value;
    std::memcpy(&value, data_ + pos_ - sizeof(T), sizeof(T));
    return value;
  }
  std::string str() {
    uint64_t n = pod<uint64_t>();
    if (!take(n)) return {};
    return std::string(reinterpret_cast<const char*>(data_ + pos_ - n), n);
  }
  template <typename T>
  std::vector<T> vec() {
    uint64_t n = pod<uint64_t>();
    std::vector<T> v;
    if (n > size_) {
      failed_ = true;
      return v;
    }
    for (uint64_t i = 0; i < n && !failed_; ++i) v.push_back(pod<T>());
    return v;
  }
  bool ok() const { return !failed_ && pos_ == size_; }
  bool failed() const { return failed_; }

 private:
  bool take(uint64_t n) {
    if (failed_ || n > size_ - pos_) {
      failed_ = true;
      return false;
    }
    pos_ += n;
    return true;
  }
  const uint8_t* data_;
  size_t size_, pos_ = 0;
  bool failed_ = false;
};

void writeType(ByteWriter& w, const Type& t) {
  w.pod(int32_t(t.kind));
  w.vec(std::vector<int64_t>(t.dims.begin(), t.dims.end()));
  w.pod(t.scale);
  w.pod(t.offset);
}

Type readType(ByteReader& r) {
  Type t;
  t.kind = ElemKind(r.pod<int32_t>());
  std::vector<int64_t> dims = r.vec<int64_t>();
  t.dims = Dims(dims.begin(), dims.end());
  t.scale = r.pod<float>();
  t.offset = r.pod<int32_t>();
  return t;
}

enum class AttrTag : uint8_t { Int, Float, String, Ints, Floats };

void writeAttributes(ByteWriter& w, const Attributes& attrs) {
  w.pod(uint64_t(attrs.entries().size()));
  for (const auto& [name, value] : attrs.entries()) {
    w.str(name);
    w.pod(uint8_t(value.index()));
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::string>)
            w.str(v);
          else if constexpr (std::is_same_v<V, std::vector<int64_t>> ||
                             std::is_same_v<V, std::vector<double>>)
            w.vec(v);
          else
            w.pod(v);
        },
        value);
  }
}

Attributes readAttributes(ByteReader& r) {
  Attributes attrs;
  uint64_t n = r.pod<uint64_t>();
  for (uint64_t i = 0; i < n && !r.failed(); ++i) {
    std::string name = r.str();
    switch (AttrTag(r.pod<uint8_t>())) {
      case AttrTag::Int:
        attrs.set(name, r.pod<int64_t>());
        break;
      case AttrTag::Float:
        attrs.set(name, r.pod<double>());
        break;
      case AttrTag::String:
        attrs.set(name, r.str());
        break;
      case AttrTag::Ints:
        attrs.set(name, r.vec<int64_t>());
        break;
      case AttrTag::Floats:
        attrs.set(name, r.vec<double>());
        break;
    }
  }
  return attrs;
}

void writeOperands(ByteWriter& w, const std::vector<std::pair<Type, Address>>& operands) {
  w.pod(uint64_t(operands.size()));
  for (const auto& [type, address] : operands) {
    writeType(w, type);
    w.pod(address);
  }
}

std::vector<std::pair<Type, Address>> readOperands(ByteReader& r) {
  std::vector<std::pair<Type, Address>> operands;
  uint64_t n = r.pod<uint64_t>();
  for (uint64_t i = 0; i < n && !r.failed(); ++i) {
    Type t = readType(r);
    operands.emplace_back(t, r.pod<Address>());
  }
  return operands;
}

// One writer and one reader per step kind, side by side: the reader takes the
// fields in the order the writer puts them.
void writeGemmStep(ByteWriter& w, const GemmStep& s) {
  w.pod(StepTag::Gemm);
  w.pod(s.shape);
  w.pod(s.a);
  w.pod(s.c);
  w.pod(s.packedB);
  w.pod(s.groups);
  w.pod(s.groupInChannels);
  w.pod(s.groupOutChannels);
  w.pod(s.packedGroupFloats);
  w.pod(s.epilogue);
}

std::unique_ptr<Step> readGemmStep(ByteReader& r) {
  auto s = std::make_unique<GemmStep>();
  s->shape = r.pod<GemmCall>();
  s->a = r.pod<Address>();
  s->c = r.pod<Address>();
  s->packedB = r.pod<Address>();
  s->groups = r.pod<int64_t>();
  s->groupInChannels = r.pod<int64_t>();
  s->groupOutChannels = r.pod<int64_t>();
  s->packedGroupFloats = r.pod<size_t>();
  s->epilogue = r.pod<EpilogueAddrs>();
  return s;
}

void writeDirectConvStep(ByteWriter& w, const DirectConvStep& s) {
  w.pod(StepTag::DirectConv);
  w.pod(s.shape);
  w.pod(s.input);
  w.pod(s.output);
  w.pod(s.packedB);
  w.pod(s.epilogue);
}

std::unique_ptr<Step> readDirectConvStep(ByteReader& r) {
  auto s = std::make_unique<DirectConvStep>();
  s->shape = r.pod<DirectConvCall>();
  s->input = r.pod<Address>();
  s->output = r.pod<Address>();
  s->packedB = r.pod<Address>();
  s->epilogue = r.pod<EpilogueAddrs>();
  return s;
}

void writeWinogradConvStep(ByteWriter& w, const WinogradConvStep& s) {
  w.pod(StepTag::WinogradConv);
  w.pod(s.shape);
  w.pod(s.input);
  w.pod(s.output);
  w.pod(s.packedFilter);
  w.pod(s.epilogue);
}

std::unique_ptr<Step> readWinogradConvStep(ByteReader& r) {
  auto s = std::make_unique<WinogradConvStep>();
  s->shape = r.pod<WinogradConvCall>();
  s->input = r.pod<Address>();
  s->output = r.pod<Address>();
  s->packedFilter = r.pod<Address>();
  s->epilogue = r.pod<EpilogueAddrs>();
  return s;
}

void writeMatMulStep(ByteWriter& w, const MatMulStep& s) {
  w.pod(StepTag::MatMul);
  w.pod(s.lhs);
  w.pod(s.rhs);
  w.pod(s.out);
  w.pod(s.m);
  w.pod(s.k);
  w.pod(s.n);
  w.vec(s.lhsBatchOffsets);
  w.vec(s.rhsBatchOffsets);
  w.pod(s.epilogue);
}

std::unique_ptr<Step> readMatMulStep(ByteReader& r) {
  auto s = std::make_unique<MatMulStep>();
  s->lhs = r.pod<Address>();
  s->rhs = r.pod<Address>();
  s->out = r.pod<Address>();
  s->m = r.pod<int64_t>();
  s->k = r.pod<int64_t>();
  s->n = r.pod<int64_t>();
  s->lhsBatchOffsets = r.vec<int64_t>();
  s->rhsBatchOffsets = r.vec<int64_t>();
  s->epilogue = r.pod<EpilogueAddrs>();
  return s;
}

void writeDepthwiseStep(ByteWriter& w, const DepthwiseStep& s) {
  w.pod(StepTag::Depthwise);
  w.pod(s.shape);
  w.pod(s.input);
  w.pod(s.filter);
  w.pod(s.output);
  w.pod(s.epilogue);
}

std::unique_ptr<Step> readDepthwiseStep(ByteReader& r) {
  auto s = std::make_unique<DepthwiseStep>();
  s->shape = r.pod<DepthwiseCall>();
  s->input = r.pod<Address>();
  s->filter = r.pod<Address>();
  s->output = r.pod<Address>();
  s->epilogue = r.pod<EpilogueAddrs>();
  return s;
}

void writePoolStep(ByteWriter& w, const PoolStep& s) {
  w.pod(StepTag::Pool);
  w.pod(s.shape);
  w.pod(s.input);
  w.pod(s.output);
}

std::unique_ptr<Step> readPoolStep(ByteReader& r) {
  auto s = std::make_unique<PoolStep>();
  s->shape = r.pod<PoolCall>();
  s->input = r.pod<Address>();
  s->output = r.pod<Address>();
  return s;
}

void writeReduceStep(ByteWriter& w, const ReduceStep& s) {
  w.pod(StepTag::Reduce);
  w.pod(s.input);
  w.pod(s.output);
  w.pod(s.outer);
  w.pod(s.reduce);
  w.pod(s.inner);
  w.pod(s.kind);
}

std::unique_ptr<Step> readReduceStep(ByteReader& r) {
  auto s = std::make_unique<ReduceStep>();
  s->input = r.pod<Address>();
  s->output = r.pod<Address>();
  s->outer = r.pod<int64_t>();
  s->reduce = r.pod<int64_t>();
  s->inner = r.pod<int64_t>();
  s->kind = r.pod<ReduceKind>();
  return s;
}

void writeTransposeStep(ByteWriter& w, const TransposeStep& s) {
  w.pod(StepTag::Transpose);
  w.pod(s.input);
  w.pod(s.output);
  w.pod(s.elemSize);
  w.vec(s.dims);
  w.vec(s.perm);
}

std::unique_ptr<Step> readTransposeStep(ByteReader& r) {
  auto s = std::make_unique<TransposeStep>();
  s->input = r.pod<Address>();
  s->output = r.pod<Address>();
  s->elemSize = r.pod<size_t>();
  s->dims = r.vec<int64_t>();
  s->perm = r.vec<int64_t>();
  return s;
}

void writeInt8ConvStep(ByteWriter& w, const Int8ConvStep& s) {
  w.pod(StepTag::Int8Conv);
  w.pod(s.shape);
  w.pod(s.input);
  w.pod(s.output);
  w.pod(s.weights);
  w.pod(s.residual);
}

std::unique_ptr<Step> readInt8ConvStep(ByteReader& r) {
  auto s = std::make_unique<Int8ConvStep>();
  s->shape = r.pod<Int8ConvCall>();
  s->input = r.pod<Address>();
  s->output = r.pod<Address>();
  s->weights = r.pod<Address>();
  s->residual = r.pod<Address>();
  return s;
}

void writeInt8DepthwiseStep(ByteWriter& w, const Int8DepthwiseStep& s) {
  w.pod(StepTag::Int8Depthwise);
  w.pod(s.shape);
  w.pod(s.input);
  w.pod(s.output);
  w.pod(s.weights);
}

std::unique_ptr<Step> readInt8DepthwiseStep(ByteReader& r) {
  auto s = std::make_unique<Int8DepthwiseStep>();
  s->shape = r.pod<Int8DepthwiseCall>();
  s->input = r.pod<Address>();
  s->output = r.pod<Address>();
  s->weights = r.pod<Address>();
  return s;
}

void writeInt8PoolStep(ByteWriter& w, const Int8PoolStep& s) {
  w.pod(StepTag::Int8Pool);
  w.pod(s.shape);
  w.pod(s.input);
  w.pod(s.output);
}

std::unique_ptr<Step> readInt8PoolStep(ByteReader& r) {
  auto s = std::make_unique<Int8PoolStep>();
  s->shape = r.pod<Int8PoolCall>();
  s->input = r.pod<Address>();
  s->output = r.pod<Address>();
  return s;
}

void writeInt8QuantizeStep(ByteWriter& w, const Int8QuantizeStep& s) {
  w.pod(StepTag::Int8Quantize);
  w.pod(s.shape);
  w.pod(s.input);
  w.pod(s.output);
}

std::unique_ptr<Step> readInt8QuantizeStep(ByteReader& r) {
  auto s = std::make_unique<Int8QuantizeStep>();
  s->shape = r.pod<Int8QuantizeCall>();
  s->input = r.pod<Address>();
  s->output = r.pod<Address>();
  return s;
}

void writeInt8AddStep(ByteWriter& w, const Int8AddStep& s) {
  w.pod(StepTag::Int8Add);
  w.pod(s.lhs);
  w.pod(s.rhs);
  w.pod(s.output);
  w.pod(s.count);
  w.pod(s.shape);
  w.vec(s.table);
}

Expected<std::unique_ptr<Step>> readInt8AddStep(ByteReader& r) {
  auto s = std::make_unique<Int8AddStep>();
  s->lhs = r.pod<Address>();
  s->rhs = r.pod<Address>();
  s->output = r.pod<Address>();
  s->count = r.pod<int64_t>();
  s->shape = r.pod<Int8AddCall>();
  s->table = r.vec<uint8_t>();
  if (s->table.size() != 65536) return makeError("cpu AOT: malformed QuantizedAdd table");
  return std::unique_ptr<Step>(std::move(s));
}

void writeReferenceStep(ByteWriter& w, const ReferenceStep& s) {
  w.pod(StepTag::Reference);
  w.pod(int32_t(s.kind));
  w.str(s.name);
  writeAttributes(w, s.attrs);
  writeOperands(w, s.ins);
  writeOperands(w, s.outs);
}

std::unique_ptr<Step> readReferenceStep(ByteReader& r) {
  auto s = std::make_unique<ReferenceStep>();
  s->kind = OpKind(r.pod<int32_t>());
  s->name = r.str();
  s->attrs = readAttributes(r);
  s->ins = readOperands(r);
  s->outs = readOperands(r);
  return s;
}

/// Writes `step` with `write` when it is an `S`.
template <class S>
bool writeAs(ByteWriter& w, const Step& step, void (*write)(ByteWriter&, const S&)) {
  const auto* s = dynamic_cast<const S*>(&step);
  if (s) write(w, *s);
  return s != nullptr;
}

}  // namespace

Expected<std::vector<uint8_t>> encodeStep(const Step& step) {
  ByteWriter w;
  const bool written = writeAs(w, step, writeGemmStep) || writeAs(w, step, writeDirectConvStep) ||
                       writeAs(w, step, writeWinogradConvStep) ||
                       writeAs(w, step, writeMatMulStep) ||
                       writeAs(w, step, writeDepthwiseStep) || writeAs(w, step, writePoolStep) ||
                       writeAs(w, step, writeReduceStep) || writeAs(w, step, writeTransposeStep) ||
                       writeAs(w, step, writeInt8ConvStep) || writeAs(w, step, writeInt8DepthwiseStep) ||
                       writeAs(w, step, writeInt8PoolStep) || writeAs(w, step, writeInt8QuantizeStep) ||
                       writeAs(w, step, writeInt8AddStep) || writeAs(w, step, writeReferenceStep);
  if (!written) return makeError("cpu AOT: step '", step.label, "' has no encoding");
  w.str(step.label);
  return std::move(w.bytes);
}

Expected<std::unique_ptr<Step>> decodeStep(const uint8_t* data, size_t size) {
  ByteReader r(data, size);
  std::unique_ptr<Step> step;
  switch (r.pod<StepTag>()) {
    case StepTag::Gemm:
      step = readGemmStep(r);
      break;
    case StepTag::DirectConv:
      step = readDirectConvStep(r);
      break;
    case StepTag::WinogradConv:
      step = readWinogradConvStep(r);
      break;
    case StepTag::MatMul:
      step = readMatMulStep(r);
      break;
    case StepTag::Depthwise:
      step = readDepthwiseStep(r);
      break;
    case StepTag::Pool:
      step = readPoolStep(r);
      break;
    case StepTag::Reduce:
      step = readReduceStep(r);
      break;
    case StepTag::Transpose:
      step = readTransposeStep(r);
      break;
    case StepTag::Int8Conv:
      step = readInt8ConvStep(r);
      break;
    case StepTag::Int8Depthwise:
      step = readInt8DepthwiseStep(r);
      break;
    case StepTag::Int8Pool:
      step = readInt8PoolStep(r);
      break;
    case StepTag::Int8Quantize:
      step = readInt8QuantizeStep(r);
      break;
    case StepTag::Int8Add: {
      EMBER_ASSIGN_OR_RETURN(step, readInt8AddStep(r));
      break;
    }
    case StepTag::Reference:
      step = readReferenceStep(r);
      break;
    default:
      return makeError("cpu AOT: unknown step kind in a step descriptor");
  }
  step->label = r.str();
  if (!r.ok()) return makeError("cpu AOT: malformed step descriptor (", size, " bytes)");
  return step;
}

}  // namespace ember::cpu
