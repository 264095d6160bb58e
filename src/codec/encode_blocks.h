// The block loop of an encode: each block's statistics, scale and codes. Every kernel set
// (scalar.cc, each SIMD target of simd_encode.cc) instantiates it with its own encoder, so that a
// run of blocks builds the encoder's tables once and calls the block steps directly: for the 4-bit
// types' blocks of 128 elements, that set-up and the indirect calls per block cost about as much
// as the codes themselves.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "codec/block_kernels.h"
#include "octet/codec.h"

namespace octet {
namespace codec {

// Blocks of one tensor to encode; threads encode disjoint ranges of its blocks.
struct EncodeJob {
  const detail::QuantTable* table;
  const CodecOptions* options;
  const float* in;
  uint64_t count;
  uint32_t block;
  int bits;
  uint8_t* scales;
  uint8_t* codes;
  std::vector<uint8_t>* special;  // 1 per block with NaN/Inf
  std::atomic<bool>* mixed_sign;  // unsigned type saw a block with both signs
};

// The OR of quant_math.h's zero_flags over x[0, n), as far as make_block_scale needs it: it
// stops at the first +0 (then the scale is +0 whatever else the block holds).
inline uint32_t zero_flags(const float* x, size_t n) {
  uint32_t flags = 0;
  for (size_t i = 0; i < n && !(flags & detail::kSawPositiveZero); ++i) {
    float v;
    std::memcpy(&v, x + i, sizeof v);  // x may be unaligned
    flags |= detail::zero_flags(v);
  }
  return flags;
}

// 4-bit codes: element 2j in the low nibble of byte j, 2j+1 in the high one. Loops over bytes so
// that the compiler vectorizes them.
inline void pack_nibbles(const uint8_t* nibbles, size_t n, uint8_t* packed) {
  for (size_t j = 0; j < n / 2; ++j)
    packed[j] = static_cast<uint8_t>(nibbles[2 * j] | (nibbles[2 * j + 1] << 4));
  if (n & 1) packed[n / 2] = nibbles[n - 1];
}

// Blocks [b0, b1) of the job. Encoder: `BlockStats Stats(const float* x, size_t n)` and
// `void Encode(const float* x, size_t n, const detail::BlockScale& s, uint64_t first_index,
// uint8_t* codes)` (first_index: the element's index in the tensor plus the options'
// index_offset, for stochastic rounding).
template <class Encoder>
void encode_block_range(const EncodeJob& job, uint64_t b0, uint64_t b1, Encoder& encoder) {
  std::vector<uint8_t> nibbles(job.bits == 4 ? job.block : 0);
  for (uint64_t b = b0; b < b1; ++b) {
    const uint64_t first = b * job.block;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(job.block, job.count - first));
    const float* x = job.in + first;
    const BlockStats st = encoder.Stats(x, n);
    (*job.special)[b] = st.has_nonfinite ? 1 : 0;
    if (!job.table->is_signed && st.min_value < 0.0f && st.max_value > 0.0f)
      job.mixed_sign->store(true, std::memory_order_relaxed);
    // The zeros' signs matter only to a block without a finite nonzero element (rare): only then
    // does the block get a second look.
    const bool no_nonzero = st.max_value == 0.0f && st.min_value == 0.0f;
    const detail::BlockScale s =
        detail::make_block_scale(st.max_value, st.min_value, no_nonzero ? zero_flags(x, n) : 0u);
    store_f32(job.scales + 4 * b, s.scale);
    uint8_t* dst = job.bits == 8 ? job.codes + first : nibbles.data();
    encoder.Encode(x, n, s, job.options->index_offset + first, dst);
    if (job.bits == 4) pack_nibbles(nibbles.data(), n, job.codes + first / 2);
  }
}

}  // namespace codec
}  // namespace octet
