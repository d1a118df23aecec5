// Quantize (f32 -> 8-bit codes) in AVX2 (KernelInt8.h), bit-exact with
// quant::quantizeValue: q = x / scale in double (the same IEEE division),
// rounded half away from zero as trunc(q) + sign(q) when |q - trunc(q)| >= 0.5
// (exactly std::round), + zero point, clamped; NaN gives the clamped zero point.
// Where AVX-512 is in use, KernelInt8QuantizeAvx512.cpp does the same 16 at a time.
#include <immintrin.h>

#include <algorithm>

#include "KernelInt8.h"
#include "ThreadPool.h"
#include "ember/QuantMath.h"

namespace ember::cpu {
namespace {

void quantizeChunk(const Int8QuantizeCall& call, int64_t begin, int64_t end) {
  const __m256d scale = _mm256_set1_pd(double(call.scale)), half = _mm256_set1_pd(0.5);
  const __m256d zero = _mm256_set1_pd(double(call.zero)), lo = _mm256_set1_pd(double(call.lo));
  const __m256d hi = _mm256_set1_pd(double(call.hi)), one = _mm256_set1_pd(1.0);
  const __m256d signBit = _mm256_set1_pd(-0.0);
  const __m256d nanCode = _mm256_set1_pd(double(std::clamp(call.zero, call.lo, call.hi)));
  const __m128i lowBytes = _mm_setr_epi8(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  int64_t i = begin;
  for (; i + 4 <= end; i += 4) {
    const __m256d q = _mm256_div_pd(_mm256_cvtps_pd(_mm_loadu_ps(call.input + i)), scale);
    const __m256d t = _mm256_round_pd(q, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256d frac = _mm256_andnot_pd(signBit, _mm256_sub_pd(q, t));
    const __m256d up = _mm256_and_pd(_mm256_cmp_pd(frac, half, _CMP_GE_OQ), one);
    const __m256d rounded = _mm256_add_pd(t, _mm256_or_pd(up, _mm256_and_pd(q, signBit)));
    __m256d v = _mm256_add_pd(rounded, zero);
    v = _mm256_blendv_pd(v, lo, _mm256_cmp_pd(v, lo, _CMP_LE_OQ));
    v = _mm256_blendv_pd(v, hi, _mm256_cmp_pd(v, hi, _CMP_GE_OQ));
    v = _mm256_blendv_pd(v, nanCode, _mm256_cmp_pd(q, q, _CMP_UNORD_Q));
    const __m128i codes = _mm_shuffle_epi8(_mm256_cvttpd_epi32(v), lowBytes);
    const int32_t four = _mm_cvtsi128_si32(codes);
    __builtin_memcpy(call.output + i, &four, 4);
  }
  for (; i < end; ++i)
    call.output[i] = uint8_t(quant::quantizeValue(call.input[i], call.scale, call.zero, call.lo, call.hi));
}

}  // namespace

void int8Quantize(const Int8QuantizeCall& call, ThreadPool& pool) { int8Quantize(call, pool, int8Isa()); }

void int8Quantize(const Int8QuantizeCall& call, ThreadPool& pool, Int8Isa isa) {
  constexpr int64_t kChunk = 16384;
  // The AVX-512 VNNI level implies AVX-512 F (int8HostIsa), all the AVX-512 kernel needs.
  const auto chunk = isa == Int8Isa::Avx512Vnni ? int8QuantizeAvx512 : quantizeChunk;
  pool.parallelFor((call.count + kChunk - 1) / kChunk, [&](int64_t item, int) {
    chunk(call, item * kChunk, std::min(call.count, (item + 1) * kChunk));
  });
}

}  // namespace ember::cpu
