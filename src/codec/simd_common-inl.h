// What both SIMD kernel files (simd_encode.cc, simd_decode.cc) use, compiled once per Highway
// target: the vector types and table reads by scalar loads. Included by those files after
// <hwy/highway.h>, at file scope; the guard toggles with each target (Highway's -inl.h pattern).
#if defined(OCTET_CODEC_SIMD_COMMON_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef OCTET_CODEC_SIMD_COMMON_INL_H_
#undef OCTET_CODEC_SIMD_COMMON_INL_H_
#else
#define OCTET_CODEC_SIMD_COMMON_INL_H_
#endif

#include <stdint.h>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace octet {
namespace codec {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using D8 = hn::Repartition<uint8_t, DF>;  // the same bytes as a float vector
using DC = hn::Rebind<uint8_t, DF>;       // one byte per float lane

// Loads/stores floats through byte vectors: the API accepts any alignment.
HWY_INLINE hn::Vec<DF> LoadFloats(const float* p) {
  return hn::BitCast(DF(), hn::LoadU(D8(), reinterpret_cast<const uint8_t*>(p)));
}
HWY_INLINE void StoreFloats(hn::Vec<DF> v, float* p) {
  hn::StoreU(hn::BitCast(D8(), v), D8(), reinterpret_cast<uint8_t*>(p));
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// Eight 32-bit values in a register, lane k = v_k. Meant for values read from a table: inlined, the
// compiler folds each read into its insert, so 8 entries cost 8 loads and 7 shuffles and no gather
// (a vector gather costs about 10 cycles per 8 lanes on AMD Zen 3).
HWY_INLINE __m256i Assemble8(uint32_t v0, uint32_t v1, uint32_t v2, uint32_t v3, uint32_t v4,
                             uint32_t v5, uint32_t v6, uint32_t v7) {
  __m128i lo = _mm_cvtsi32_si128(static_cast<int>(v0));
  lo = _mm_insert_epi32(lo, static_cast<int>(v1), 1);
  lo = _mm_insert_epi32(lo, static_cast<int>(v2), 2);
  lo = _mm_insert_epi32(lo, static_cast<int>(v3), 3);
  __m128i hi = _mm_cvtsi32_si128(static_cast<int>(v4));
  hi = _mm_insert_epi32(hi, static_cast<int>(v5), 1);
  hi = _mm_insert_epi32(hi, static_cast<int>(v6), 2);
  hi = _mm_insert_epi32(hi, static_cast<int>(v7), 3);
  return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

#endif
#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace codec
}  // namespace octet
HWY_AFTER_NAMESPACE();

#endif  // OCTET_CODEC_SIMD_COMMON_INL_H_
