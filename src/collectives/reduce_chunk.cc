#include "collectives/reduce_chunk.h"

#include <cmath>

namespace octet {
namespace detail {

std::vector<float> reduce_chunk(const ChunkCodec& codec, int me, int p, const float* own, size_t n,
                                const std::vector<ByteBuffer>& contributions,
                                const std::vector<size_t>& bytes, bool average) {
  std::vector<float> sum(n, -0.0f);
  for (int r = 0; r < p; ++r) {
    if (r == me)
      add_elements(sum.data(), own, n);
    else
      codec.decode(contributions[r], bytes[r], sum.data(), n, true, r);
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
    codec.decode(contributions[r], bytes[r], term.data(), n, false, r);
    for (size_t k = 0; k < redo.size(); ++k) average_of[k] += term[redo[k]] / ranks;
  }
  for (size_t k = 0; k < redo.size(); ++k) sum[redo[k]] = average_of[k];
  return sum;
}

}  // namespace detail
}  // namespace octet
