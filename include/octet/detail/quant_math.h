// The one implementation of Octet's quantization math. Every path (the scalar reference, the
// Highway SIMD path in src/codec and the CUDA kernels in kernels/) calls or mirrors these inline
// functions, so that all of them produce the same bytes for the same input. Compile host code with
// -ffp-contract=off and device code with --fmad=false: a fused multiply-add rounds differently.
//
// Vocabulary (docs/codec.md has the full story):
//  * magnitude[0..top]: the ascending non-negative levels of a type, magnitude[0] = 0 and
//    magnitude[top] = 1 exactly;
//  * a signed type spends its "negative zero" code on +1, so negative values reach at most
//    magnitude[top - 1]; the block scale carries the sign of the block's largest-magnitude element,
//    which therefore always normalises to +1 and comes back exactly;
//  * thresholds are the midpoints between adjacent magnitudes, rounded up to a float, so
//    "nearest level, ties to the larger magnitude" becomes "count the thresholds <= |x|";
//  * that count is read from a bucket table indexed by the top bits of |x|'s float encoding, each
//    bucket holding at most one threshold: one table load and one integer compare per element.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define OCTET_HD __host__ __device__ __forceinline__
#else
#include <string.h>
#define OCTET_HD inline
#endif

namespace octet {
namespace detail {

constexpr uint32_t kOneBits = 0x3f800000u;  // 1.0f
constexpr uint32_t kAbsMask = 0x7fffffffu;
constexpr uint32_t kExpMask = 0x7f800000u;  // all-ones exponent: Inf or NaN
constexpr uint32_t kMaxLutEntries = 8192;
constexpr uint32_t kThresholdBits = 24;            // low bits of a bucket entry: threshold offset
constexpr float kDenormalRescale = 4294967296.0f;  // 2^32, exact
constexpr float kHugeRescale = 2.3283064365386963e-10f;  // 2^-32, exact
// Scales whose float exponent field is at least this (|scale| >= 2^126) have a denormal
// reciprocal, which would carry only ~21 significant bits: they are rescaled by 2^-32 first.
constexpr uint32_t kHugeScaleBits = 0x7e800000u;
constexpr uint32_t kNegativeZeroBits = 0x80000000u;
static_assert(kHugeRescale * kDenormalRescale == 1.0f, "2^-32 must be exact");

// A code table in the form every encoder and decoder uses. Plain data: it is copied as bytes to
// the GPU.
struct QuantTable {
  uint32_t bits;        // 8 or 4
  uint32_t is_signed;   // 1: sign-magnitude codes with the spare "-0" code meaning +1
  uint32_t top;         // index of magnitude 1.0 (128 for signed 8-bit, 255 unsigned, 8 for 4-bit)
  uint32_t spare_code;  // code of +1 for signed types (0x80 or 0x8)
  uint32_t sign_code;   // sign bit of a code (0x80 or 0x8); 0 for unsigned
  uint32_t lo_bits;     // magnitudes below this float (a power of two) are in bucket 0
  uint32_t shift;       // bucket = (bits(|x|) >> shift) - (lo_bits >> shift)
  uint32_t lut_size;
  float magnitude[256];          // ascending levels, [0] = 0, [top] = 1
  float value[256];              // decoded value of each code for a unit scale
  uint8_t value_bytes[4][256];   // byte k (little-endian) of value[c]: byte-shuffle decoders
  uint32_t lut[kMaxLutEntries];  // (level count below the bucket) << 24 | threshold offset
};

OCTET_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

OCTET_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

OCTET_HD bool is_finite_bits(uint32_t u) {
  return (u & kExpMask) != kExpMask;
}

// The special section's 2-bit class of an element (docs/wire-format.md): non-finite elements are
// coded 0 and their class restores them on decode.
enum SpecialClass : uint32_t {
  kClassFinite = 0,
  kClassNaN = 1,
  kClassPosInf = 2,
  kClassNegInf = 3
};
constexpr uint32_t kSpecialClassBits = 2;
constexpr uint32_t kNonFiniteCode = 0;  // the code a non-finite element gets

OCTET_HD uint32_t special_class(float v) {
  const uint32_t u = float_bits(v);
  if (is_finite_bits(u)) return kClassFinite;
  if ((u & 0x007fffffu) != 0) return kClassNaN;
  return (u >> 31) ? kClassNegInf : kClassPosInf;
}

// The bits of the value a non-finite class decodes to; the NaN is the canonical quiet NaN.
OCTET_HD uint32_t special_value_bits(uint32_t cls) {
  return cls == kClassNaN ? 0x7fc00000u : cls == kClassPosInf ? 0x7f800000u : 0xff800000u;
}

// The class of element i (0-based within its block) in a special entry's class bytes.
OCTET_HD uint32_t special_class_at(const uint8_t* classes, uint32_t i) {
  return (classes[i / 4] >> (kSpecialClassBits * (i % 4))) & 3u;
}

// The rules a payload's body must meet before anything is decoded from it (docs/wire-format.md),
// shared by the host's validate_body and the device's validate_kernel.
// A special entry names block b after the entry of block `previous` (-1 for the first): the
// indices ascend and stay below the block count.
OCTET_HD bool special_index_is_valid(uint32_t b, int64_t previous, uint64_t blocks) {
  return static_cast<int64_t>(b) > previous && b < blocks;
}
// A special entry's classes name no element past the tensor's end (block b of block_size elements,
// count elements in all).
OCTET_HD bool special_tail_is_valid(const uint8_t* classes, uint32_t b, uint32_t block_size,
                                    uint64_t count) {
  const uint64_t left = count - uint64_t{b} * block_size;
  for (uint64_t i = left < block_size ? left : block_size; i < block_size; ++i)
    if (special_class_at(classes, static_cast<uint32_t>(i)) != kClassFinite) return false;
  return true;
}
// A 4-bit payload of an odd count leaves the last byte's high nibble zero.
OCTET_HD bool padding_is_valid(int bits, uint64_t count, uint8_t last_code_byte) {
  return bits != 4 || (count & 1) == 0 || (last_code_byte >> 4) == 0;
}

// Per-block normalisation. The scale is the block's finite element of largest magnitude, with its
// sign (ties between +m and -m pick +m); a zero scale means an all-zero (or all non-finite) block.
// Its sign is that of the block's zeros when they all agree: -0 when the block holds a -0 and no
// +0 (so that it decodes to -0, see decode_zero), else +0.
struct BlockScale {
  float scale;  // what the payload stores
  float pre;    // 1, 2^32 when |scale| is denormal, 2^-32 when |scale| >= 2^126 (1/scale denormal)
  float inv;    // 1 / (scale * pre), a normal float, or 0 for a zero block
};

// The zeros of a block, for the sign of an all-zero block's scale: OR of zero_flags() over its
// elements (only read when the block has no finite nonzero element, so a caller may compute it only
// then).
constexpr uint32_t kSawPositiveZero = 1;
constexpr uint32_t kSawNegativeZero = 2;

OCTET_HD uint32_t zero_flags(float v) {
  const uint32_t u = float_bits(v);
  return u == 0u ? kSawPositiveZero : u == kNegativeZeroBits ? kSawNegativeZero : 0u;
}

OCTET_HD BlockScale make_block_scale(float max_value, float min_value, uint32_t zeros) {
  // max_value/min_value: the largest and smallest finite elements (0 if none).
  float scale = (max_value >= -min_value) ? max_value : min_value;
  BlockScale s;
  if (scale == 0.0f) {
    s.scale = zeros == kSawNegativeZero ? -0.0f : 0.0f;
    s.pre = 1.0f;
    s.inv = 0.0f;
    return s;
  }
  s.scale = scale;
  const uint32_t exponent = float_bits(scale) & kExpMask;
  // Powers of two: scale * pre and x * pre are exact (x * 2^-32 only loses bits of elements
  // below 2^-94, which are 2^-220 of the scale and quantize to 0 either way).
  s.pre = exponent == 0 ? kDenormalRescale : exponent >= kHugeScaleBits ? kHugeRescale : 1.0f;
  s.inv = 1.0f / (scale * s.pre);
  return s;
}

OCTET_HD float normalize(float x, const BlockScale& s) {
  return (x * s.pre) * s.inv;
}

// Index into magnitude[] of the level nearest to |xn| (ties to the larger magnitude), for
// |xn| <= 1; larger inputs (and NaN) clamp to the top level.
OCTET_HD uint32_t nearest_level(const QuantTable& t, uint32_t abs_bits) {
  uint32_t a = abs_bits < t.lo_bits ? t.lo_bits : abs_bits;
  a = a > kOneBits ? kOneBits : a;
  const uint32_t entry = t.lut[(a >> t.shift) - (t.lo_bits >> t.shift)];
  const uint32_t offset = a & ((1u << t.shift) - 1u);
  return (entry >> kThresholdBits) + (offset >= (entry & ((1u << kThresholdBits) - 1u)) ? 1u : 0u);
}

// Level index and sign -> code. Negative values cannot use the top level (its code is +1).
OCTET_HD uint32_t level_to_code(const QuantTable& t, uint32_t level, bool negative) {
  if (!t.is_signed) return level;
  if (negative) {
    level = level > t.top - 1 ? t.top - 1 : level;
    return level == 0 ? 0u : (t.sign_code | level);
  }
  return level == t.top ? t.spare_code : level;
}

// Round-to-nearest code of an already normalised value.
OCTET_HD uint32_t encode_nearest(const QuantTable& t, float xn) {
  const uint32_t u = float_bits(xn);
  return level_to_code(t, nearest_level(t, u & kAbsMask), (u >> 31) != 0);
}

// Counter-based random bits: the same stream on every device, addressed by (seed, element index),
// so any chunking of a tensor draws the same numbers. 32-bit integer arithmetic only (a vector
// multiply of 32-bit lanes on CPUs, a plain IMAD on GPUs). hash32 is a bijection with full
// avalanche (Wellons' "lowbias32").
OCTET_HD uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// The part of the stream address that is constant over 2^32 consecutive elements.
OCTET_HD uint32_t stream_key(uint64_t seed, uint32_t index_high) {
  return hash32(static_cast<uint32_t>(seed) ^
                hash32(static_cast<uint32_t>(seed >> 32) ^ hash32(index_high + 0x9e3779b9u)));
}

// Uniform in [0, 1) with 24 random bits (exact in fp32).
OCTET_HD float uniform_from_key(uint32_t key, uint32_t index_low) {
  return static_cast<float>(hash32(index_low ^ key) >> 8) * (1.0f / 16777216.0f);
}

OCTET_HD float uniform01(uint64_t seed, uint64_t index) {
  return uniform_from_key(stream_key(seed, static_cast<uint32_t>(index >> 32)),
                          static_cast<uint32_t>(index));
}

// Unbiased stochastic rounding between the two levels around |xn|: the upper one is chosen with
// probability (|xn| - lower) / (upper - lower), up to fp32 rounding of that ratio.
OCTET_HD uint32_t encode_stochastic(const QuantTable& t, float xn, uint64_t seed, uint64_t index) {
  const uint32_t u = float_bits(xn);
  const bool negative = (u >> 31) != 0;
  const uint32_t abs_bits = (u & kAbsMask) > kOneBits ? kOneBits : (u & kAbsMask);
  const float a = bits_float(abs_bits);
  const uint32_t max_level = (t.is_signed && negative) ? t.top - 1 : t.top;
  uint32_t level = nearest_level(t, abs_bits);
  level = level > max_level ? max_level : level;
  const uint32_t lower = (t.magnitude[level] <= a) ? level : level - 1;
  if (lower >= max_level) return level_to_code(t, max_level, negative);
  const float lo = t.magnitude[lower];
  const float gap = t.magnitude[lower + 1] - lo;
  const float r = uniform01(seed, index);
  const uint32_t chosen = (a - lo > r * gap) ? lower + 1 : lower;
  return level_to_code(t, chosen, negative);
}

// The term decode adds to value * scale: +0, which turns the -0 of a zero code times a negative
// scale into +0 (a zero decodes to +0), except in a block whose scale is -0 (a block of -0, see
// make_block_scale), whose elements decode to -0. Constant per block.
OCTET_HD float decode_zero(float scale) {
  return float_bits(scale) == kNegativeZeroBits ? -0.0f : 0.0f;
}

// Decoded value: code value times the block scale, plus decode_zero(scale).
OCTET_HD float decode_value(const QuantTable& t, uint32_t code, float scale) {
  return t.value[code] * scale + decode_zero(scale);
}

}  // namespace detail
}  // namespace octet
