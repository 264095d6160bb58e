// The SIMD encoders: the block statistics, round-to-nearest and stochastic rounding, the same
// integer bucket lookup (or segment arithmetic, checked against it) as quant_math.h, a vector at a
// time, for every Highway target; simd_dispatch.h picks one at run time. Elements past the last
// full vector go through the scalar functions of quant_math.h.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>

#include "codec/block_kernels.h"
#include "codec/bucket_keys.h"
#include "codec/encode_blocks.h"
#include "codec/segments.h"
#include "codec/simd_dispatch.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/simd_encode.cc"
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
BlockStats Stats(const float* x, size_t n) {
  return scalar_kernels().stats(x, n);
}
void EncodeNearest(const detail::QuantTable& t, const float* x, size_t n,
                   const detail::BlockScale& s, uint8_t* codes) {
  scalar_kernels().encode_nearest(t, x, n, s, codes);
}
void EncodeStochastic(const detail::QuantTable& t, const float* x, size_t n,
                      const detail::BlockScale& s, uint64_t seed, uint64_t first_index,
                      uint8_t* codes) {
  scalar_kernels().encode_stochastic(t, x, n, s, seed, first_index, codes);
}
void EncodeBlocks(const EncodeJob& job, uint64_t b0, uint64_t b1) {
  scalar_kernels().encode_blocks(job, b0, b1);
}
#else
BlockStats StatsWithNonFinite(const float* x, size_t n) {
  const DF df;
  const DI di;
  const size_t N = hn::Lanes(df);
  const auto exp_mask = hn::Set(di, static_cast<int32_t>(detail::kExpMask));
  auto vmax = hn::Zero(df), vmin = hn::Zero(df);
  auto nonfinite = hn::Zero(di);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = LoadFloats(x + i);
    const auto bad = hn::Eq(hn::And(hn::BitCast(di, v), exp_mask), exp_mask);
    nonfinite = hn::Or(nonfinite, hn::VecFromMask(di, bad));
    const auto finite = hn::IfThenZeroElse(hn::RebindMask(df, bad), v);
    vmax = hn::Max(vmax, finite);
    vmin = hn::Min(vmin, finite);
  }
  BlockStats s{hn::GetLane(hn::MaxOfLanes(df, vmax)), hn::GetLane(hn::MinOfLanes(df, vmin)),
               !hn::AllFalse(di, hn::Ne(nonfinite, hn::Zero(di)))};
  if (i == n) return s;
  const BlockStats tail = scalar_kernels().stats(x + i, n - i);
  s.max_value = tail.max_value > s.max_value ? tail.max_value : s.max_value;
  s.min_value = tail.min_value < s.min_value ? tail.min_value : s.min_value;
  s.has_nonfinite = s.has_nonfinite || tail.has_nonfinite;
  return s;
}

// Max and min of the finite elements and whether there is another one. The loop takes plain max and
// min and accumulates v - v, which is +0 for finite v and NaN otherwise (ORing its bits in the main
// loop: a one-cycle dependency, where a sum's add latency bounded the loop); only a block with a
// non-finite element is read again, masking those out.
BlockStats Stats(const float* x, size_t n) {
  const DF df;
  const size_t N = hn::Lanes(df);
  auto vmax = hn::Zero(df), vmin = hn::Zero(df), check = hn::Zero(df);
  size_t i = 0;
  // Two vectors a step into separate accumulators. Zeros of either sign compare equal, so the
  // order of the max and min does not matter to make_block_scale.
  if (n >= 2 * N) {
    auto vmax1 = hn::Zero(df), vmin1 = hn::Zero(df), check1 = hn::Zero(df);
    for (; i + 2 * N <= n; i += 2 * N) {
      const auto v0 = LoadFloats(x + i), v1 = LoadFloats(x + i + N);
      vmax = hn::Max(vmax, v0);
      vmin = hn::Min(vmin, v0);
      check = hn::Or(check, hn::Sub(v0, v0));
      vmax1 = hn::Max(vmax1, v1);
      vmin1 = hn::Min(vmin1, v1);
      check1 = hn::Or(check1, hn::Sub(v1, v1));
    }
    vmax = hn::Max(vmax, vmax1);
    vmin = hn::Min(vmin, vmin1);
    check = hn::Or(check, check1);
  }
  for (; i + N <= n; i += N) {
    const auto v = LoadFloats(x + i);
    vmax = hn::Max(vmax, v);
    vmin = hn::Min(vmin, v);
    check = hn::Add(check, hn::Sub(v, v));
  }
  if (!hn::AllTrue(df, hn::Eq(check, check))) return StatsWithNonFinite(x, n);
  BlockStats s{hn::GetLane(hn::MaxOfLanes(df, vmax)), hn::GetLane(hn::MinOfLanes(df, vmin)), false};
  if (i == n) return s;  // a block of whole vectors (every default block size)
  const BlockStats tail = scalar_kernels().stats(x + i, n - i);
  s.max_value = tail.max_value > s.max_value ? tail.max_value : s.max_value;
  s.min_value = tail.min_value < s.min_value ? tail.min_value : s.min_value;
  s.has_nonfinite = tail.has_nonfinite;
  return s;
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// table[idx_k] for 8 lanes by scalar loads (any 32-bit table: read through a may_alias type).
HWY_INLINE __m256i LoadLanes(const void* table, __m256i idx) {
  typedef uint32_t __attribute__((may_alias)) Word;
  const Word* w = static_cast<const Word*>(table);
  const __m128i i0 = _mm256_castsi256_si128(idx), i1 = _mm256_extracti128_si256(idx, 1);
  const uint64_t q[4] = {static_cast<uint64_t>(_mm_cvtsi128_si64(i0)),
                         static_cast<uint64_t>(_mm_extract_epi64(i0, 1)),
                         static_cast<uint64_t>(_mm_cvtsi128_si64(i1)),
                         static_cast<uint64_t>(_mm_extract_epi64(i1, 1))};
  return Assemble8(w[q[0] & 0xffffffffu], w[q[0] >> 32], w[q[1] & 0xffffffffu], w[q[1] >> 32],
                   w[q[2] & 0xffffffffu], w[q[2] >> 32], w[q[3] & 0xffffffffu], w[q[3] >> 32]);
}
#endif

// table[idx] lane by lane, every index in range: scalar loads on x86 from AVX2 up, where they beat
// a vector gather (about 10 cycles per 8 lanes on AMD Zen 3; on Zen 5, 2.7 against 6.0 G lanes/s
// for 8 loads folded into inserts), a gather elsewhere.
template <class D, typename T>
HWY_INLINE hn::Vec<D> GatherLanes(D d, const T* table, hn::Vec<DI> idx) {
#if HWY_TARGET == HWY_AVX2
  return hn::BitCast(d, hn::Vec<DI>{LoadLanes(table, idx.raw)});
#elif HWY_ARCH_X86 && HWY_TARGET < HWY_AVX2  // AVX-512: two halves of 8
  const __m256i lo = LoadLanes(table, _mm512_castsi512_si256(idx.raw));
  const __m256i hi = LoadLanes(table, _mm512_extracti64x4_epi64(idx.raw, 1));
  return hn::BitCast(d, hn::Vec<DI>{_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)});
#else
  return hn::GatherIndex(d, table, idx);
#endif
}

// u * 2^24 of the elements with the given low index bits (quant_math.h's uniform_from_key), as an
// exact float.
HWY_INLINE hn::Vec<DF> HashedUniform24(hn::Vec<DU> index_low, hn::Vec<DU> key) {
  auto r = hn::Xor(index_low, key);
  r = hn::Xor(r, hn::ShiftRight<16>(r));
  r = hn::Mul(r, hn::Set(DU(), 0x7feb352du));
  r = hn::Xor(r, hn::ShiftRight<15>(r));
  r = hn::Mul(r, hn::Set(DU(), 0x846ca68bu));
  r = hn::Xor(r, hn::ShiftRight<16>(r));
  return hn::ConvertTo(DF(), hn::BitCast(DI(), hn::ShiftRight<8>(r)));
}

// The table's constants as vectors, and the two steps every encoder shares: the nearest level of
// |xn| (quant_math.h's nearest_level) and level -> code (level_to_code).
struct Lookup {
  explicit Lookup(const detail::QuantTable& t)
      : t(t),
        shift(static_cast<int>(t.shift)),
        lut(reinterpret_cast<const int32_t*>(t.lut)),
        lo(hn::Set(DI(), static_cast<int32_t>(t.lo_bits))),
        one_bits(hn::Set(DI(), static_cast<int32_t>(detail::kOneBits))),
        first_bucket(hn::Set(DI(), static_cast<int32_t>(t.lo_bits >> t.shift))),
        offset_mask(hn::Set(DI(), static_cast<int32_t>((1u << t.shift) - 1u))),
        thr_mask(hn::Set(DI(), static_cast<int32_t>((1u << detail::kThresholdBits) - 1u))),
        top(hn::Set(DI(), static_cast<int32_t>(t.top))),
        top_neg(hn::Set(DI(), static_cast<int32_t>(t.top - 1))),
        spare(hn::Set(DI(), static_cast<int32_t>(t.spare_code))),
        sign_code(hn::Set(DI(), static_cast<int32_t>(t.sign_code))) {}

  // abs_bits <= 1.0f's bits or larger (clamped); never reads outside the bucket table.
  HWY_INLINE hn::Vec<DI> NearestLevel(hn::Vec<DI> abs_bits) const {
    const DI di;
    const auto a = hn::Min(hn::Max(abs_bits, lo), one_bits);
    const auto entry = GatherLanes(di, lut, hn::Sub(hn::ShiftRightSame(a, shift), first_bucket));
    const auto base =
        hn::BitCast(di, hn::ShiftRight<detail::kThresholdBits>(hn::BitCast(DU(), entry)));
    const auto below = hn::Gt(hn::And(entry, thr_mask), hn::And(a, offset_mask));
    return hn::Add(base, hn::IfThenZeroElse(below, hn::Set(di, 1)));
  }

  HWY_INLINE hn::Vec<DI> ToCode(hn::Vec<DI> level, hn::Mask<DI> negative) const {
    if (!t.is_signed) return level;
    const DI di;
    const auto neg_level = hn::Min(level, top_neg);
    const auto neg_code =
        hn::IfThenElseZero(hn::Gt(neg_level, hn::Zero(di)), hn::Or(neg_level, sign_code));
    const auto pos_code = hn::IfThenElse(hn::Eq(level, top), spare, level);
    return hn::IfThenElse(negative, neg_code, pos_code);
  }

  const detail::QuantTable& t;
  int shift;
  const int32_t* lut;
  hn::Vec<DI> lo, one_bits, first_bucket, offset_mask, thr_mask, top, top_neg, spare, sign_code;
};

// x -> xn = (x * pre) * inv, as float bits.
HWY_INLINE hn::Vec<DI> NormalizedBits(const float* x, const detail::BlockScale& s) {
  auto v = LoadFloats(x);
  if (s.pre != 1.0f) v = hn::Mul(v, hn::Set(DF(), s.pre));
  return hn::BitCast(DI(), hn::Mul(v, hn::Set(DF(), s.inv)));
}

#undef OCTET_SEGMENT_LEVELS  // this file is compiled once per target
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define OCTET_SEGMENT_LEVELS 1
// Lane i of an 8-entry table (lanes 8..15 of 512-bit vectors are padding) for each lane's idx; idx
// may hold any value (low bits used) in lanes whose result is discarded. Highway's
// TableLookupLanes asserts in-range indices in debug and sanitizer builds.
template <class V>
HWY_INLINE V Permute8(V table, hn::Vec<DI> idx) {
  const hn::DFromV<V> d;
#if HWY_TARGET == HWY_AVX2
  const __m256i r = _mm256_permutevar8x32_epi32(hn::BitCast(DI(), table).raw, idx.raw);
#else
  const __m512i r = _mm512_permutexvar_epi32(idx.raw, hn::BitCast(DI(), table).raw);
#endif
  return hn::BitCast(d, hn::Vec<DI>{r});
}

// Float -> int32 by truncation, without Highway's fix-up of out-of-range lanes (NaN lanes here
// are replaced afterwards).
HWY_INLINE hn::Vec<DI> TruncateToInt(hn::Vec<DF> v) {
#if HWY_TARGET == HWY_AVX2
  return hn::Vec<DI>{_mm256_cvttps_epi32(v.raw)};
#else
  return hn::Vec<DI>{_mm512_cvttps_epi32(v.raw)};
#endif
}

// The segment (segments.h) of abs_bits <= 1.0f's bits, for both plans (SegmentPlan,
// StochasticPlan): the first segment of the exponent's group by a byte shuffle, then one permute
// and one compare.
struct SegmentFinder {
  using D16 = hn::Repartition<uint16_t, DF>;

  template <class Plan>
  explicit SegmentFinder(const Plan& p)
      : group_offset(hn::BitCast(D16(), hn::Set(DI(), p.group_offset))),
        // The group table in every 16-byte block (byte shuffles index within blocks).
        group_segment(hn::LoadDup128(D8(), p.group_segment)),
        next_below(hn::LoadU(DI(), p.next_below)) {
    static_assert(kGroups == 16, "one 16-byte block");
  }

  HWY_INLINE hn::Vec<DI> Segment(hn::Vec<DI> abs_bits) const {
    const DI di;
    // max(exponent group - offset, 0) by a saturating 16-bit subtract (the high half is 0); the
    // byte shuffle reads group_segment[0] = 0 for the lane's 3 zero bytes.
    const auto group = hn::BitCast(
        D8(),
        hn::SaturatedSub(hn::BitCast(D16(), hn::ShiftRight<kGroupShift>(abs_bits)), group_offset));
    const auto first = hn::BitCast(di, hn::TableLookupBytes(group_segment, group));
    return hn::Sub(first, hn::VecFromMask(di, hn::Gt(abs_bits, Permute8(next_below, first))));
  }

  hn::Vec<D16> group_offset;
  hn::Vec<D8> group_segment;
  hn::Vec<DI> next_below;
};

// segments.h's arithmetic level: the segment from the exponent's group (a byte shuffle), one
// permute and one compare, then floor(z) with z from one more permute-fed multiply-add. Lanes whose
// z lies within 2 epsilon above an integer are flagged in *ambiguous: their level may be off by one
// and the caller recomputes them exactly. No gather: 4 permutes and a byte shuffle per vector.
struct SegmentLevels : SegmentFinder {
  SegmentLevels(const SegmentPlan& p, hn::Vec<DI> top_level)
      : SegmentFinder(p),
        rate(hn::LoadU(DF(), p.rate)),
        intercept(hn::LoadU(DF(), p.intercept)),
        z_max(hn::LoadU(DF(), p.z_max)),
        top_below(hn::Set(DI(), p.top_below)),
        top(top_level),
        two_epsilon(hn::Set(DF(), 2 * p.epsilon)) {}

  HWY_INLINE hn::Vec<DI> Level(hn::Vec<DI> abs_bits, hn::Mask<DF>* ambiguous) const {
    const DF df;
    const auto seg = Segment(abs_bits);
    const auto z = hn::Min(
        hn::MulAdd(hn::BitCast(df, abs_bits), Permute8(rate, seg), Permute8(intercept, seg)),
        Permute8(z_max, seg));
    const auto whole = hn::Floor(z);
    *ambiguous = hn::Or(*ambiguous, hn::Lt(hn::Sub(z, whole), two_epsilon));
    return hn::IfThenElse(hn::Gt(abs_bits, top_below), top, TruncateToInt(whole));
  }

  hn::Vec<DF> rate, intercept, z_max;
  hn::Vec<DI> top_below, top;
  hn::Vec<DF> two_epsilon;
};

// Levels of kVectors vectors of normalised floats, exact: by segment arithmetic, or by the bucket
// lookup when a lane is too close to a threshold to trust it (one test for all of them).
template <int kVectors>
HWY_INLINE void ExactLevels(const Lookup& lookup, const SegmentLevels& seg,
                            const hn::Vec<DI> abs_bits[kVectors], hn::Vec<DI> level[kVectors]) {
  auto ambiguous = hn::FirstN(DF(), 0);
  for (int k = 0; k < kVectors; ++k) level[k] = seg.Level(abs_bits[k], &ambiguous);
  if (HWY_LIKELY(hn::AllFalse(DF(), ambiguous))) return;
  for (int k = 0; k < kVectors; ++k) level[k] = lookup.NearestLevel(abs_bits[k]);
}

// segments.h's StochasticPlan: the level ceil(v), v = pos(|xn|) - margin - u, with u from the same
// counter-based hash as quant_math.h. Lanes with ceil(v) - v < 2 margin (pos - u within the
// margin of an integer) are flagged: the caller recomputes their group exactly. No gather: 5
// permutes and a byte shuffle.
struct StochasticLevels : SegmentFinder {
  StochasticLevels(const StochasticPlan& p, uint32_t key)
      : SegmentFinder(p),
        rate(hn::LoadU(DF(), p.rate)),
        intercept(hn::LoadU(DF(), p.intercept)),
        last(hn::LoadU(DF(), p.last)),
        stretch(hn::LoadU(DF(), p.stretch)),
        key(hn::Set(DU(), key)),
        two_margin(hn::Set(DF(), 2 * p.margin)) {}

  // abs_bits: |xn| clamped to 1.0f's bits. Returns the level (not yet clamped for negative
  // values: the code step does that); *dmin accumulates ceil(v) - v.
  HWY_INLINE hn::Vec<DI> Level(hn::Vec<DI> abs_bits, hn::Vec<DU> index_low,
                               hn::Vec<DF>* dmin) const {
    const DF df;
    const auto seg = Segment(abs_bits);
    const auto w =
        hn::MulAdd(hn::BitCast(df, abs_bits), Permute8(rate, seg), Permute8(intercept, seg));
    const auto lo = hn::Min(w, Permute8(last, seg));
    const auto pos = hn::MulAdd(hn::Sub(w, lo), Permute8(stretch, seg), lo);
    const auto v =
        hn::NegMulAdd(HashedUniform24(index_low, key), hn::Set(df, 1.0f / 16777216.0f), pos);
    const auto up = hn::Ceil(v);
    *dmin = hn::Min(*dmin, hn::Sub(up, v));
    return TruncateToInt(up);
  }

  // Whether every lane's v = pos - margin - u was at least the margin away from an integer.
  HWY_INLINE bool Clear(hn::Vec<DF> dmin) const {
    return hn::AllFalse(DF(), hn::Lt(dmin, two_margin));
  }

  hn::Vec<DF> rate, intercept, last, stretch;
  hn::Vec<DU> key;
  hn::Vec<DF> two_margin;
};

// quant_math.h's level_to_code on 32 levels at once, as bytes: packs levels and the signs of the
// normalised values (signed saturation keeps the sign) to bytes, then
// code = negative ? (level == 0 ? 0 : min(level, top - 1) | sign_code) : level
// (for signed types the code of +1, the top level, is the top level itself: 0x80 or 0x8).
struct CodePacker {
  explicit CodePacker(const detail::QuantTable& t)
      : is_signed(t.is_signed != 0),
        top_neg(_mm256_set1_epi8(static_cast<char>(t.top - 1))),
        sign_code(_mm256_set1_epi8(static_cast<char>(t.sign_code))),
        order(_mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)) {}

  // level and u: 256-bit vectors (__m256i, or Highway's on the AVX2 target).
  template <class V>
  HWY_INLINE void Store(const V level[4], const V u[4], uint8_t* out) const {
    const __m256i l = _mm256_packus_epi16(_mm256_packs_epi32(raw(level[0]), raw(level[1])),
                                          _mm256_packs_epi32(raw(level[2]), raw(level[3])));
    __m256i code = l;
    if (is_signed) {
      const __m256i sign = _mm256_packs_epi16(_mm256_packs_epi32(raw(u[0]), raw(u[1])),
                                              _mm256_packs_epi32(raw(u[2]), raw(u[3])));
      const __m256i zero = _mm256_cmpeq_epi8(l, _mm256_setzero_si256());
      const __m256i neg =
          _mm256_andnot_si256(zero, _mm256_or_si256(_mm256_min_epu8(l, top_neg), sign_code));
      code = _mm256_blendv_epi8(l, neg, sign);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permutevar8x32_epi32(code, order));
  }

  static HWY_INLINE __m256i raw(__m256i v) { return v; }
  template <class V>
  static HWY_INLINE __m256i raw(V v) {
    return v.raw;
  }

  bool is_signed;
  __m256i top_neg, sign_code, order;
};

// quant_math.h's nearest_level of 8 lanes from bucket_keys.h's keys, one scalar load per lane.
struct KeyedLevels {
  KeyedLevels(const BucketKeys& k, const detail::QuantTable& t)
      : key(k.key.data()),
        lo(_mm256_set1_epi32(static_cast<int>(t.lo_bits))),
        one_bits(_mm256_set1_epi32(static_cast<int>(detail::kOneBits))),
        first_bucket(_mm256_set1_epi32(static_cast<int>(t.lo_bits >> t.shift))),
        bias(_mm256_set1_epi32(static_cast<int>(kBucketKeyBias))),
        level_mask(_mm256_set1_epi32(static_cast<int>(kBucketKeyLevelMask))),
        right(_mm_cvtsi32_si128(static_cast<int>(t.shift))),
        left(_mm_cvtsi32_si128(static_cast<int>(32 - t.shift))) {}

  HWY_INLINE __m256i Level(__m256i abs_bits) const {
    const __m256i a = _mm256_min_epi32(_mm256_max_epi32(abs_bits, lo), one_bits);
    const __m256i bucket = _mm256_sub_epi32(_mm256_srl_epi32(a, right), first_bucket);
    const __m256i e = LoadLanes(key, bucket);
    const __m256i probe = _mm256_xor_si256(_mm256_sll_epi32(a, left), bias);
    return _mm256_add_epi32(_mm256_and_si256(e, level_mask), _mm256_cmpgt_epi32(e, probe));
  }

  const uint32_t* key;
  __m256i lo, one_bits, first_bucket, bias, level_mask;
  __m128i right, left;  // shift counts
};

// Round-to-nearest by KeyedLevels, 32 elements a step: 4 vectors of levels, one byte store. On
// AVX2 (AMD Zen 3) this exact lookup is faster than the segment arithmetic, whose four 8-lane
// permutes per vector all queue for one pipe; the AVX-512 targets use it (in 256-bit vectors) for
// the types without a segment plan, where the alternative is a gather. Returns the elements done.
template <bool kPre>
size_t EncodeBuckets(const KeyedLevels& keyed, const detail::QuantTable& t, const float* x,
                     size_t n, const detail::BlockScale& s, uint8_t* codes) {
  // Local copies: the code stores (bytes) could alias anything reached through a reference.
  const KeyedLevels levels = keyed;
  const CodePacker packer(t);
  const __m256i abs_mask = _mm256_set1_epi32(static_cast<int>(detail::kAbsMask));
  const __m256 pre = _mm256_set1_ps(s.pre), inv = _mm256_set1_ps(s.inv);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    hwy::Prefetch(x + n + i);
    hwy::Prefetch(x + n + i + 16);
    __m256i u[4], level[4];
    for (int k = 0; k < 4; ++k) {
      __m256 v =
          _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8 * k)));
      if (kPre) v = _mm256_mul_ps(v, pre);
      u[k] = _mm256_castps_si256(_mm256_mul_ps(v, inv));
      level[k] = levels.Level(_mm256_and_si256(u[k], abs_mask));
    }
    packer.Store(level, u, codes + i);
  }
  return i;
}

#if HWY_TARGET != HWY_AVX2
// CodePacker for 512-bit vectors: 64 levels at once, the sign fix-up on bytes (one mask test
// and one masked move for 64 codes instead of seven operations per 16 lanes). As CodePacker, it
// relies on build_quant_table's spare_code == top for signed types.
struct CodePacker512 {
  explicit CodePacker512(const detail::QuantTable& t)
      : is_signed(t.is_signed != 0),
        top_neg(_mm512_set1_epi8(static_cast<char>(t.top - 1))),
        sign_code(_mm512_set1_epi8(static_cast<char>(t.sign_code))),
        // packs interleave 128-bit lanes: packed dword 4j + k holds vector k's lane-j elements.
        order(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)) {}

  HWY_INLINE void Store(const hn::Vec<DI> level[4], const hn::Vec<DI> u[4], uint8_t* out) const {
    const __m512i l = _mm512_packus_epi16(_mm512_packs_epi32(level[0].raw, level[1].raw),
                                          _mm512_packs_epi32(level[2].raw, level[3].raw));
    __m512i code = l;
    if (is_signed) {
      const __m512i sign = _mm512_packs_epi16(_mm512_packs_epi32(u[0].raw, u[1].raw),
                                              _mm512_packs_epi32(u[2].raw, u[3].raw));
      // Negative and nonzero level: min(level, top - 1) | sign_code; negative zero stays 0.
      const __mmask64 neg = _mm512_mask_test_epi8_mask(_mm512_movepi8_mask(sign), l, l);
      code = _mm512_mask_mov_epi8(l, neg, _mm512_or_si512(_mm512_min_epu8(l, top_neg), sign_code));
    }
    _mm512_storeu_si512(out, _mm512_permutexvar_epi32(order, code));
  }

  bool is_signed;
  __m512i top_neg, sign_code, order;
};

// AVX-512 targets: 4 vectors a step (one ambiguity test, one byte store of 64 codes), then a
// vector a step for the rest.
template <bool kPre>
size_t EncodeSegments(const Lookup& lookup, const SegmentLevels& segments,
                      const detail::QuantTable& t, const float* x, size_t n,
                      const detail::BlockScale& s, uint8_t* codes) {
  const DF df;
  const DI di;
  const DC dc;
  const size_t N = hn::Lanes(di);
  // Local copies: the code stores (bytes) could alias anything reached through a reference.
  const SegmentLevels seg = segments;
  const auto abs_mask = hn::Set(di, static_cast<int32_t>(detail::kAbsMask));
  const auto pre = hn::Set(df, s.pre), inv = hn::Set(df, s.inv);
  auto normalized = [&](const float* p) {
    auto v = LoadFloats(p);
    if (kPre) v = hn::Mul(v, pre);
    return hn::BitCast(di, hn::Mul(v, inv));
  };
  size_t i = 0;
  const CodePacker512 packer(t);
  for (; i + 4 * N <= n; i += 4 * N) {
    hn::Vec<DI> u[4], abs_bits[4], level[4];
    for (int k = 0; k < 4; ++k) {
      hwy::Prefetch(x + n + i + k * N);
      u[k] = normalized(x + i + k * N);
      abs_bits[k] = hn::And(u[k], abs_mask);
    }
    ExactLevels<4>(lookup, seg, abs_bits, level);
    packer.Store(level, u, codes + i);
  }
  for (; i + N <= n; i += N) {
    hwy::Prefetch(x + n + i);
    const auto u = normalized(x + i);
    const hn::Vec<DI> abs_bits[1] = {hn::And(u, abs_mask)};
    hn::Vec<DI> level[1];
    ExactLevels<1>(lookup, seg, abs_bits, level);
    hn::StoreU(hn::DemoteTo(dc, lookup.ToCode(level[0], hn::Lt(u, hn::Zero(di)))), dc, codes + i);
  }
  return i;
}
#endif
#else
#define OCTET_SEGMENT_LEVELS 0
#endif

// Round to nearest. The table's set-up (its constants as vectors, the plans) is done once for
// every block the encoder is given.
class NearestEncoder {
 public:
  explicit NearestEncoder(const detail::QuantTable& t) : t_(t), lookup_(t) {
#if OCTET_SEGMENT_LEVELS
#if HWY_TARGET != HWY_AVX2
    if (const SegmentPlan& plan = segment_plan(t); plan.usable)
      segments_.emplace(plan, lookup_.top);
#endif
    const BucketKeys& keys = bucket_keys(t);  // AVX2: the keyed lookup for every type
    if (!segments_ && !keys.key.empty()) keyed_.emplace(keys, t);
#endif
  }

  BlockStats Stats(const float* x, size_t n) const {
    return HWY_NAMESPACE::Stats(x, n);
  }

  void Encode(const float* x, size_t n, const detail::BlockScale& s, uint64_t /*first_index*/,
              uint8_t* codes) const {
    const DI di;
    const DC dc;
    const size_t N = hn::Lanes(di);
    const auto abs_mask = hn::Set(di, static_cast<int32_t>(detail::kAbsMask));
    const detail::QuantTable& t = t_;  // held in a register: the code stores could alias *this
    size_t i = 0;
#if OCTET_SEGMENT_LEVELS
#if HWY_TARGET != HWY_AVX2
    if (segments_)
      i = s.pre == 1.0f ? EncodeSegments<false>(lookup_, *segments_, t, x, n, s, codes)
                        : EncodeSegments<true>(lookup_, *segments_, t, x, n, s, codes);
#endif
    if (keyed_)
      i = s.pre == 1.0f ? EncodeBuckets<false>(*keyed_, t, x, n, s, codes)
                        : EncodeBuckets<true>(*keyed_, t, x, n, s, codes);
#endif
    const Lookup lookup = lookup_;  // a local copy, as the kernels make theirs
    for (; i + N <= n; i += N) {
      // The block was just read by Stats (it is in L1); fetch the next block meanwhile, so that
      // memory streams while this one computes. Prefetches past the end of the array are
      // harmless.
      hwy::Prefetch(x + n + i);
      const auto u = NormalizedBits(x + i, s);
      const auto level = lookup.NearestLevel(hn::And(u, abs_mask));
      hn::StoreU(hn::DemoteTo(dc, lookup.ToCode(level, hn::Lt(u, hn::Zero(di)))), dc, codes + i);
    }
    if (i < n) scalar_kernels().encode_nearest(t, x + i, n - i, s, codes + i);
  }

 private:
  const detail::QuantTable& t_;
  const Lookup lookup_;
#if OCTET_SEGMENT_LEVELS
  std::optional<SegmentLevels> segments_;  // AVX-512, types with a segment plan
  std::optional<KeyedLevels> keyed_;       // otherwise, where the table has bucket keys
#endif
};

void EncodeNearest(const detail::QuantTable& t, const float* x, size_t n,
                   const detail::BlockScale& s, uint8_t* codes) {
  NearestEncoder(t).Encode(x, n, s, 0, codes);
}

// quant_math.h's encode_stochastic, a vector at a time: the nearest level from level_of (segment
// arithmetic or the bucket lookup), the two levels around |xn| from the magnitude table, the random
// numbers from the same counter-based hash. Returns the elements done.
template <class LevelOf>
HWY_INLINE size_t StochasticVectors(const detail::QuantTable& t, const Lookup& lookup,
                                    LevelOf level_of, const float* x, size_t n,
                                    const detail::BlockScale& s, uint32_t key, uint32_t first_low,
                                    uint8_t* codes) {
  const DF df;
  const DI di;
  const DU du;
  const DC dc;
  const size_t N = hn::Lanes(di);
  const auto abs_mask = hn::Set(di, static_cast<int32_t>(detail::kAbsMask));
  const auto vkey = hn::Set(du, key);
  const auto top = hn::Set(di, static_cast<int32_t>(t.top));
  const auto one = hn::Set(di, 1);
  const auto scale24 = hn::Set(df, 1.0f / 16777216.0f);
  // The element indices as a vector that steps (an Iota per vector is built through memory).
  const auto step = hn::Set(du, static_cast<uint32_t>(N));
  auto index = hn::Iota(du, first_low);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto u = NormalizedBits(x + i, s);
    const auto negative = hn::Lt(u, hn::Zero(di));
    const auto abs_bits = hn::Min(hn::And(u, abs_mask), lookup.one_bits);
    const auto a = hn::BitCast(df, abs_bits);
    const auto max_level = (t.is_signed) ? hn::IfThenElse(negative, lookup.top_neg, top) : top;
    const auto level = hn::Min(level_of(abs_bits), max_level);
    const auto at_level = GatherLanes(df, t.magnitude, level);
    const auto lower =
        hn::Sub(level, hn::IfThenElseZero(hn::RebindMask(di, hn::Gt(at_level, a)), one));
    const auto lo = GatherLanes(df, t.magnitude, lower);
    const auto hi = GatherLanes(df, t.magnitude, hn::Min(hn::Add(lower, one), top));
    const auto uniform = hn::Mul(HashedUniform24(index, vkey), scale24);
    index = hn::Add(index, step);
    const auto up = hn::Gt(hn::Sub(a, lo), hn::Mul(uniform, hn::Sub(hi, lo)));
    const auto chosen =
        hn::IfThenElse(hn::Eq(lower, max_level), max_level,
                       hn::Add(lower, hn::IfThenElseZero(hn::RebindMask(di, up), one)));
    hn::StoreU(hn::DemoteTo(dc, lookup.ToCode(chosen, negative)), dc, codes + i);
  }
  return i;
}

#if OCTET_SEGMENT_LEVELS
// Stochastic rounding by StochasticLevels, kVectors vectors a step; a step with a lane near a
// decision goes through StochasticVectors' exact bucket lookup instead. Returns the elements done.
template <bool kPre>
size_t StochasticSegments(const detail::QuantTable& t, const Lookup& lookup,
                          const StochasticLevels& levels, const float* x, size_t n,
                          const detail::BlockScale& s, uint32_t key, uint32_t first_low,
                          uint8_t* codes) {
  constexpr int kVectors = 4;  // one store of 32 (AVX2) or 64 codes
#if HWY_TARGET == HWY_AVX2
  const CodePacker packer(t);
#else
  const CodePacker512 packer(t);
#endif
  const DF df;
  const DI di;
  const DU du;
  const size_t N = hn::Lanes(di);
  // Local copies: the code stores (bytes) could alias anything reached through a reference.
  const StochasticLevels st = levels;
  const auto one_bits = lookup.one_bits;
  const auto abs_mask = hn::Set(di, static_cast<int32_t>(detail::kAbsMask));
  const auto pre = hn::Set(df, s.pre), inv = hn::Set(df, s.inv);
  const auto step = hn::Set(du, static_cast<uint32_t>(N));
  auto index = hn::Iota(du, first_low);
  auto exact_level = [&](hn::Vec<DI> abs_bits) { return lookup.NearestLevel(abs_bits); };
  size_t i = 0;
  for (; i + kVectors * N <= n; i += kVectors * N) {
    for (size_t line = 0; line < kVectors * N; line += 16) hwy::Prefetch(x + n + i + line);
    hn::Vec<DI> u[kVectors], level[kVectors];
    auto dmin = hn::Set(df, 1.0f);
    for (int k = 0; k < kVectors; ++k) {
      auto v = LoadFloats(x + i + k * N);
      if (kPre) v = hn::Mul(v, pre);
      u[k] = hn::BitCast(di, hn::Mul(v, inv));
      const auto abs_bits = hn::Min(hn::And(u[k], abs_mask), one_bits);
      level[k] = st.Level(abs_bits, index, &dmin);
      index = hn::Add(index, step);
    }
    if (HWY_UNLIKELY(!st.Clear(dmin))) {
      StochasticVectors(t, lookup, exact_level, x + i, kVectors * N, s, key,
                        first_low + static_cast<uint32_t>(i), codes + i);
      continue;
    }
    packer.Store(level, u, codes + i);
  }
  return i;
}
#endif

// StochasticVectors by the bucket lookup, for the elements the plans leave (all of them for types
// without a plan). Its own Lookup: a local object's vectors stay in registers across the code
// stores, where a member's are reloaded (mantissa 0.50 against 0.43 G elements/s on Zen 5).
size_t StochasticByBuckets(const detail::QuantTable& t, const float* x, size_t n,
                           const detail::BlockScale& s, uint32_t key, uint32_t first_low,
                           uint8_t* codes) {
  const Lookup lookup(t);
  auto bucket_level = [&](hn::Vec<DI> abs_bits) { return lookup.NearestLevel(abs_bits); };
  return StochasticVectors(t, lookup, bucket_level, x, n, s, key, first_low, codes);
}

// Stochastic rounding (quant_math.h's encode_stochastic), with the set-up done once for every
// block the encoder is given, and the stream key's levels once per 2^32 element indices.
class StochasticEncoder {
 public:
  StochasticEncoder(const detail::QuantTable& t, uint64_t seed) : t_(t), seed_(seed), lookup_(t) {
#if OCTET_SEGMENT_LEVELS
    if (const StochasticPlan& splan = stochastic_plan(t); splan.usable)
      splan_ = &splan;
    else if (const SegmentPlan& plan = segment_plan(t); plan.usable)
      segments_.emplace(plan, lookup_.top);
#endif
  }

  BlockStats Stats(const float* x, size_t n) const {
    return HWY_NAMESPACE::Stats(x, n);
  }

  void Encode(const float* x, size_t n, const detail::BlockScale& s, uint64_t first_index,
              uint8_t* codes) {
    const detail::QuantTable& t = t_;  // held in a register: the code stores could alias *this
    size_t i = 0;
    // The stream key is constant while the upper 32 bits of the element index are.
    if ((first_index >> 32) == ((first_index + n) >> 32)) {
      const uint32_t key = Key(first_index >> 32);
      const uint32_t low = static_cast<uint32_t>(first_index);
      // A local copy, like the kernels' own: the code stores could alias a member.
      const Lookup lookup = lookup_;
#if OCTET_SEGMENT_LEVELS
      if (levels_) {
        i = s.pre == 1.0f ? StochasticSegments<false>(t, lookup, *levels_, x, n, s, key, low, codes)
                          : StochasticSegments<true>(t, lookup, *levels_, x, n, s, key, low, codes);
      } else if (segments_) {
        const SegmentLevels seg = *segments_;
        auto level_of = [&](hn::Vec<DI> abs_bits) {
          const hn::Vec<DI> in[1] = {abs_bits};
          hn::Vec<DI> level[1];
          ExactLevels<1>(lookup, seg, in, level);
          return level[0];
        };
        i = StochasticVectors(t, lookup, level_of, x, n, s, key, low, codes);
      }
#endif
      i += StochasticByBuckets(t, x + i, n - i, s, key, low + static_cast<uint32_t>(i), codes + i);
    }
    if (i < n)
      scalar_kernels().encode_stochastic(t, x + i, n - i, s, seed_, first_index + i, codes + i);
  }

 private:
  // The stream key of the element indices with these upper 32 bits (and its levels).
  uint32_t Key(uint64_t high) {
    if (high != high_) {
      high_ = high;
      key_ = detail::stream_key(seed_, static_cast<uint32_t>(high));
#if OCTET_SEGMENT_LEVELS
      if (splan_) levels_.emplace(*splan_, key_);
#endif
    }
    return key_;
  }

  const detail::QuantTable& t_;
  const uint64_t seed_;
  const Lookup lookup_;
  uint64_t high_ = ~uint64_t{0};  // no key yet (upper bits are below 2^32)
  uint32_t key_ = 0;
#if OCTET_SEGMENT_LEVELS
  const StochasticPlan* splan_ = nullptr;   // types with a stochastic plan
  std::optional<StochasticLevels> levels_;  // splan_'s, for key_
  std::optional<SegmentLevels> segments_;   // types with only a segment plan
#endif
};

void EncodeStochastic(const detail::QuantTable& t, const float* x, size_t n,
                      const detail::BlockScale& s, uint64_t seed, uint64_t first_index,
                      uint8_t* codes) {
  StochasticEncoder(t, seed).Encode(x, n, s, first_index, codes);
}

// codec.cc's block loop over a run of blocks, with one encoder for all of them.
void EncodeBlocks(const EncodeJob& job, uint64_t b0, uint64_t b1) {
  if (job.options->stochastic) {
    StochasticEncoder e(*job.table, job.options->seed);
    encode_block_range(job, b0, b1, e);
  } else {
    NearestEncoder e(*job.table);
    encode_block_range(job, b0, b1, e);
  }
}
#endif  // HWY_TARGET == HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace codec
}  // namespace octet
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace octet {
namespace codec {

HWY_EXPORT(Stats);
HWY_EXPORT(EncodeNearest);
HWY_EXPORT(EncodeStochastic);
HWY_EXPORT(EncodeBlocks);

BlockStats simd_stats(const float* x, size_t n) {
  return OCTET_DISPATCH(Stats)(x, n);
}
void simd_encode_nearest(const detail::QuantTable& t, const float* x, size_t n,
                         const detail::BlockScale& s, uint8_t* codes) {
  OCTET_DISPATCH(EncodeNearest)(t, x, n, s, codes);
}
void simd_encode_stochastic(const detail::QuantTable& t, const float* x, size_t n,
                            const detail::BlockScale& s, uint64_t seed, uint64_t first_index,
                            uint8_t* codes) {
  OCTET_DISPATCH(EncodeStochastic)(t, x, n, s, seed, first_index, codes);
}
void simd_encode_blocks(const EncodeJob& job, uint64_t b0, uint64_t b1) {
  OCTET_DISPATCH(EncodeBlocks)(job, b0, b1);
}

}  // namespace codec
}  // namespace octet
#endif  // HWY_ONCE
