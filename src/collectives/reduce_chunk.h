// The owner's reduction of one chunk, shared by allreduce and reduce_scatter: its own exact values
// plus every other rank's decoded contribution, in fp32 and in rank order, divided by the rank
// count with `average`. The edges of the float range (docs/algorithms.md, "Edges of the float
// range"):
//  * the sum starts from -0, IEEE's additive identity (x + -0 = x for every x, +0 included), so a
//    sum of -0 contributions is -0, as in fp32, and nothing else changes;
//  * an fp32 sum that overflows stays +-Inf (the codec carries it exactly);
//  * with `average`, an element whose sum overflowed (or is NaN) is recomputed as
//    sum_r (x_r / P) from the same contributions: the average of finite values is finite, while
//    non-finite contributions give what they give in fp32 (+Inf stays +Inf, +Inf - Inf is NaN).
//    Only chunks with such an element pay for it (one more decode of each contribution).
//
// The rule is reduce_contributions, over any decoder, so that the device kernel
// (kernels/codec_kernels.cuh, reduce_kernel) is tested against this very code.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "collectives/chunk_codec.h"

namespace octet {
namespace detail {

// decode(r, out, accumulate) writes (or adds) rank r's decoded n values into out; own: this
// rank's n values (any byte alignment, read with load_element).
template <typename Decode>
FloatBuffer reduce_contributions(int me, int p, const float* own, size_t n, bool average,
                                 const Decode& decode) {
  FloatBuffer sum(n, -0.0f);
  for (int r = 0; r < p; ++r) {
    if (r == me)
      add_elements(sum.data(), own, n);
    else
      decode(r, sum.data(), true);
  }
  if (!average || p == 1) return sum;
  std::vector<size_t> redo;  // elements whose sum is not finite
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(sum[i])) redo.push_back(i);
  const float ranks = static_cast<float>(p);
  for (float& v : sum) v /= ranks;
  if (redo.empty()) return sum;
  std::vector<float> average_of(redo.size(), -0.0f), term;
  for (int r = 0; r < p; ++r) {
    if (r == me) {
      for (size_t k = 0; k < redo.size(); ++k) average_of[k] += load_element(own, redo[k]) / ranks;
      continue;
    }
    term.resize(n);
    decode(r, term.data(), false);
    for (size_t k = 0; k < redo.size(); ++k) average_of[k] += term[redo[k]] / ranks;
  }
  for (size_t k = 0; k < redo.size(); ++k) sum[redo[k]] = average_of[k];
  return sum;
}

// own: this rank's n values (any byte alignment, read with load_element); contributions[r]
// (bytes[r] long): rank r's message for the same n elements, for every r != me.
FloatBuffer reduce_chunk(const ChunkCodec& codec, int me, int p, const float* own, size_t n,
                         const std::vector<ByteBuffer>& contributions,
                         const std::vector<size_t>& bytes, bool average);

}  // namespace detail
}  // namespace octet
