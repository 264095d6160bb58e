#include "collectives/reduce_chunk.h"

namespace octet {
namespace detail {

FloatBuffer reduce_chunk(const ChunkCodec& codec, int me, int p, const float* own, size_t n,
                         const std::vector<ByteBuffer>& contributions,
                         const std::vector<size_t>& bytes, bool average) {
  return reduce_contributions(me, p, own, n, average, [&](int r, float* out, bool accumulate) {
    codec.decode(contributions[r], bytes[r], out, n, accumulate, r);
  });
}

}  // namespace detail
}  // namespace octet
