// The SIMD decoders: code -> value * scale + decode_zero(scale) (quant_math.h's decode_value), from
// tables held in registers (AVX-512), by table loads and exact arithmetic (AVX2) or a gather,
// for every Highway target; simd_dispatch.h picks one at run time.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "codec/block_kernels.h"
#include "codec/simd_dispatch.h"
#include "codec/value_plan.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/simd_decode.cc"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "codec/simd_common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace octet {
namespace codec {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_SCALAR
// The one-lane fallback target (the baseline under GCC < 12.3) cannot view floats as bytes:
// it runs the scalar reference.
void Decode(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
            const uint8_t* scales, float* out, bool accumulate) {
  scalar_kernels().decode(t, codes, n, block, scales, out, accumulate);
}
void DecodeStream(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                  const uint8_t* scales, float* out) {
  scalar_kernels().decode(t, codes, n, block, scales, out, false);
}
void Fence() {}
#else
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3
// AVX-512 decodes a group of codes at a time from tables held in registers, without a gather: the
// values' bytes (VBMI) or 16-bit halves (plain AVX-512, BW) come from in-register permutes over
// the table's own bits, so the result equals the lookup path's bit for bit. A group's lanes
// 16q..16q+15 take GroupScales' scale[q] and zero[q].

#ifndef OCTET_ASAN_BUILD
#if defined(__SANITIZE_ADDRESS__)
#define OCTET_ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OCTET_ASAN_BUILD 1
#endif
#endif
#endif
#ifndef OCTET_ASAN_BUILD
#define OCTET_ASAN_BUILD 0
#endif

// How a group is written, fixed for a run of groups so that the loop holds no test of it:
// non-temporal stores (kStream, out 64-byte aligned), or out (+)= value (kAccumulate); kAddZero:
// decode_zero is added to value * scale (GroupScales::add_zero).
template <bool kStream, bool kAccumulate, bool kAddZero_>
struct GroupStore {
  static constexpr bool kAddZero = kAddZero_;
  static_assert(!(kStream && kAccumulate), "non-temporal stores overwrite");
  // The store is an asm statement so that a group's 4 stores stay in address order (volatile asm
  // statements keep theirs): the compiler had scheduled them 3rd, 1st, 2nd, 4th, which on Zen 5,
  // into an output not 64-byte aligned (each store split over two lines), cost a stand-alone
  // decode loop in L2 a tenth and the library's a twentieth in blocks of 65536. AddressSanitizer
  // does not see into asm, so its builds keep the intrinsic.
  static HWY_INLINE void Store(__m512 v, float* out) {
    if (kStream) return _mm512_stream_ps(out, v);
    if (kAccumulate) v = _mm512_add_ps(_mm512_loadu_ps(out), v);
#if OCTET_ASAN_BUILD
    _mm512_storeu_ps(out, v);
#else
    asm volatile("vmovups %1, %0" : "=m"(*reinterpret_cast<float(*)[16]>(out)) : "v"(v));
#endif
  }
};

// A lambda inlined where it is called: the decode loops' lambdas hold the tables in registers only
// where the compiler sees no escape of their object.
#define OCTET_LAMBDA_INLINE __attribute__((always_inline))

// Calls f(std::true_type or std::false_type) for the value of b: a runtime flag made a template
// argument once, outside a loop.
template <class F>
HWY_INLINE void WithFlag(bool b, F&& f) {
  if (b) return f(std::true_type());
  f(std::false_type());
}

// The scales of a group's 4 quarters of 16 lanes, zero[q] = decode_zero(scale[q]). add_zero is
// false where adding zero can change no lane's value * scale (AddsNothing).
struct GroupScales {
  __m512 scale[4], zero[4];
  bool add_zero;
};

// Whether value * s + decode_zero(s) == value * s for every value of the type: s > 0 makes
// decode_zero(s) +0, which changes nothing but a -0, and a product is -0 only where a negative
// value's product underflows, which the smallest magnitude's does first.
HWY_INLINE bool AddsNothing(const detail::QuantTable& t, float s) {
  return s > 0.0f && s * t.magnitude[1] != 0.0f;
}

// Whether value(code) * s + decode_zero(s) is magnitude(code) * s + decode_zero(s) with the
// code's sign bit xor-ed in, for every code of a signed type but the spare: s finite and nonzero
// makes decode_zero(s) +0, which changes no nonzero product, and the smallest nonzero magnitude's
// product is nonzero when every other one is. Where it holds, a block decodes from tables of its
// magnitudes already scaled (Prescale).
HWY_INLINE bool SignSymmetric(const detail::QuantTable& t, float s) {
  return std::isfinite(s) && s * t.magnitude[1] != 0.0f;
}

// What Prescale builds its tables from: a signed type's 128 magnitudes scaled for a block, 16 a
// register (v[r]: the 16 values of magnitude[16r..16r+15]: t.value's, or a reordering that keeps
// magnitude 0 first), each value * s + decode_zero(s), and the spare's decoded value. Only where
// SignSymmetric holds: decode_zero(s) is then +0 and every product but magnitude 0's is nonzero,
// so adding it changes no other product, and magnitude 0's lane is +0 (the product is -0 for a
// negative s, plus +0 is +0). One multiply a register, with lane 0 of v[0] zeroed, is the
// reference's two roundings.
struct ScaledMagnitudes {
  __m512i v[8];
  __m512 spare;  // broadcast

  HWY_INLINE ScaledMagnitudes(const detail::QuantTable& t, float s, const float* magnitude) {
    const __m512 vs = _mm512_set1_ps(s);
    v[0] = _mm512_castps_si512(_mm512_maskz_mul_ps(0xfffe, _mm512_loadu_ps(magnitude), vs));
    for (int r = 1; r < 8; ++r)
      v[r] = _mm512_castps_si512(_mm512_mul_ps(_mm512_loadu_ps(magnitude + 16 * r), vs));
    spare = _mm512_mul_ps(_mm512_set1_ps(t.value[t.spare_code]), vs);  // nonzero: + 0 is exact
  }
};

// value * scale + zero: the scalar reference's two roundings. (One fused rounding would differ
// where the product underflows: a tiny negative product plus +0 rounds to -0, where the rounded
// product -0 plus +0 is +0.)
template <bool kAddZero>
HWY_INLINE __m512 Scaled(__m512i value_bits, const GroupScales& g, int q) {
  const __m512 v = _mm512_mul_ps(_mm512_castsi512_ps(value_bits), g.scale[q]);
  return kAddZero ? _mm512_add_ps(v, g.zero[q]) : v;
}

// How a group of Groups (ByteGroups or WordGroups, whose Group() gives a group's 64 float bits)
// is written: scaled as it is stored, or as it is where Prescale built the block's tables.
template <class Groups>
struct GroupWriter {
  template <class Store>
  HWY_INLINE void operator()(Store, const GroupScales& g, const uint8_t* codes, float* out) const {
    __m512i f[4];
    static_cast<const Groups*>(this)->template Group<false>(codes, f);
    for (int q = 0; q < 4; ++q) Store::Store(Scaled<Store::kAddZero>(f[q], g, q), out + 16 * q);
  }

  // A group of a block that Prescale accepted.
  template <class Store>
  HWY_INLINE void Prescaled(Store, const uint8_t* codes, float* out) const {
    __m512i f[4];
    static_cast<const Groups*>(this)->template Group<true>(codes, f);
    for (int q = 0; q < 4; ++q) Store::Store(_mm512_castsi512_ps(f[q]), out + 16 * q);
  }
};

#if HWY_TARGET == HWY_AVX3_DL
// VBMI (Ice Lake, Zen 4 and later), 64 codes a group. Each of the 4 bytes of a value comes from a
// 128-entry byte table held in two registers (vpermi2b), and byte unpacks reassemble the floats.
// The codes are first permuted so that the in-lane unpacks leave the 64 floats in order:
// reordered byte 16L + 4q + j is code 16q + 4L + j.
//
// A signed type's blocks of kPrescaleMinBlock elements and more (the default block of 2048 and
// longer ones) decode from byte tables of their 128 magnitudes already scaled (Prescale, as
// WordGroups): no multiply per group, and the spare's lanes are patched only in a group that has
// one. The multiplies were a fifth of a group's time in L2 on Zen 5 (a build without them decoded
// 30-31 against 23-25 G elements/s); with the prescaled tables a decode of 2^17 elements in
// blocks of 2048 runs at 26.7-27.5 against 24.3-25.0, in blocks of 65536 at 34.
template <bool kSigned>
struct ByteGroups : GroupWriter<ByteGroups<kSigned> > {
  static constexpr size_t kLanes = 64;
  static constexpr bool kPrescales = kSigned;
  // The tables cost about as much as a group's multiplies over 32 groups: measured by block size
  // (octet_codec_best_of's third argument), blocks of 1024 decoded slower from them, 2048 faster.
  static constexpr uint32_t kPrescaleMinBlock = 2048;
  __m512i table[4][4];   // [byte][64-entry quarter of the 256 codes]
  __m512i scaled[4][2];  // the current block's: [byte][64 of the 128 magnitudes] (Prescale)
  __m512 spare;          // the current block's spare value, broadcast (Prescale)
  __m512i reorder, sign_bit;
  // The 128 magnitudes in the order Prescale's in-lane transposition wants them: float j of lane
  // L of register 4h + r is magnitude 64h + 16L + 4r + j.
  alignas(64) float lane_order[128];

  explicit ByteGroups(const detail::QuantTable& t) {
    alignas(64) static constexpr uint8_t kOrder[64] = {
        0,  1,  2,  3,  16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51,   // lane 0
        4,  5,  6,  7,  20, 21, 22, 23, 36, 37, 38, 39, 52, 53, 54, 55,   // lane 1
        8,  9,  10, 11, 24, 25, 26, 27, 40, 41, 42, 43, 56, 57, 58, 59,   // lane 2
        12, 13, 14, 15, 28, 29, 30, 31, 44, 45, 46, 47, 60, 61, 62, 63};  // lane 3
    reorder = _mm512_load_si512(kOrder);
    sign_bit = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int k = 0; k < 4; ++k)
      for (int h = 0; h < (kSigned ? 2 : 4); ++h)
        table[k][h] = _mm512_loadu_si512(t.value_bytes[k] + 64 * h);
    if (kSigned)
      for (int h = 0; h < 2; ++h)
        for (int r = 0; r < 4; ++r)
          for (int lane = 0; lane < 4; ++lane)
            std::memcpy(lane_order + 64 * h + 16 * r + 4 * lane,
                        t.value + 64 * h + 16 * lane + 4 * r, 4 * sizeof(float));
  }

  // Fills `scaled` and `spare` for a block of scale s; false where a signed type's block cannot
  // use them. An in-lane transposition, all of it two-source operations (three-source ones, such
  // as vpermi2b, queue with the stores on Zen 5): a byte shuffle gathers each float's byte k into
  // dword k of its lane, and dword then qword unpacks of 4 registers put dword r of lane L of
  // plane k at byte 16L + 4r of it: with lane_order, magnitude 16L + 4r + j at byte 16L + 4r + j.
  bool Prescale(const detail::QuantTable& t, float s) {
    if (!kSigned || !SignSymmetric(t, s)) return false;
    const ScaledMagnitudes m(t, s, lane_order);
    const __m512i bytes_to_planes =
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    for (int h = 0; h < 2; ++h) {
      __m512i p[4];
      for (int r = 0; r < 4; ++r) p[r] = _mm512_shuffle_epi8(m.v[4 * h + r], bytes_to_planes);
      const __m512i lo01 = _mm512_unpacklo_epi32(p[0], p[1]),
                    hi01 = _mm512_unpackhi_epi32(p[0], p[1]);
      const __m512i lo23 = _mm512_unpacklo_epi32(p[2], p[3]),
                    hi23 = _mm512_unpackhi_epi32(p[2], p[3]);
      scaled[0][h] = _mm512_unpacklo_epi64(lo01, lo23);
      scaled[1][h] = _mm512_unpackhi_epi64(lo01, lo23);
      scaled[2][h] = _mm512_unpacklo_epi64(hi01, hi23);
      scaled[3][h] = _mm512_unpackhi_epi64(hi01, hi23);
    }
    spare = m.spare;
    return true;
  }

  // The float bits of a group's 64 values, in order, from the type's values (kPrescaled false:
  // to be scaled) or the block's (true).
  template <bool kPrescaled>
  HWY_INLINE void Group(const uint8_t* codes, __m512i* f) const {
    const __m512i c = _mm512_permutexvar_epi8(reorder, _mm512_loadu_si512(codes));
    __m512i b[4];
    for (int k = 0; k < 4; ++k) {
      // vpermi2b reads index bits 0..6: codes 0..127 (signed: the magnitudes).
      b[k] = kPrescaled ? _mm512_permutex2var_epi8(scaled[k][0], c, scaled[k][1])
                        : _mm512_permutex2var_epi8(table[k][0], c, table[k][1]);
      if (!kSigned) {
        const __m512i upper = _mm512_permutex2var_epi8(table[k][2], c, table[k][3]);
        b[k] = _mm512_mask_blend_epi8(_mm512_movepi8_mask(c), b[k], upper);
      }
    }
    if (kSigned) {  // the sign bit of the code flips the float's; "-0" is the spare
      b[3] = _mm512_ternarylogic_epi32(b[3], c, sign_bit, 0x78);  // b[3] ^ (c & sign_bit)
      const __mmask64 spare_lanes = _mm512_cmpeq_epi8_mask(c, sign_bit);
      if (!kPrescaled) {  // +1: bytes 0, 0, 0x80, 0x3f, where the magnitude 0 gave 0, 0, 0, 0x80
        b[2] = _mm512_mask_mov_epi8(b[2], spare_lanes, sign_bit);
        b[3] = _mm512_mask_mov_epi8(b[3], spare_lanes, _mm512_set1_epi8(0x3f));
      } else if (spare_lanes != 0) {  // the block's extreme element (+1): a group in 32 or so
        // Byte k of every float of the broadcast spare.
        const __m512i bits = _mm512_castps_si512(spare);
        for (int k = 0; k < 4; ++k)
          b[k] = _mm512_mask_mov_epi8(
              b[k], spare_lanes, _mm512_shuffle_epi8(bits, _mm512_set1_epi8(static_cast<char>(k))));
      }
    }
    const __m512i lo01 = _mm512_unpacklo_epi8(b[0], b[1]), hi01 = _mm512_unpackhi_epi8(b[0], b[1]);
    const __m512i lo23 = _mm512_unpacklo_epi8(b[2], b[3]), hi23 = _mm512_unpackhi_epi8(b[2], b[3]);
    f[0] = _mm512_unpacklo_epi16(lo01, lo23);
    f[1] = _mm512_unpackhi_epi16(lo01, lo23);
    f[2] = _mm512_unpacklo_epi16(hi01, hi23);
    f[3] = _mm512_unpackhi_epi16(hi01, hi23);
  }
};
#else
// Plain AVX-512 (Skylake-SP, Cascade Lake: BW but no VBMI), 64 codes a group as two halves of 32.
// The low and the high 16 bits of a value each come from 64-entry word tables held in two
// registers (vpermi2w), selected by the code's bits 6 (and 7), and in-lane unpacks interleave the
// halves into floats: half the codes of a byte permute per instruction, but no table read per
// element. Each code is widened to a word holding it twice, which puts its sign bit where the
// float's is.
//
// A signed type's blocks of kPrescaleMinBlock elements and more are decoded from tables already
// scaled (Prescale): their 128 magnitudes' value * scale + decode_zero(scale), so that a group
// needs no multiply. The sign bit of the code is xor-ed into the product's, which is the
// reference's bits wherever no product of a nonzero magnitude is zero (SignSymmetric).
template <bool kSigned>
struct WordGroups : GroupWriter<WordGroups<kSigned> > {
  static constexpr size_t kLanes = 64;
  static constexpr bool kPrescales = kSigned;
  static constexpr uint32_t kPrescaleMinBlock = 512;  // 8 groups: the tables cost about one
  static constexpr int kWindows = kSigned ? 2 : 4;    // of 64 codes: the magnitudes, or all 256

  // Word tables: [window][32 words] of the low and high halves, and the halves of the spare
  // code's value ("-0" is +1; signed types).
  struct Planes {
    __m512i low[4][2], high[4][2];
    __m512i spare_low, spare_high;
  };
  Planes unit;    // the type's values
  Planes scaled;  // the current block's decoded values (Prescale)
  __m512i reorder;

  explicit WordGroups(const detail::QuantTable& t) {
    for (int w = 0; w < kWindows; ++w)
      for (int h = 0; h < 2; ++h) {
        const auto bytes = [&](int k) {
          return _mm512_cvtepu8_epi16(_mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(t.value_bytes[k] + 64 * w + 32 * h)));
        };
        unit.low[w][h] = _mm512_or_si512(bytes(0), _mm512_slli_epi16(bytes(1), 8));
        unit.high[w][h] = _mm512_or_si512(bytes(2), _mm512_slli_epi16(bytes(3), 8));
      }
    unit.spare_low = _mm512_setzero_si512();
    unit.spare_high = _mm512_set1_epi16(0x3f80);  // +1
    reorder = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  }

  // Fills `scaled` for a block of scale s; false where a signed type's block cannot use it.
  bool Prescale(const detail::QuantTable& t, float s) {
    if (!kSigned || !SignSymmetric(t, s)) return false;
    const ScaledMagnitudes m(t, s, t.value);
    const __m512i even =
        _mm512_set_epi16(62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28, 26,
                         24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi16(even, _mm512_set1_epi16(1));
    for (int k = 0; k < 4; ++k) {  // 32 values: window k / 2, half k % 2
      scaled.low[k / 2][k % 2] = _mm512_permutex2var_epi16(m.v[2 * k], even, m.v[2 * k + 1]);
      scaled.high[k / 2][k % 2] = _mm512_permutex2var_epi16(m.v[2 * k], odd, m.v[2 * k + 1]);
    }
    const __m512i spare = _mm512_castps_si512(m.spare);
    scaled.spare_low = _mm512_shuffle_epi8(spare, _mm512_set1_epi32(0x01000100));  // every word
    scaled.spare_high = _mm512_shuffle_epi8(spare, _mm512_set1_epi32(0x03020302));
    return true;
  }

  // One half (low or high words) of 32 values: vpermi2w reads index bits 0..5. The windows are
  // chained through merge masking, so no blend: a lane takes its window's word and keeps it, the
  // other lanes keep their code as the next permute's index. in[w]: the lanes of window w.
  static HWY_INLINE __m512i Half(const __m512i (&table)[4][2], __m512i c,
                                 const __mmask32 (&in)[4]) {
    __m512i v = c;
    for (int w = kWindows - 1; w >= 0; --w)
      v = _mm512_mask2_permutex2var_epi16(table[w][0], v, in[w], table[w][1]);
    return v;
  }

  // The float bits of 32 values from words holding their code twice (code * 0x101), by in-lane
  // unpacks: f[0] lane L holds words 8L..8L+3, f[1] words 8L+4..8L+7. kSpare: some of the codes
  // may be the spare (signed types); kPrescaled: its low half is not 0.
  template <bool kPrescaled, bool kSpare>
  static HWY_INLINE void Values(const Planes& p, __m512i c, __m512i* f) {
    const __mmask32 bit6 = _mm512_test_epi16_mask(c, _mm512_set1_epi16(0x40));
    __mmask32 in[4] = {_knot_mask32(bit6), bit6};
    if (!kSigned) {
      const __mmask32 bit7 = _mm512_test_epi16_mask(c, _mm512_set1_epi16(0x80));
      in[2] = _kand_mask32(bit7, in[0]);  // codes 128..191
      in[3] = _kand_mask32(bit7, in[1]);
      in[0] = _kandn_mask32(bit7, in[0]);
      in[1] = _kandn_mask32(bit7, in[1]);
    }
    __m512i lo = Half(p.low, c, in);
    __m512i hi = Half(p.high, c, in);
    if (kSigned)  // the sign bit of the code (here also bit 15) flips the float's: hi ^ c & sign
      hi = _mm512_ternarylogic_epi32(hi, c, _mm512_set1_epi16(static_cast<int16_t>(0x8000)), 0x78);
    if (kSpare) {
      const __mmask32 spare =
          _mm512_cmpeq_epi16_mask(c, _mm512_set1_epi16(static_cast<int16_t>(0x8080)));
      if (kPrescaled) lo = _mm512_mask_mov_epi16(lo, spare, p.spare_low);
      hi = _mm512_mask_mov_epi16(hi, spare, p.spare_high);
    }
    f[0] = _mm512_unpacklo_epi16(lo, hi);
    f[1] = _mm512_unpackhi_epi16(lo, hi);
  }

  // The float bits of a group's 64 values, in order.
  template <bool kPrescaled>
  HWY_INLINE void Group(const uint8_t* codes, __m512i* f) const {
    // Dword 4L + q of the reordered codes is codes 16q + 4L..16q + 4L + 3, so that the in-lane
    // unpacks (bytes to doubled words here, words to floats in Values) leave the floats in order.
    const __m512i c = _mm512_permutexvar_epi32(reorder, _mm512_loadu_si512(codes));
    const Planes& p = kPrescaled ? scaled : unit;
    // The spare is rare (the block's extreme element, +1): one test for the group saves
    // the two halves' tests and moves.
    if (kSigned && _mm512_cmpeq_epi8_mask(c, _mm512_set1_epi8(static_cast<char>(0x80))) != 0) {
      Values<kPrescaled, kSigned>(p, _mm512_unpacklo_epi8(c, c), f);
      Values<kPrescaled, kSigned>(p, _mm512_unpackhi_epi8(c, c), f + 2);
    } else {
      Values<kPrescaled, false>(p, _mm512_unpacklo_epi8(c, c), f);
      Values<kPrescaled, false>(p, _mm512_unpackhi_epi8(c, c), f + 2);
    }
  }
};
#endif

// A run of blocks in groups of Groups::kLanes elements, the tables in registers throughout.
// kStream: the output is written with non-temporal stores only, 4 bytes at a time (movnti) up to
// the first 64-byte aligned element, then a group at a time (no accumulate; out 4-byte aligned).
// Then a group may span two blocks (blocks hold 64 elements or more, so never more): its lanes
// take each block's scale. Elements after the last group: the scalar reference. Each block's
// groups run in a loop of their own, with what is fixed per block (scale, prescaled tables,
// accumulate, add_zero) outside it.
template <class Groups, bool kStream = false>
void DecodeGroups(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                  const uint8_t* scales, float* out, bool accumulate) {
  constexpr size_t kLanes = Groups::kLanes;
  static_assert(kLanes == 64, "GroupScales holds 4 quarters of 16 lanes");
  Groups groups(t);
  auto one = [&](size_t i) {
    float v = detail::decode_value(t, codes[i], block_scale(scales, i / block));
    if (kStream) {
      _mm_stream_si32(reinterpret_cast<int*>(out + i), static_cast<int>(detail::float_bits(v)));
      return;
    }
    if (accumulate) {
      float o;
      std::memcpy(&o, out + i, sizeof o);
      v = o + v;
    }
    std::memcpy(out + i, &v, sizeof v);
  };
  size_t i = 0;
  if (kStream)
    for (; i < n && (reinterpret_cast<uintptr_t>(out + i) & 63) != 0; ++i) one(i);
  auto splat = [&](size_t of) OCTET_LAMBDA_INLINE {
    const float s = block_scale(scales, of);
    GroupScales g;
    for (int q = 0; q < 4; ++q) {
      g.scale[q] = _mm512_set1_ps(s);
      g.zero[q] = _mm512_set1_ps(detail::decode_zero(s));
    }
    g.add_zero = !AddsNothing(t, s);
    return g;
  };
  // Calls f(GroupStore) for accumulate and add_zero.
  auto with_store = [&](bool add_zero, auto f) OCTET_LAMBDA_INLINE {
    WithFlag(add_zero, [&](auto add) OCTET_LAMBDA_INLINE {
      if constexpr (kStream) {
        f(GroupStore<true, false, decltype(add)::value>());
      } else {
        WithFlag(accumulate, [&](auto acc) OCTET_LAMBDA_INLINE {
          f(GroupStore<false, decltype(acc)::value, decltype(add)::value>());
        });
      }
    });
  };
  // The groups from i that end by `end`, all of block `of`.
  auto whole_groups = [&](size_t of, size_t end) OCTET_LAMBDA_INLINE {
    if (i + kLanes > end) return;
    if constexpr (Groups::kPrescales) {
      if (block >= Groups::kPrescaleMinBlock && groups.Prescale(t, block_scale(scales, of))) {
        with_store(false, [&](auto store) OCTET_LAMBDA_INLINE {
          // 4 groups a step: the loop's own 4 instructions (2 adds, a compare, a branch) come once
          // in about 100, not in every group's 28, and this core issues them at the expense of
          // the group's (VBMI, 2^17 elements in L2: 1.06x as fast, 1.045x with 2 a step).
          for (; i + 4 * kLanes <= end; i += 4 * kLanes)
            for (size_t k = 0; k < 4 * kLanes; k += kLanes)
              groups.Prescaled(store, codes + i + k, out + i + k);
          for (; i + kLanes <= end; i += kLanes) groups.Prescaled(store, codes + i, out + i);
        });
        return;
      }
    }
    const GroupScales g = splat(of);
    with_store(g.add_zero, [&](auto store) OCTET_LAMBDA_INLINE {
      for (; i + kLanes <= end; i += kLanes) groups(store, g, codes + i, out + i);
    });
  };
  // The group at i, whose lanes from next - i on are block of + 1's.
  auto straddling_group = [&](size_t of, size_t next) OCTET_LAMBDA_INLINE {
    const GroupScales g0 = splat(of);
    GroupScales g = splat(of + 1);
    const int k = static_cast<int>(next - i);
    for (int q = 0; q < 4; ++q) {
      const int from = k - 16 * q;  // the quarter's first lane of block of + 1
      const __mmask16 m = from <= 0 ? 0xffff : from >= 16 ? 0 : (0xffff << from) & 0xffff;
      g.scale[q] = _mm512_mask_mov_ps(g0.scale[q], m, g.scale[q]);
      g.zero[q] = _mm512_mask_mov_ps(g0.zero[q], m, g.zero[q]);
    }
    g.add_zero = g.add_zero || g0.add_zero;
    with_store(g.add_zero,
               [&](auto store) OCTET_LAMBDA_INLINE { groups(store, g, codes + i, out + i); });
  };
  for (size_t b = i / block; i + kLanes <= n; ++b) {  // i is in block b
    const size_t next = (b + 1) * size_t{block};      // where block b + 1 starts
    whole_groups(b, std::min(next, n));
    if (i + kLanes > n) break;
    if (i < next) {  // then next < i + kLanes <= n: the group ends in block b + 1 (64 <= block)
      straddling_group(b, next);
      i += kLanes;
    }
  }
  for (; i < n; ++i) one(i);
}

// The 8-bit decode of this target, kStream as DecodeGroups.
template <bool kStream = false>
void DecodeGroups8(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                   const uint8_t* scales, float* out, bool accumulate) {
#if HWY_TARGET == HWY_AVX3_DL
  t.is_signed
      ? DecodeGroups<ByteGroups<true>, kStream>(t, codes, n, block, scales, out, accumulate)
      : DecodeGroups<ByteGroups<false>, kStream>(t, codes, n, block, scales, out, accumulate);
#else
  t.is_signed
      ? DecodeGroups<WordGroups<true>, kStream>(t, codes, n, block, scales, out, accumulate)
      : DecodeGroups<WordGroups<false>, kStream>(t, codes, n, block, scales, out, accumulate);
#endif
}
#endif

// The decoded value of every code for one block's scale, as float bits: value * scale +
// decode_zero(scale), the scalar reference's operations. Only the type's 2^bits entries: a 4-bit
// block (128 elements) must not pay for 256.
void ScaledValues(const detail::QuantTable& t, float scale, uint32_t* bits) {
  const DF df;
  const DU du;
  const auto vscale = hn::Set(df, scale), zero = hn::Set(df, detail::decode_zero(scale));
  const size_t codes = size_t{1} << t.bits;
  size_t c = 0;
  for (; c + hn::Lanes(df) <= codes; c += hn::Lanes(df))
    hn::StoreU(hn::BitCast(du, hn::Add(hn::Mul(hn::LoadU(df, t.value + c), vscale), zero)), du,
               bits + c);
  for (; c < codes; ++c)
    bits[c] = detail::float_bits(detail::decode_value(t, static_cast<uint32_t>(c), scale));
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// The table entries of 8 codes.
HWY_INLINE __m256i LookUp8(const uint32_t* bits, const uint8_t* codes) {
  uint64_t c;
  std::memcpy(&c, codes, 8);
  return Assemble8(bits[c & 0xff], bits[(c >> 8) & 0xff], bits[(c >> 16) & 0xff],
                   bits[(c >> 24) & 0xff], bits[(c >> 32) & 0xff], bits[(c >> 40) & 0xff],
                   bits[(c >> 48) & 0xff], bits[c >> 56]);
}

// Where decoded vectors go: out overwritten (ordinary or, out 32-byte aligned, non-temporal
// stores), or out + value (the scalar loop's add, in its operand order).
struct StoreSink {
  HWY_INLINE void operator()(float* to, __m256 v) const { _mm256_storeu_ps(to, v); }
};
struct StreamSink {
  HWY_INLINE void operator()(float* to, __m256 v) const { _mm256_stream_ps(to, v); }
};
struct AddSink {
  HWY_INLINE void operator()(float* to, __m256 v) const {
    _mm256_storeu_ps(to, _mm256_add_ps(_mm256_loadu_ps(to), v));
  }
};

// value_plan.h's arithmetic for 8 codes, with the block's scale: fma(y, +-scale by the sign bit,
// +0), and the scale itself for the spare code (+1). Only for plan_scale_ok scales, where that
// fused step rounds as the reference's value * scale + decode_zero(scale) does. Meant to live in
// registers (a local of the loop): its constants are what the loop must not load, next to the
// table loads that already fill the load ports.
class AffineDecoder {
 public:
  AffineDecoder(const ValuePlan& p, float scale)
      : offset_(_mm256_loadu_ps(p.offset)),
        hi_(_mm256_loadu_ps(p.hi)),
        lo_(_mm256_loadu_ps(p.lo)),
        factor_(_mm256_set1_ps(p.factor)),
        scale_(_mm256_set1_ps(scale)),
        negated_scale_(_mm256_set1_ps(-scale)),
        level_mask_(_mm256_set1_epi32(0x7f)),
        spare_(_mm256_set1_epi32(0x80)) {}

  HWY_INLINE __m256 Decode8(const uint8_t* codes) const {
    const __m256i c =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes)));
    const __m256i level = _mm256_and_si256(c, level_mask_);
    const __m256i all_ones = _mm256_cmpeq_epi32(c, c);
    const __m256i odd = _mm256_sub_epi32(_mm256_add_epi32(level, level), all_ones);  // 2 L + 1
    const __m256i slot = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(odd)), 23);
    const __m256 k = _mm256_fmadd_ps(_mm256_cvtepi32_ps(level), factor_,
                                     _mm256_permutevar8x32_ps(offset_, slot));
    const __m256 y = _mm256_fmadd_ps(k, _mm256_permutevar8x32_ps(hi_, slot),
                                     _mm256_mul_ps(k, _mm256_permutevar8x32_ps(lo_, slot)));
    const __m256 negative = _mm256_castsi256_ps(_mm256_slli_epi32(c, 24));  // sign bit -> bit 31
    const __m256 v =
        _mm256_fmadd_ps(y, _mm256_blendv_ps(scale_, negated_scale_, negative), _mm256_setzero_ps());
    return _mm256_blendv_ps(v, scale_, _mm256_castsi256_ps(_mm256_cmpeq_epi32(c, spare_)));
  }

 private:
  __m256 offset_, hi_, lo_, factor_, scale_, negated_scale_;
  __m256i level_mask_, spare_;
};

// Whole vectors of 8 into sink; with a plan and a scale it allows (plan_scale_ok), 3 at a time:
// two by table loads and one by arithmetic, which run on different units (loads and shuffles;
// multiply-adds), so that together they decode about 1.3x as fast as loads alone
// (docs/performance.md, "AVX2 decode"). Returns the elements done.
template <class Sink>
HWY_INLINE size_t DecodeInto(Sink sink, const uint32_t* bits, const ValuePlan* plan, float scale,
                             const uint8_t* codes, size_t n, float* out) {
  size_t i = 0;
  if (plan != nullptr && plan_scale_ok(scale)) {
    const AffineDecoder affine(*plan, scale);
    for (; i + 24 <= n; i += 24) {
      sink(out + i, _mm256_castsi256_ps(LookUp8(bits, codes + i)));
      sink(out + i + 8, _mm256_castsi256_ps(LookUp8(bits, codes + i + 8)));
      sink(out + i + 16, affine.Decode8(codes + i + 16));
    }
  }
  for (; i + 8 <= n; i += 8) sink(out + i, _mm256_castsi256_ps(LookUp8(bits, codes + i)));
  return i;
}

// plan: value_plan's for this table, or null.
size_t DecodeVectors(const uint32_t* bits, const ValuePlan* plan, float scale, const uint8_t* codes,
                     size_t n, float* out, bool accumulate) {
  return accumulate ? DecodeInto(AddSink{}, bits, plan, scale, codes, n, out)
                    : DecodeInto(StoreSink{}, bits, plan, scale, codes, n, out);
}

// 4-bit codes (0..15): the block's 16 decoded values held in two registers, 8 lanes a step by two
// in-register permutes and a blend instead of a table load per element; accumulate: out + value,
// the scalar loop's add; kStream: non-temporal stores (out 32-byte aligned, no accumulate).
// Returns the elements done.
template <bool kStream = false>
size_t DecodeVectors16(const uint32_t* bits, const uint8_t* codes, size_t n, float* out,
                       bool accumulate) {
  const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits));
  const __m256i hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits + 8));
  const __m256i seven = _mm256_set1_epi32(7);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i idx =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i)));
    const __m256i v =
        _mm256_blendv_epi8(_mm256_permutevar8x32_epi32(lo, idx),
                           _mm256_permutevar8x32_epi32(hi, idx), _mm256_cmpgt_epi32(idx, seven));
    if (kStream)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i), v);
    else if (accumulate)
      _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(out + i), _mm256_castsi256_ps(v)));
    else
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), v);
  }
  return i;
}
#else
size_t DecodeVectors16(const uint32_t*, const uint8_t*, size_t, float*, bool) {
  return 0;
}

// Pairs of table entries, one 8-byte store each (overwrite only). Returns the elements done.
size_t DecodeVectors(const uint32_t* bits, const ValuePlan*, float, const uint8_t* codes, size_t n,
                     float* out, bool accumulate) {
  if (accumulate) return 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t c;
    std::memcpy(&c, codes + i, 8);
    for (int k = 0; k < 8; k += 2, c >>= 16) {
      const uint64_t pair = bits[c & 0xff] | uint64_t{bits[(c >> 8) & 0xff]} << 32;
      std::memcpy(out + i + k, &pair, 8);
    }
  }
  return i;
}
#endif

// value_plan's plan for 8-bit codes on the AVX2 target (AVX-512 decodes them in registers,
// DecodeGroups8), or null.
const ValuePlan* AffinePlan(const detail::QuantTable& t) {
#if HWY_TARGET == HWY_AVX2
  if (t.bits == 8) {
    const ValuePlan& p = value_plan(t);
    if (p.usable) return &p;
  }
#endif
  (void)t;
  return nullptr;
}

// Decode as a table lookup per element (and value_plan's arithmetic for some 8-bit codes, plan
// not null): the block's scaled table, then DecodeVectors16 or DecodeVectors, then the scalar
// loop for the rest.
void DecodeByLoads(const detail::QuantTable& t, const ValuePlan* plan, const uint8_t* codes,
                   size_t n, float scale, float* out, bool accumulate) {
  alignas(64) uint32_t bits[256];
  ScaledValues(t, scale, bits);
  size_t i = t.bits == 4 ? DecodeVectors16(bits, codes, n, out, accumulate)
                         : DecodeVectors(bits, plan, scale, codes, n, out, accumulate);
  for (; i < n; ++i) {
    float v = detail::bits_float(bits[codes[i]]);
    if (accumulate) {
      float o;
      std::memcpy(&o, out + i, sizeof o);
      v = o + v;
    }
    std::memcpy(out + i, &v, sizeof v);
  }
}

// Calls fn(first, end, scale) for each block of a run of n elements.
template <typename Fn>
HWY_INLINE void ForEachBlock(size_t n, uint32_t block, const uint8_t* scales, Fn fn) {
  for (size_t first = 0; first < n; first += block)
    fn(first, first + std::min<size_t>(block, n - first), block_scale(scales, first / block));
}

void Decode(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
            const uint8_t* scales, float* out, bool accumulate) {
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3
  if (t.bits == 8) return DecodeGroups8(t, codes, n, block, scales, out, accumulate);
#endif
  const ValuePlan* plan = AffinePlan(t);
  ForEachBlock(n, block, scales, [&](size_t first, size_t end, float scale) {
    DecodeByLoads(t, plan, codes + first, end - first, scale, out + first, accumulate);
  });
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// Decode's table lookups with non-temporal stores only: per block, 32 bytes at a time from the
// first 32-byte aligned element on, 4 bytes at a time (movnti) before it and after the last full
// vector. A line written partly by ordinary stores and partly by non-temporal ones costs far more
// than either: blocks end and begin inside lines. (out 4-byte aligned.)
void DecodeStreamByLoads(const detail::QuantTable& t, const uint8_t* codes, size_t n,
                         uint32_t block, const uint8_t* scales, float* out) {
  int* words = reinterpret_cast<int*>(out);
  const ValuePlan* plan = AffinePlan(t);
  ForEachBlock(n, block, scales, [&](size_t first, size_t end, float scale) {
    alignas(64) uint32_t bits[256];
    ScaledValues(t, scale, bits);
    size_t i = first;
    for (; i < end && (reinterpret_cast<uintptr_t>(out + i) & 31) != 0; ++i)
      _mm_stream_si32(words + i, static_cast<int>(bits[codes[i]]));
    if (t.bits == 4) {
      i += DecodeVectors16<true>(bits, codes + i, end - i, out + i, false);
    } else {
      i += DecodeInto(StreamSink{}, bits, plan, scale, codes + i, end - i, out + i);
    }
    for (; i < end; ++i) _mm_stream_si32(words + i, static_cast<int>(bits[codes[i]]));
  });
}

// Decode with non-temporal stores only: 8-bit codes on AVX-512 by DecodeGroups's kStream, the rest
// by DecodeStreamByLoads. An output not aligned to 4 bytes is written as Decode writes it, all of
// it, so that no line is written by both kinds of store (decode_blocks then gets no non-temporal
// store at all).
void DecodeStream(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                  const uint8_t* scales, float* out) {
  if ((reinterpret_cast<uintptr_t>(out) & 3) != 0)
    return Decode(t, codes, n, block, scales, out, false);
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3
  if (t.bits == 8) return DecodeGroups8<true>(t, codes, n, block, scales, out, false);
#endif
  DecodeStreamByLoads(t, codes, n, block, scales, out);
}
#else
void DecodeStream(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                  const uint8_t* scales, float* out) {
  Decode(t, codes, n, block, scales, out, false);
}
#endif

void Fence() {
#if HWY_ARCH_X86
  _mm_sfence();
#endif
}
#endif  // HWY_TARGET == HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace codec
}  // namespace octet
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace octet {
namespace codec {

HWY_EXPORT(Decode);
HWY_EXPORT(DecodeStream);
HWY_EXPORT(Fence);

void simd_decode(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                 const uint8_t* scales, float* out, bool accumulate) {
  OCTET_DISPATCH(Decode)(t, codes, n, block, scales, out, accumulate);
}
void simd_decode_stream(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                        const uint8_t* scales, float* out) {
  OCTET_DISPATCH(DecodeStream)(t, codes, n, block, scales, out);
}
void simd_fence() {
  OCTET_DISPATCH(Fence)();
}

}  // namespace codec
}  // namespace octet
#endif  // HWY_ONCE
