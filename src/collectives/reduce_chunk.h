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
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/chunk_codec.h"

namespace octet {
namespace detail {

// own: this rank's n values (any byte alignment, read with load_element); contributions[r]
// (bytes[r] long): rank r's message for the same n elements, for every r != me.
std::vector<float> reduce_chunk(const ChunkCodec& codec, int me, int p, const float* own, size_t n,
                                const std::vector<ByteBuffer>& contributions,
                                const std::vector<size_t>& bytes, bool average);

}  // namespace detail
}  // namespace octet
