// quant_math.h's bucket table rewritten for encoders that look entries up with scalar loads
// (simd_encode.cc, AVX2): a vector gather is slow on AMD, and there the lookup, not the arithmetic,
// bounds the encoder, so each entry is laid out to decide its lane with one compare.
//
// Entry b of the bucket table holds the levels below the bucket (base) and the offset of the
// bucket's threshold (2^shift when it has none). Here the same bucket holds
//   key = ((offset - 1) << (32 - shift) | (base + 1)) ^ 2^31,
// and for an |xn| = a in it (a clamped as nearest_level clamps it),
//   probe = (a << (32 - shift)) ^ 2^31      (a's offset in the bucket, in the top bits),
// so that, as signed integers, key > probe exactly when a's offset is below the threshold's (the
// low bits, base + 1 >= 1, break the tie offset - 1 == a's offset in favour of "below"), and
//   level = (key & kBucketKeyLevelMask) + (key > probe ? -1 : 0),
// which is nearest_level's base + (offset >= threshold offset). base + 1 <= 256 fits below the
// offset bits since shift <= 23.
#pragma once

#include <cstdint>
#include <vector>

#include "octet/detail/quant_math.h"

namespace octet {
namespace codec {

constexpr uint32_t kBucketKeyLevelMask = 0x1ff;
constexpr uint32_t kBucketKeyBias = 0x80000000u;

struct BucketKeys {
  std::vector<uint32_t> key;  // one per entry of the table's lut (lut_size); empty: unusable
};

// Built once per table and cached (thread-safe; tables live as long as the process).
const BucketKeys& bucket_keys(const detail::QuantTable& t);

// The level of a = |xn|'s bits (already clamped to [lo_bits, 1.0f's bits]) as the SIMD encoder
// computes it from the keys, for the tests.
inline uint32_t bucket_key_level(const BucketKeys& k, const detail::QuantTable& t, uint32_t a) {
  const uint32_t key = k.key[(a >> t.shift) - (t.lo_bits >> t.shift)];
  const int32_t probe = static_cast<int32_t>((a << (32 - t.shift)) ^ kBucketKeyBias);
  return (key & kBucketKeyLevelMask) - (static_cast<int32_t>(key) > probe ? 1u : 0u);
}

}  // namespace codec
}  // namespace octet
