// Decoded values by arithmetic instead of a table load per element, for the AVX2 decoder
// (simd_decode.cc): AVX2 has no permute wide enough to hold a 256-entry table, and this core issues
// only about 1.6 vector table loads a cycle, so the AVX2 loop decodes one vector in three by this
// plan on the multiply-add units while the other two load their values.
//
// For a signed 8-bit table, level L = code & 0x7f and slot s = the exponent field of float(2L + 1)
// modulo 8 (L = 0: slot 7; L in [2^i, 2^(i+1)): slot i). The unit magnitude is
//   K = fma(L, factor, offset[s])          an integer, exact in float,
//   y = fma(K, hi[s], K * lo[s])           K times the constant hi + lo (two floats), rounded once,
// 0 for L = 0 (slot 7 is all zeros). The dynamic tree's rung i holds 10^(i-6) (0.1 + 0.9 (2j + 1) /
// 2^(i+1)) = (18 L + 9 - 2^(i+4)) 10^(i-6) / (20 2^i) (tables.cc's formula, L = 2^i + j); the
// linear type's levels are L / 128. The plan is usable only if plan_value() gives every code's
// t.value bit for bit, which value_plan() checks when it builds the plan: the table stays the one
// source of truth, and a table the formulas do not reproduce exactly decodes by loads alone.
#pragma once

#include <cstdint>

#include "octet/detail/quant_math.h"

namespace octet {
namespace codec {

struct ValuePlan {
  bool usable;  // false: decode by table loads only
  float factor;
  float offset[8];
  float hi[8];
  float lo[8];
};

// Built once per table and cached (thread-safe; tables live as long as the process).
const ValuePlan& value_plan(const detail::QuantTable& t);

// Code c's unit value as the vector kernel computes it: +-y by the sign bit, and +1 for the spare
// code (the kernel takes y = -1 there and multiplies by the negated scale).
float plan_value(const ValuePlan& p, uint32_t code);

// |scale| for which the kernel's fused fma(y, +-scale, +0) equals the reference's value * scale +
// decode_zero(scale): finite, and large enough that no nonzero product underflows (the smallest
// nonzero magnitude of the planned types is above 2^-21), so that a fused and a separate rounding
// agree, zeros' signs included.
inline bool plan_scale_ok(float scale) {
  const float a = scale < 0 ? -scale : scale;
  return a >= 0x1p-100f && a <= 0x1.fffffep127f;
}

}  // namespace codec
}  // namespace octet
