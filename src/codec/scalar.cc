// The scalar reference: the definition every other path is tested against.
#include <cstring>

#include "codec/block_kernels.h"
#include "codec/encode_blocks.h"

namespace octet {
namespace codec {
namespace {

using detail::float_bits;

BlockStats scalar_stats(const float* x, size_t n) {
  BlockStats s{0.0f, 0.0f, false};
  for (size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, x + i, sizeof v);  // x may be unaligned
    if (!detail::is_finite_bits(float_bits(v))) {
      s.has_nonfinite = true;
      continue;
    }
    s.max_value = v > s.max_value ? v : s.max_value;
    s.min_value = v < s.min_value ? v : s.min_value;
  }
  return s;
}

void scalar_encode(const detail::QuantTable& t, const float* x, size_t n,
                   const detail::BlockScale& s, uint8_t* codes) {
  for (size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, x + i, sizeof v);
    codes[i] = static_cast<uint8_t>(detail::encode_nearest(t, detail::normalize(v, s)));
  }
}

void scalar_decode(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                   const uint8_t* scales, float* out, bool accumulate) {
  for (size_t i = 0; i < n; ++i) {
    float v = detail::decode_value(t, codes[i], block_scale(scales, i / block));
    if (accumulate) {
      float o;
      std::memcpy(&o, out + i, sizeof o);
      v = o + v;
    }
    std::memcpy(out + i, &v, sizeof v);
  }
}

void scalar_encode_stochastic(const detail::QuantTable& t, const float* x, size_t n,
                              const detail::BlockScale& s, uint64_t seed, uint64_t first_index,
                              uint8_t* codes) {
  for (size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, x + i, sizeof v);
    codes[i] = static_cast<uint8_t>(
        detail::encode_stochastic(t, detail::normalize(v, s), seed, first_index + i));
  }
}

void scalar_decode_stream(const detail::QuantTable& t, const uint8_t* codes, size_t n,
                          uint32_t block, const uint8_t* scales, float* out) {
  scalar_decode(t, codes, n, block, scales, out, false);
}

void no_fence() {}

struct ScalarEncoder {
  const detail::QuantTable& t;
  const CodecOptions& o;
  BlockStats Stats(const float* x, size_t n) const { return scalar_stats(x, n); }
  void Encode(const float* x, size_t n, const detail::BlockScale& s, uint64_t first_index,
              uint8_t* codes) const {
    if (o.stochastic)
      scalar_encode_stochastic(t, x, n, s, o.seed, first_index, codes);
    else
      scalar_encode(t, x, n, s, codes);
  }
};

void scalar_encode_blocks(const EncodeJob& job, uint64_t b0, uint64_t b1) {
  ScalarEncoder e{*job.table, *job.options};
  encode_block_range(job, b0, b1, e);
}

}  // namespace

const BlockKernels& scalar_kernels() {
  static const BlockKernels k{scalar_stats,        scalar_encode,        scalar_encode_stochastic,
                              scalar_decode,       scalar_decode_stream, no_fence,
                              scalar_encode_blocks};
  return k;
}

}  // namespace codec
}  // namespace octet
