// Per-block encode/decode primitives. Two implementations with identical results: the scalar
// reference (scalar.cc) and the Highway SIMD path with runtime dispatch (simd.cc, simd_encode.cc,
// simd_decode.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codec/payload.h"
#include "octet/detail/quant_math.h"

namespace octet {
namespace codec {

struct EncodeJob;  // encode_blocks.h

struct BlockStats {
  float max_value;  // largest finite element, 0 if none (or if all are negative)
  float min_value;  // smallest finite element, 0 if none (or if all are positive)
  bool has_nonfinite;
};

struct BlockKernels {
  BlockStats (*stats)(const float* x, size_t n);
  // One code per byte (also for 4-bit types, packed afterwards).
  void (*encode_nearest)(const detail::QuantTable& t, const float* x, size_t n,
                         const detail::BlockScale& s, uint8_t* codes);
  // Stochastic rounding (quant_math.h's encode_stochastic) of elements first_index, ...
  void (*encode_stochastic)(const detail::QuantTable& t, const float* x, size_t n,
                            const detail::BlockScale& s, uint64_t seed, uint64_t first_index,
                            uint8_t* codes);
  // codes: one per byte, n of them in consecutive blocks of `block` (the last may be shorter);
  // scales: the blocks' scales, 4 bytes each as in a payload (any alignment). accumulate:
  // out += decoded. A run of blocks in one call: the SIMD path keeps its tables in registers
  // from one block to the next.
  void (*decode)(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                 const uint8_t* scales, float* out, bool accumulate);
  // decode's overwrite, for outputs far larger than the caches: the same values, written with
  // non-temporal stores where the target has them (no read of each output line before it is
  // written, no eviction of what the caches hold). Those stores may stay in write-combining
  // buffers until fence().
  void (*decode_stream)(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                        const uint8_t* scales, float* out);
  void (*fence)();
  // Blocks [b0, b1) of an encode: statistics, scale and codes of each (encode_blocks.h's loop,
  // with the table's set-up done once for the run).
  void (*encode_blocks)(const EncodeJob& job, uint64_t b0, uint64_t b1);
};

// The scale of block b of a scales array as decode takes it.
inline float block_scale(const uint8_t* scales, size_t b) {
  return load_f32(scales + 4 * b);
}

const BlockKernels& scalar_kernels();
// Throw (once per call) where $OCTET_SIMD_TARGET names no target of this CPU and build.
const BlockKernels& simd_kernels();
const char* simd_target_name();
std::vector<std::string> simd_target_names();  // runnable here, best first

}  // namespace codec
}  // namespace octet
