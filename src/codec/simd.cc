// The SIMD block kernels: the same integer bucket lookup as quant_math.h, a vector at a time, with
// Highway's runtime dispatch (one binary picks AVX-512, AVX2 or SSE4 at run time). Elements past
// the last full vector go through the scalar functions of quant_math.h.
#include <cstring>

#include "codec/block_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/simd.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace octet {
namespace codec {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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
void Decode(const detail::QuantTable& t, const uint8_t* codes, size_t n, float scale, float* out,
            bool accumulate) {
  scalar_kernels().decode(t, codes, n, scale, out, accumulate);
}
#else
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

BlockStats Stats(const float* x, size_t n) {
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
  const BlockStats tail = scalar_kernels().stats(x + i, n - i);
  s.max_value = tail.max_value > s.max_value ? tail.max_value : s.max_value;
  s.min_value = tail.min_value < s.min_value ? tail.min_value : s.min_value;
  s.has_nonfinite = s.has_nonfinite || tail.has_nonfinite;
  return s;
}

void EncodeNearest(const detail::QuantTable& t, const float* x, size_t n,
                   const detail::BlockScale& s, uint8_t* codes) {
  const DF df;
  const DI di;
  const DU du;
  const DC dc;
  const size_t N = hn::Lanes(df);
  const auto pre = hn::Set(df, s.pre), inv = hn::Set(df, s.inv);
  const bool rescale = s.pre != 1.0f;
  const auto abs_mask = hn::Set(di, static_cast<int32_t>(detail::kAbsMask));
  const auto lo = hn::Set(di, static_cast<int32_t>(t.lo_bits));
  const auto one_bits = hn::Set(di, static_cast<int32_t>(detail::kOneBits));
  const auto first_bucket = hn::Set(di, static_cast<int32_t>(t.lo_bits >> t.shift));
  const auto offset_mask = hn::Set(di, static_cast<int32_t>((1u << t.shift) - 1u));
  const auto thr_mask = hn::Set(di, static_cast<int32_t>((1u << detail::kThresholdBits) - 1u));
  const auto one = hn::Set(di, 1), zero = hn::Zero(di);
  const auto top = hn::Set(di, static_cast<int32_t>(t.top));
  const auto top_neg = hn::Set(di, static_cast<int32_t>(t.top - 1));
  const auto spare = hn::Set(di, static_cast<int32_t>(t.spare_code));
  const auto sign_code = hn::Set(di, static_cast<int32_t>(t.sign_code));
  const int shift = static_cast<int>(t.shift);
  const int32_t* lut = reinterpret_cast<const int32_t*>(t.lut);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    auto v = LoadFloats(x + i);
    if (rescale) v = hn::Mul(v, pre);
    const auto u = hn::BitCast(di, hn::Mul(v, inv));
    const auto a = hn::Min(hn::Max(hn::And(u, abs_mask), lo), one_bits);
    const auto idx = hn::Sub(hn::ShiftRightSame(a, shift), first_bucket);
    const auto entry = hn::GatherIndex(di, lut, idx);
    const auto base =
        hn::BitCast(di, hn::ShiftRight<detail::kThresholdBits>(hn::BitCast(du, entry)));
    const auto below = hn::Gt(hn::And(entry, thr_mask), hn::And(a, offset_mask));
    auto code = hn::Add(base, hn::IfThenZeroElse(below, one));
    if (t.is_signed) {
      const auto neg_level = hn::Min(code, top_neg);
      const auto neg_code =
          hn::IfThenElseZero(hn::Gt(neg_level, zero), hn::Or(neg_level, sign_code));
      const auto pos_code = hn::IfThenElse(hn::Eq(code, top), spare, code);
      code = hn::IfThenElse(hn::Lt(u, zero), neg_code, pos_code);
    }
    hn::StoreU(hn::DemoteTo(dc, code), dc, codes + i);
  }
  scalar_kernels().encode_nearest(t, x + i, n - i, s, codes + i);
}

void Decode(const detail::QuantTable& t, const uint8_t* codes, size_t n, float scale, float* out,
            bool accumulate) {
  const DF df;
  const DI di;
  const DC dc;
  const size_t N = hn::Lanes(df);
  const auto vscale = hn::Set(df, scale), zero = hn::Zero(df);
  size_t i = 0;
  if (accumulate) {
    for (; i + N <= n; i += N) {
      const auto idx = hn::PromoteTo(di, hn::LoadU(dc, codes + i));
      const auto v = hn::Add(hn::Mul(hn::GatherIndex(df, t.value, idx), vscale), zero);
      StoreFloats(hn::Add(LoadFloats(out + i), v), out + i);
    }
  } else {
    for (; i + N <= n; i += N) {
      const auto idx = hn::PromoteTo(di, hn::LoadU(dc, codes + i));
      StoreFloats(hn::Add(hn::Mul(hn::GatherIndex(df, t.value, idx), vscale), zero), out + i);
    }
  }
  scalar_kernels().decode(t, codes + i, n - i, scale, out + i, accumulate);
}

#endif  // HWY_TARGET == HWY_SCALAR

const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace HWY_NAMESPACE
}  // namespace codec
}  // namespace octet
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace octet {
namespace codec {

HWY_EXPORT(Stats);
HWY_EXPORT(EncodeNearest);
HWY_EXPORT(Decode);
HWY_EXPORT(TargetName);

namespace {
BlockStats DispatchStats(const float* x, size_t n) {
  return HWY_DYNAMIC_DISPATCH(Stats)(x, n);
}
void DispatchEncode(const detail::QuantTable& t, const float* x, size_t n,
                    const detail::BlockScale& s, uint8_t* codes) {
  HWY_DYNAMIC_DISPATCH(EncodeNearest)(t, x, n, s, codes);
}
void DispatchDecode(const detail::QuantTable& t, const uint8_t* codes, size_t n, float scale,
                    float* out, bool accumulate) {
  HWY_DYNAMIC_DISPATCH(Decode)(t, codes, n, scale, out, accumulate);
}
}  // namespace

const BlockKernels& simd_kernels() {
  static const BlockKernels k{DispatchStats, DispatchEncode, DispatchDecode};
  return k;
}

const char* simd_target_name() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

}  // namespace codec
}  // namespace octet
#endif  // HWY_ONCE
