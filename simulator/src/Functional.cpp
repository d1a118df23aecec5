// Functional math of the compute instructions. The quantized arithmetic is
// ember::quant's (core/include/ember/QuantMath.h), the one specification.
// This file is compiled with -O3: the GEMM loop is the simulator's hot spot.
#include "Functional.h"

#include <algorithm>
#include <cstring>
#include <memory>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ember/QuantMath.h"

namespace ember::npu::functional {
namespace {

using isa::Field;

int32_t readI32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

struct EAddParams {
  quant::FixedPointMultiplier a, b, out;
  int32_t zeroA, zeroB, zeroOut, lo, hi;
};

EAddParams readEAddParams(const int8_t* p) {
  EAddParams r;
  r.a = {readI32(p), readI32(p + 4)};
  r.b = {readI32(p + 8), readI32(p + 12)};
  r.out = {readI32(p + 16), readI32(p + 20)};
  r.zeroA = p[24];
  r.zeroB = p[25];
  r.zeroOut = p[26];
  r.lo = p[27];
  r.hi = p[28];
  return r;
}

int64_t readI64(const int8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

/// softmax's record (isa::kSoftmaxParamBytes).
struct SoftmaxRecord {
  quant::SoftmaxParams params;
  int32_t zeroOut, lo, hi;
};

SoftmaxRecord readSoftmaxParams(const int8_t* p) {
  return {{{readI32(p), readI32(p + 4)}, {readI32(p + 8), readI32(p + 12)}}, p[16], p[17], p[18]};
}

/// layernorm's record (isa::layerNormParamBytes): the header and every channel.
struct LayerNormRecord {
  int64_t epsilonC;
  int32_t zeroIn, zeroOut, lo, hi;
  std::vector<quant::LayerNormChannel> channels;
};

LayerNormRecord readLayerNormParams(const int8_t* p, int64_t channels) {
  LayerNormRecord r{readI64(p), p[8], p[9], p[10], p[11], {}};
  r.channels.resize(size_t(channels));
  for (int64_t i = 0; i < channels; ++i) {
    const int8_t* c = p + isa::kLayerNormHeaderBytes + size_t(i) * isa::kLayerNormChannelBytes;
    r.channels[size_t(i)] = {{readI32(c), c[4]}, c[5] != 0 ? -1 : 1, readI64(c + 8)};
  }
  return r;
}

Error checkMultiplier(quant::FixedPointMultiplier m, const char* what) {
  if (m.multiplier < 0) return makeError(what, " multiplier ", m.multiplier, " is negative");
  if (m.shift < -31 || m.shift > 30) return makeError(what, " shift ", m.shift, " is outside [-31, 30]");
  return Error::success();
}

// Rows of a GEMM with the weights packed as int16 pairs (w[t][j], w[t+1][j]) at
// packed[((t / 2) * n + j) * 2 + t % 2]: SSE2's pmaddwd then does two MACs per
// 32-bit lane. Products of int8 values fit int16 pairs without saturation.
// Sums wrap modulo 2^32 like the hardware's int32 accumulators.
void gemmRowsPacked(const int8_t* inp, int64_t inpStride, int64_t m, int64_t k, int64_t n,
                    const int16_t* packed, int32_t* out, int64_t outStride, bool accumulate) {
  const int64_t fullPairs = k / 2;
  for (int64_t i = 0; i < m; ++i) {
    const int8_t* a = inp + i * inpStride;
    int32_t* o = out + i * outStride;
    int64_t j = 0;
#if defined(__SSE2__)
    for (; j + 16 <= n; j += 16) {
      __m128i s0 = _mm_setzero_si128(), s1 = s0, s2 = s0, s3 = s0;
      if (accumulate) {
        s0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(o + j));
        s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(o + j + 4));
        s2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(o + j + 8));
        s3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(o + j + 12));
      }
      auto step = [&](int64_t p, uint32_t pair) {
        const __m128i av = _mm_set1_epi32(int32_t(pair));
        const auto* w = reinterpret_cast<const __m128i*>(packed + (p * n + j) * 2);
        s0 = _mm_add_epi32(s0, _mm_madd_epi16(av, _mm_loadu_si128(w)));
        s1 = _mm_add_epi32(s1, _mm_madd_epi16(av, _mm_loadu_si128(w + 1)));
        s2 = _mm_add_epi32(s2, _mm_madd_epi16(av, _mm_loadu_si128(w + 2)));
        s3 = _mm_add_epi32(s3, _mm_madd_epi16(av, _mm_loadu_si128(w + 3)));
      };
      for (int64_t p = 0; p < fullPairs; ++p)
        step(p, uint32_t(uint16_t(int16_t(a[2 * p]))) | uint32_t(uint16_t(int16_t(a[2 * p + 1]))) << 16);
      if (k % 2) step(fullPairs, uint32_t(uint16_t(int16_t(a[k - 1]))));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + j), s0);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + j + 4), s1);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + j + 8), s2);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + j + 12), s3);
    }
#endif
    for (; j < n; ++j) {
      uint32_t sum = accumulate ? uint32_t(o[j]) : 0;
      for (int64_t t = 0; t < k; ++t) sum += uint32_t(int32_t(a[t]) * packed[((t / 2) * n + j) * 2 + t % 2]);
      o[j] = int32_t(sum);
    }
  }
}

}  // namespace

void gemm(const isa::Instruction& in, const int8_t* spad, int32_t* acc, WeightTile& weights) {
  const int64_t m = in[Field::M], k = in[Field::K], n = in[Field::N];
  if (in[Field::Preload]) {
    weights.k = k;
    weights.n = n;
    weights.packed.assign(size_t((k + 1) / 2 * n * 2), 0);
    const int8_t* w = spad + in[Field::WgtAddr];
    for (int64_t t = 0; t < k; ++t)
      for (int64_t j = 0; j < n; ++j)
        weights.packed[size_t(((t / 2) * n + j) * 2 + t % 2)] = w[t * in[Field::WgtStride] + j];
  }
  gemmRowsPacked(spad + in[Field::InpAddr], in[Field::InpStride], m, k, n, weights.packed.data(),
                 acc + in[Field::AccAddr], in[Field::AccStride], in[Field::Accumulate] != 0);
}

void requant(const isa::Instruction& in, const int32_t* acc, int8_t* spad) {
  const quant::FixedPointMultiplier mult{int32_t(in[Field::Multiplier]), int32_t(in[Field::Shift])};
  const auto zp = int32_t(in[Field::ZeroPoint]), lo = int32_t(in[Field::Lo]), hi = int32_t(in[Field::Hi]);
  for (int64_t i = 0; i < in[Field::Rows]; ++i) {
    const int32_t* src = acc + in[Field::Src] + i * in[Field::SrcStride];
    int8_t* dst = spad + in[Field::Dst] + i * in[Field::DstStride];
    for (int64_t j = 0; j < in[Field::Cols]; ++j)
      dst[j] = int8_t(quant::requantize(src[j], mult, zp, lo, hi));
  }
}

void vadd(const isa::Instruction& in, int32_t* acc) {
  for (int64_t i = 0; i < in[Field::Rows]; ++i) {
    const int32_t* src = acc + in[Field::Src] + i * in[Field::SrcStride];
    int32_t* dst = acc + in[Field::Dst] + i * in[Field::DstStride];
    for (int64_t j = 0; j < in[Field::Cols]; ++j)
      dst[j] = int32_t(uint32_t(dst[j]) + uint32_t(src[j]));  // wraps
  }
}

void vclip(const isa::Instruction& in, int32_t* acc) {
  const auto lo = int32_t(in[Field::Lo32]), hi = int32_t(in[Field::Hi32]);
  for (int64_t i = 0; i < in[Field::Rows]; ++i) {
    int32_t* dst = acc + in[Field::Dst] + i * in[Field::DstStride];
    for (int64_t j = 0; j < in[Field::Cols]; ++j) dst[j] = std::clamp(dst[j], lo, hi);
  }
}

void lut(const isa::Instruction& in, int8_t* spad) {
  int8_t table[isa::kLutTableBytes];
  std::memcpy(table, spad + in[Field::LutAddr], isa::kLutTableBytes);
  for (int64_t i = 0; i < in[Field::Rows]; ++i) {
    const int8_t* src = spad + in[Field::Src] + i * in[Field::SrcStride];
    int8_t* dst = spad + in[Field::Dst] + i * in[Field::DstStride];
    for (int64_t j = 0; j < in[Field::Cols]; ++j) dst[j] = table[int(src[j]) + 128];
  }
}

void pool(const isa::Instruction& in, int8_t* spad) {
  const int64_t c = in[Field::Channels], kh = in[Field::KernelH], kw = in[Field::KernelW];
  const bool isMax = in[Field::Mode] == int64_t(isa::PoolMode::Max);
  const auto avgMultiplier = quant::quantizeMultiplier(1.0 / double(kh * kw));
  std::vector<int32_t> acc(static_cast<size_t>(c));
  for (int64_t oy = 0; oy < in[Field::OutH]; ++oy)
    for (int64_t ox = 0; ox < in[Field::OutW]; ++ox) {
      std::fill(acc.begin(), acc.end(), isMax ? INT32_MIN : 0);
      for (int64_t ky = 0; ky < kh; ++ky)
        for (int64_t kx = 0; kx < kw; ++kx) {
          const int8_t* src = spad + in[Field::Src] + (oy * in[Field::StrideH] + ky) * in[Field::SrcStride] +
                              (ox * in[Field::StrideW] + kx) * c;
          for (int64_t ch = 0; ch < c; ++ch)
            acc[size_t(ch)] = isMax ? std::max(acc[size_t(ch)], int32_t(src[ch])) : acc[size_t(ch)] + src[ch];
        }
      int8_t* dst = spad + in[Field::Dst] + oy * in[Field::DstStride] + ox * c;
      for (int64_t ch = 0; ch < c; ++ch)
        dst[ch] =
            int8_t(isMax ? acc[size_t(ch)] : quant::requantize(acc[size_t(ch)], avgMultiplier, 0, -128, 127));
    }
}

void eadd(const isa::Instruction& in, int8_t* spad) {
  const EAddParams p = readEAddParams(spad + in[Field::ParamAddr]);
  for (int64_t i = 0; i < in[Field::Rows]; ++i) {
    const int8_t* a = spad + in[Field::Src] + i * in[Field::SrcStride];
    const int8_t* b = spad + in[Field::Src2] + i * in[Field::Src2Stride];
    int8_t* dst = spad + in[Field::Dst] + i * in[Field::DstStride];
    for (int64_t j = 0; j < in[Field::Cols]; ++j) {
      const int64_t ra = quant::applyMultiplier((int32_t(a[j]) - p.zeroA) * (1 << isa::kEAddLeftShift), p.a);
      const int64_t rb = quant::applyMultiplier((int32_t(b[j]) - p.zeroB) * (1 << isa::kEAddLeftShift), p.b);
      const int32_t sum = quant::clampTo(ra + rb, INT32_MIN, INT32_MAX);
      dst[j] = int8_t(quant::requantize(sum, p.out, p.zeroOut, p.lo, p.hi));
    }
  }
}

void softmax(const isa::Instruction& in, int8_t* spad) {
  const SoftmaxRecord p = readSoftmaxParams(spad + in[Field::ParamAddr]);
  const int64_t cols = in[Field::Cols];
  std::vector<int32_t> q(static_cast<size_t>(cols)), out(static_cast<size_t>(cols));
  std::vector<int64_t> exps(static_cast<size_t>(cols));
  std::unique_ptr<bool[]> keep(new bool[size_t(cols)]);
  for (int64_t i = 0; i < in[Field::Rows]; ++i) {
    const int8_t* src = spad + in[Field::Src] + i * in[Field::SrcStride];
    const int8_t* mask = spad + in[Field::Src2] + i * in[Field::Src2Stride];
    for (int64_t j = 0; j < cols; ++j) {
      q[size_t(j)] = src[j];
      keep[size_t(j)] = in[Field::Masked] == 0 || mask[j] != 0;
    }
    quant::softmaxRow(q.data(), keep.get(), cols, p.params, p.zeroOut, p.lo, p.hi, exps.data(), out.data());
    int8_t* dst = spad + in[Field::Dst] + i * in[Field::DstStride];
    for (int64_t j = 0; j < cols; ++j) dst[j] = int8_t(out[size_t(j)]);
  }
}

void layerNorm(const isa::Instruction& in, int8_t* spad) {
  const int64_t cols = in[Field::Cols];
  const LayerNormRecord p = readLayerNormParams(spad + in[Field::ParamAddr], cols);
  std::vector<int32_t> q(static_cast<size_t>(cols)), out(static_cast<size_t>(cols));
  for (int64_t i = 0; i < in[Field::Rows]; ++i) {
    const int8_t* src = spad + in[Field::Src] + i * in[Field::SrcStride];
    std::copy(src, src + cols, q.begin());
    quant::layerNormRow(q.data(), cols, p.zeroIn, p.epsilonC, p.channels.data(), p.zeroOut, p.lo, p.hi,
                        out.data());
    int8_t* dst = spad + in[Field::Dst] + i * in[Field::DstStride];
    for (int64_t j = 0; j < cols; ++j) dst[j] = int8_t(out[size_t(j)]);
  }
}

namespace {

Error checkSoftmaxParams(const int8_t* record) {
  const SoftmaxRecord p = readSoftmaxParams(record);
  EMBER_RETURN_IF_ERROR(checkMultiplier(p.params.input, "softmax parameter input"));
  EMBER_RETURN_IF_ERROR(checkMultiplier(p.params.output, "softmax parameter output"));
  if (p.lo > p.hi) return makeError("softmax parameters: lo > hi");
  return Error::success();
}

Error checkLayerNormParams(const int8_t* record, int64_t channels) {
  const LayerNormRecord p = readLayerNormParams(record, channels);
  if (p.epsilonC < 0 || p.epsilonC > (int64_t(1) << 45))
    return makeError("layernorm parameters: epsilon_c ", p.epsilonC, " is outside [0, 2^45]");
  if (p.lo > p.hi) return makeError("layernorm parameters: lo > hi");
  for (size_t i = 0; i < p.channels.size(); ++i) {
    const quant::LayerNormChannel& c = p.channels[i];
    EMBER_RETURN_IF_ERROR(checkMultiplier(c.gamma, "layernorm channel gamma"));
    if (c.beta < -(int64_t(1) << 40) || c.beta > (int64_t(1) << 40))
      return makeError("layernorm parameters: channel ", i, " beta ", c.beta, " is outside [-2^40, 2^40]");
  }
  return Error::success();
}

/// Size fields (rows, cols, ...) must be at least 1.
Error positiveFields(const isa::Instruction& in,
                     std::initializer_list<std::pair<Field, const char*>> fields) {
  for (auto [f, name] : fields)
    if (in[f] <= 0) return makeError("malformed instruction: field '", name, "' must be at least 1");
  return Error::success();
}

/// softmax and layernorm: the sizes, the channel limit and the parameter record.
Error checkRowNormOperands(const isa::Instruction& in, const int8_t* spad, int64_t spadBytes) {
  EMBER_RETURN_IF_ERROR(positiveFields(in, {{Field::Rows, "rows"}, {Field::Cols, "cols"}}));
  const int64_t cols = in[Field::Cols];
  const bool softmax = in.opcode == isa::Opcode::Softmax;
  if (!softmax && cols > isa::kLayerNormMaxChannels)
    return makeError("malformed instruction: layernorm cols=", cols, " exceeds the ",
                     isa::kLayerNormMaxChannels, " channels of the vector unit's parameter buffer");
  const auto recordBytes = int64_t(softmax ? isa::kSoftmaxParamBytes : isa::layerNormParamBytes(cols));
  if (in[Field::ParamAddr] + recordBytes > spadBytes) return Error::success();  // range check reports it
  const int8_t* record = spad + in[Field::ParamAddr];
  return softmax ? checkSoftmaxParams(record) : checkLayerNormParams(record, cols);
}

}  // namespace

Error checkOperands(const isa::Instruction& in, const int8_t* spad, int64_t spadBytes) {
  using isa::Opcode;
  const auto positive = [&in](std::initializer_list<std::pair<Field, const char*>> fields) {
    return positiveFields(in, fields);
  };
  switch (in.opcode) {
    case Opcode::Load:
    case Opcode::Store:
      return positive({{Field::XSize, "x"}, {Field::YSize, "y"}});
    case Opcode::Gemm:
      return positive({{Field::M, "m"}, {Field::K, "k"}, {Field::N, "n"}});
    case Opcode::Requant: {
      EMBER_RETURN_IF_ERROR(positive({{Field::Rows, "rows"}, {Field::Cols, "cols"}}));
      EMBER_RETURN_IF_ERROR(
          checkMultiplier({int32_t(in[Field::Multiplier]), int32_t(in[Field::Shift])}, "requant"));
      if (in[Field::Lo] > in[Field::Hi]) return makeError("malformed instruction: requant lo > hi");
      return Error::success();
    }
    case Opcode::VAdd:
    case Opcode::Lut:
      return positive({{Field::Rows, "rows"}, {Field::Cols, "cols"}});
    case Opcode::VClip:
      EMBER_RETURN_IF_ERROR(positive({{Field::Rows, "rows"}, {Field::Cols, "cols"}}));
      if (in[Field::Lo32] > in[Field::Hi32]) return makeError("malformed instruction: vclip lo > hi");
      return Error::success();
    case Opcode::Pool:
      return positive({{Field::OutH, "out_h"},
                       {Field::OutW, "out_w"},
                       {Field::Channels, "c"},
                       {Field::KernelH, "kh"},
                       {Field::KernelW, "kw"},
                       {Field::StrideH, "sh"},
                       {Field::StrideW, "sw"}});
    case Opcode::EAdd: {
      EMBER_RETURN_IF_ERROR(positive({{Field::Rows, "rows"}, {Field::Cols, "cols"}}));
      if (in[Field::ParamAddr] + int64_t(isa::kEAddParamBytes) > spadBytes)
        return Error::success();  // range check reports it
      const EAddParams p = readEAddParams(spad + in[Field::ParamAddr]);
      EMBER_RETURN_IF_ERROR(checkMultiplier(p.a, "eadd parameter a"));
      EMBER_RETURN_IF_ERROR(checkMultiplier(p.b, "eadd parameter b"));
      EMBER_RETURN_IF_ERROR(checkMultiplier(p.out, "eadd parameter out"));
      if (p.lo > p.hi) return makeError("eadd parameters: lo > hi");
      return Error::success();
    }
    case Opcode::Softmax:
    case Opcode::LayerNorm:
      return checkRowNormOperands(in, spad, spadBytes);
    default:
      return Error::success();
  }
}

}  // namespace ember::npu::functional
