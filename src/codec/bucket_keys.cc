#include "codec/bucket_keys.h"

#include "codec/plan_cache.h"

namespace octet {
namespace codec {
namespace {

BucketKeys build_bucket_keys(const detail::QuantTable& t) {
  BucketKeys k;
  if (t.shift > 23 || t.lut_size == 0) return k;  // base + 1 must fit below the offset bits
  const uint32_t offset_mask = (1u << detail::kThresholdBits) - 1u;
  k.key.resize(t.lut_size);
  for (uint32_t b = 0; b < t.lut_size; ++b) {
    const uint32_t base = t.lut[b] >> detail::kThresholdBits;
    const uint32_t offset = t.lut[b] & offset_mask;  // in [1, 2^shift]
    k.key[b] = ((offset - 1u) << (32 - t.shift) | (base + 1u)) ^ kBucketKeyBias;
  }
  return k;
}

}  // namespace

const BucketKeys& bucket_keys(const detail::QuantTable& t) {
  return cached_plan<BucketKeys, build_bucket_keys>(t);
}

}  // namespace codec
}  // namespace octet
