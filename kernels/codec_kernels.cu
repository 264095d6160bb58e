// Launchers of the codec kernels (the kernels are in codec_kernels.cuh).
#include "codec_kernels.cuh"

namespace octet {
namespace cuda_detail {
namespace {

int capped_grid(uint64_t wanted, int cap) {
  return static_cast<int>(wanted < static_cast<uint64_t>(cap) ? wanted : cap);
}

}  // namespace

namespace {

// Launches a kernel that takes a codec block per CUDA block at a time (blocks larger than a tile):
// as many CUDA blocks as fit at once, so that each loads the table into shared memory only once;
// one thread per 4 elements of a codec block, in whole warps, since small blocks (dynamic4's 128)
// would otherwise leave most threads idle.
template <typename Kernel, typename... Args>
cudaError_t launch_over_blocks(Kernel kernel, const EncodeArgs& a, cudaStream_t stream,
                               const Args&... args) {
  if (a.blocks == 0) return cudaSuccess;
  const uint32_t per_block = a.block / 4;
  const int threads = static_cast<int>(per_block < 32         ? 32
                                       : per_block > kThreads ? kThreads
                                                              : per_block);
  int per_sm = 0;
  const cudaError_t e =
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, a.table_bytes);
  if (e != cudaSuccess) return e;
  const int grid = capped_grid(a.blocks, (per_sm > 0 ? per_sm : 1) * a.sms);
  kernel<<<grid, threads, a.table_bytes, stream>>>(args...);
  return cudaGetLastError();
}

// A tile kernel (codec blocks of a tile or less): whole CUDA blocks of warps, as many as fit at
// once, each warp looping over tiles.
template <typename Kernel, typename... Args>
cudaError_t launch_over_tiles(Kernel kernel, const EncodeArgs& a, cudaStream_t stream,
                              const Args&... args) {
  if (a.count == 0) return cudaSuccess;
  int per_sm = 0;
  const cudaError_t e =
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, a.table_bytes);
  if (e != cudaSuccess) return e;
  const uint64_t tiles = (a.count + kTileElements - 1) / kTileElements;
  const int grid = capped_grid((tiles + kWarps - 1) / kWarps, (per_sm > 0 ? per_sm : 1) * a.sms);
  kernel<<<grid, kThreads, a.table_bytes, stream>>>(args...);
  return cudaGetLastError();
}

}  // namespace

// Zeroes the encode's summary word, if any, before its kernel ORs flags into it.
cudaError_t clear_summary(const EncodeArgs& a, cudaStream_t stream) {
  return a.summary ? cudaMemsetAsync(a.summary, 0, sizeof *a.summary, stream) : cudaSuccess;
}

cudaError_t launch_encode(const EncodeArgs& a, cudaStream_t stream) {
  cudaError_t e = clear_summary(a, stream);
  if (e != cudaSuccess) return e;
  visit_encode_shape(a.block, [&](auto shape) {
    constexpr int q = decltype(shape)::value;
    if constexpr (q < 0)
      e = launch_over_blocks(a.stochastic ? encode_kernel<true> : encode_kernel<false>, a, stream,
                             a);
    else
      e = launch_over_tiles(
          a.stochastic ? encode_tile_kernel<true, q> : encode_tile_kernel<false, q>, a, stream, a);
  });
  return e;
}

// Codec blocks of a tile or less: the reduction, then the tile encode gated by the same
// statuses. It is faster than the fused kernel of a CUDA block per codec block, which larger
// blocks keep (H200, 4 ranks, 256 MiB: 741-764 against 952 us for 8-bit, 792 against 872 for
// 4-bit; 32 MiB: 107-110 against 120-128). A tile form of the fused kernel was slower still:
// holding 16 rows of the reduction it spilled (1.7-2.2 times the two kernels), reading the
// block twice it took 1287-1296 us.
cudaError_t launch_reduce_encode(const ReduceArgs& r, const EncodeArgs& e, cudaStream_t stream) {
  if (e.in != r.out || e.count != r.count || e.block != r.block || e.bits != r.bits)
    return cudaErrorInvalidValue;
  if (tile_shape_of(e.block) >= 0) {
    const cudaError_t status = launch_reduce(r, stream);
    if (status != cudaSuccess) return status;
    return launch_encode(gated_by(e, r), stream);
  }
  const cudaError_t status = clear_summary(e, stream);
  if (status != cudaSuccess) return status;
  return launch_over_blocks(e.stochastic ? reduce_encode_kernel<true> : reduce_encode_kernel<false>,
                            e, stream, r, e);
}

cudaError_t launch_write_special(const SpecialArgs& a, cudaStream_t stream) {
  if (a.specials == 0) return cudaSuccess;
  special_kernel<<<capped_grid(a.specials, 65535), kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

cudaError_t launch_finish(const FinishArgs& f, const SpecialArgs& s, cudaStream_t stream) {
  compact_kernel<<<1, kThreads, 0, stream>>>(f);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  if (f.blocks > 0) {
    // The count is only known on the device: up to 1024 CUDA blocks loop over however many
    // entries there are (most calls have none, and the extra blocks return at once).
    special_kernel<<<capped_grid(f.blocks, 1024), kThreads, 0, stream>>>(s);
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  header_kernel<<<1, 32, 0, stream>>>(f);
  return cudaGetLastError();
}

cudaError_t launch_validate(const ValidateArgs& a, cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(a.status, 0, sizeof *a.status, stream);
  if (e != cudaSuccess) return e;
  const uint64_t blocks = a.blocks > 0 ? a.blocks : 1;
  validate_body_kernel<<<capped_grid((blocks + kThreads - 1) / kThreads, 1024), kThreads, 0,
                         stream>>>(a);
  e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  validate_kernel<<<1, 32, 0, stream>>>(a);
  return cudaGetLastError();
}

cudaError_t launch_decode(const DecodeArgs& a, cudaStream_t stream) {
  if (a.count == 0) return cudaSuccess;
  const uint64_t groups = (a.count + 3) / 4;
  const uint64_t per_block = uint64_t{kThreads} * kDecodeUnroll;
  decode_kernel<<<capped_grid((groups + per_block - 1) / per_block, 16 * a.sms), kThreads, 0,
                  stream>>>(a);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  if (a.specials_at != nullptr) {  // the count is on the device: grid-stride over it
    const uint64_t blocks = (a.count + a.block - 1) / a.block;
    apply_special_kernel<<<capped_grid(blocks, 1024), kThreads, 0, stream>>>(a);
  } else if (a.specials > 0) {
    apply_special_kernel<<<capped_grid(a.specials, 65535), kThreads, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

cudaError_t launch_reduce(const ReduceArgs& a, cudaStream_t stream) {
  if (a.count == 0) return cudaSuccess;
  const uint64_t groups = (a.count + 3) / 4;
  reduce_kernel<<<capped_grid((groups + kThreads - 1) / kThreads, 16 * a.sms), kThreads, 0,
                  stream>>>(a);
  return cudaGetLastError();
}

}  // namespace cuda_detail
}  // namespace octet
