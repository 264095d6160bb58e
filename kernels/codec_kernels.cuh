// Device code of the codec kernels, included by codec_kernels.cu (nvcc) and by the host emulation
// test (tests/cuda/kernel_emulation_test.cc, g++), which runs these very functions on CPU threads.
// The math is quant_math.h's, called as is; this file only decides which thread handles which
// elements. Compiled with --fmad=false: a fused multiply-add would round normalize() and
// decode_value() differently from the CPU.
//
// Work split: a thread handles a group of 4 consecutive elements (one float4 load and one 32-bit
// code store when aligned). Codec blocks are multiples of 64 elements, so a group never straddles
// two blocks; only the tensor's last group can be short.
#pragma once

#include <cstddef>
#include <type_traits>

#include "codec_kernels.h"

// Full unrolling where nvcc compiles (the emulation's g++ does without).
#ifdef __CUDACC__
#define OCTET_UNROLL _Pragma("unroll")
#define OCTET_PRAGMA(x) _Pragma(#x)
#define OCTET_UNROLL_BY(n) OCTET_PRAGMA(unroll n)
#else
#define OCTET_UNROLL
#define OCTET_UNROLL_BY(n)
#endif

// The dynamic shared memory of a kernel (the emulation supplies its own).
#ifndef OCTET_DYNAMIC_SHARED
#define OCTET_DYNAMIC_SHARED(name) extern __shared__ __align__(16) uint8_t name[]
#endif

namespace octet {
namespace cuda_detail {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
// Bytes of a QuantTable before the lut: header fields, magnitude[] and value[].
constexpr uint32_t kTablePrefix = offsetof(detail::QuantTable, lut);

__device__ __forceinline__ uint32_t min_count(uint64_t a, uint64_t b) {
  return static_cast<uint32_t>(a < b ? a : b);
}

// Elements of the group of 4 at element i of a tensor of count (0 past its end).
__device__ __forceinline__ uint32_t group_size(uint64_t count, uint64_t i) {
  return i < count ? min_count(4, count - i) : 0u;
}

// Largest power of two (<= 16) that divides the address: which vector accesses are allowed.
__device__ __forceinline__ int alignment_of(const void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  return (u % 16 == 0) ? 16 : (u % 4 == 0) ? 4 : (u % 2 == 0) ? 2 : 1;
}

__device__ __forceinline__ uint32_t load_u32(const uint8_t* p, int align) {
  if (align >= 4) return *reinterpret_cast<const uint32_t*>(p);
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

__device__ __forceinline__ void store_u32(uint8_t* p, uint32_t v, int align) {
  if (align >= 4) {
    *reinterpret_cast<uint32_t*>(p) = v;
    return;
  }
  for (int k = 0; k < 4; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
}

// Loads the m (1..4) elements of the group at p (p 16-aligned iff the tensor is).
__device__ __forceinline__ void load_group(const float* p, uint32_t m, int align, float v[4]) {
  if (m == 4 && align == 16) {
    const float4 q = *reinterpret_cast<const float4*>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    return;
  }
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(p);
  for (uint32_t k = 0; k < 4; ++k)  // not k < m: a constant trip count keeps v in registers
    if (k < m) v[k] = detail::bits_float(load_u32(bytes + 4 * k, align));
}

__device__ __forceinline__ void store_group(float* p, uint32_t m, int align, const float v[4]) {
  if (m == 4 && align == 16) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
    return;
  }
  uint8_t* bytes = reinterpret_cast<uint8_t*>(p);
  for (uint32_t k = 0; k < m; ++k) store_u32(bytes + 4 * k, detail::float_bits(v[k]), align);
}

// Copies the first `bytes` (a multiple of 4) of the table into shared memory.
__device__ void copy_table(uint8_t* smem, const detail::QuantTable* table, uint32_t bytes) {
  const uint32_t* src = reinterpret_cast<const uint32_t*>(table);
  uint32_t* dst = reinterpret_cast<uint32_t*>(smem);
  for (uint32_t i = threadIdx.x; i < bytes / 4; i += blockDim.x) dst[i] = src[i];
}

// Finite max and min (both start at +0, as in the CPU's BlockStats), a non-finite flag and the
// zeros seen (quant_math.h's zero_flags, for the sign of an all-zero block's scale; the CPU looks
// at them only in such blocks, the result is the same). With strict comparisons from +0 and ORs
// the result does not depend on the reduction order.
struct Stats {
  float max_value;
  float min_value;
  uint32_t nonfinite;
  uint32_t zeros;
};

__device__ __forceinline__ Stats combine(Stats a, const Stats& b) {
  a.max_value = b.max_value > a.max_value ? b.max_value : a.max_value;
  a.min_value = b.min_value < a.min_value ? b.min_value : a.min_value;
  a.nonfinite |= b.nonfinite;
  a.zeros |= b.zeros;
  return a;
}

// Stats over the lanes of a warp whose lane index differs in the bits below `width` (a power of
// two, at most 32): every such lane ends with the combined stats.
template <int kWidth>
__device__ __forceinline__ Stats warp_reduce(Stats s) {
  for (int d = kWidth / 2; d > 0; d /= 2) {
    Stats o;
    o.max_value = __shfl_xor_sync(0xffffffffu, s.max_value, d);
    o.min_value = __shfl_xor_sync(0xffffffffu, s.min_value, d);
    const uint32_t bits = __shfl_xor_sync(0xffffffffu, s.nonfinite << 2 | s.zeros, d);
    o.nonfinite = bits >> 2;
    o.zeros = bits & 3u;
    s = combine(s, o);
  }
  return s;
}

// This lane's stats of the m valid elements of one group.
__device__ __forceinline__ Stats group_stats(const float v[4], uint32_t m) {
  Stats s{0.0f, 0.0f, 0u, 0u};
  for (uint32_t k = 0; k < 4; ++k)
    if (k < m) {
      if (!detail::is_finite_bits(detail::float_bits(v[k]))) {
        s.nonfinite = 1;
        continue;
      }
      s = combine(s, Stats{v[k], v[k], 0u, detail::zero_flags(v[k])});
    }
  return s;
}

// This thread's part of the stats of a codec block of n elements; load(i, m, v) gives the m
// values of the group at i (the plain input, or the reduction of the fused kernel).
template <typename Load>
__device__ Stats thread_stats(uint32_t n, const Load& load) {
  Stats s{0.0f, 0.0f, 0u, 0u};
  for (uint32_t i = 4 * threadIdx.x; i < n; i += 4 * blockDim.x) {
    const uint32_t m = min(4u, n - i);
    float v[4];
    load(i, m, v);
    s = combine(s, group_stats(v, m));
  }
  return s;
}

// Reduces over the CUDA block; the result is valid in thread 0 only.
__device__ Stats block_reduce(Stats s, Stats* partial) {
  s = warp_reduce<32>(s);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0)
    for (uint32_t w = 1; w < blockDim.x / 32; ++w) s = combine(s, partial[w]);
  return s;
}

// The flags of codec block b, and their OR in *a.summary (rare: NaN/Inf or mixed signs).
__device__ __forceinline__ void store_flags(const EncodeArgs& a, uint64_t b, bool nonfinite,
                                            bool mixed) {
  const uint32_t f =
      (nonfinite ? uint32_t{kFlagNonFinite} : 0u) | (mixed ? uint32_t{kFlagMixedSign} : 0u);
  a.flags[b] = static_cast<uint8_t>(f);
  if (f != 0 && a.summary != nullptr) atomicOr(a.summary, f);
}

// Codec block b's scale s in the payload and its flags (mixed signs only matter to unsigned
// types).
__device__ __forceinline__ void store_block(const EncodeArgs& a, const detail::QuantTable& t,
                                            uint64_t b, const Stats& st,
                                            const detail::BlockScale& s) {
  store_u32(a.scales + 4 * b, detail::float_bits(s.scale), alignment_of(a.scales + 4 * b));
  const bool mixed = !t.is_signed && st.min_value < 0.0f && st.max_value > 0.0f;
  store_flags(a, b, st.nonfinite != 0, mixed);
}

// Thread 0: the block's scale, stored in the payload and broadcast through shared memory.
__device__ void finish_scale(const EncodeArgs& a, const detail::QuantTable& t, uint64_t b,
                             const Stats& st, detail::BlockScale* shared_scale) {
  *shared_scale = detail::make_block_scale(st.max_value, st.min_value, st.zeros);
  store_block(a, t, b, st, *shared_scale);
}

// False when validate_kernel rejected one of the other ranks' payloads (statuses: `ranks`
// verdicts in device memory, or null: known valid).
__device__ __forceinline__ bool others_valid(const uint32_t* statuses, int ranks, int me) {
  if (statuses == nullptr) return true;
  for (int r = 0; r < ranks; ++r)
    if (r != me && statuses[r] != kPayloadOk) return false;
  return true;
}

// e, to encode the result of reduction r: it writes nothing when r rejected a contribution.
inline EncodeArgs gated_by(EncodeArgs e, const ReduceArgs& r) {
  e.gate = r.statuses;
  e.gate_ranks = r.ranks;
  e.gate_me = r.me;
  return e;
}

// False when the reduction whose result this encode was given rejected a contribution (so it
// wrote nothing, and the encode must not either).
__device__ __forceinline__ bool gate_open(const EncodeArgs& a) {
  return others_valid(a.gate, a.gate_ranks, a.gate_me);
}

// Code of one element: non-finite elements get kNonFiniteCode, as on the CPU. kPlain: the block
// holds no NaN/Inf and its scale needs no rescaling (s.pre == 1, so normalize's x * 1 is exact).
template <bool kStochastic, bool kPlain = false>
__device__ __forceinline__ uint32_t element_code(const detail::QuantTable& t, float v,
                                                 const detail::BlockScale& s, uint64_t seed,
                                                 uint64_t index) {
  if (!kPlain && !detail::is_finite_bits(detail::float_bits(v))) return detail::kNonFiniteCode;
  const float xn = kPlain ? v * s.inv : detail::normalize(v, s);
  return kStochastic ? detail::encode_stochastic(t, xn, seed, index)
                     : detail::encode_nearest(t, xn);
}

// Stores the m codes of the group of element i (relative to a block-aligned codes pointer).
__device__ __forceinline__ void store_codes(uint8_t* codes, uint64_t i, uint32_t m, int bits,
                                            const uint32_t c[4]) {
  if (bits == 8) {
    uint8_t* dst = codes + i;
    const int align = alignment_of(dst);
    if (m == 4 && align >= 4) {
      store_u32(dst, c[0] | c[1] << 8 | c[2] << 16 | c[3] << 24, align);
      return;
    }
    for (uint32_t k = 0; k < 4; ++k)
      if (k < m) dst[k] = static_cast<uint8_t>(c[k]);
    return;
  }
  // Two codes a byte, low nibble first; a missing high nibble (odd count) is zero.
  uint8_t* dst = codes + i / 2;
  dst[0] = static_cast<uint8_t>(c[0] | (m > 1 ? c[1] << 4 : 0u));
  if (m > 2) dst[1] = static_cast<uint8_t>(c[2] | (m > 3 ? c[3] << 4 : 0u));
}

// Codes of the m values v of the group of element i, stored.
template <bool kStochastic, bool kPlain = false>
__device__ __forceinline__ void quantize_group(const EncodeArgs& a, const detail::QuantTable& t,
                                               uint64_t i, uint32_t m, const float v[4],
                                               const detail::BlockScale& s) {
  uint32_t c[4] = {0, 0, 0, 0};
  for (uint32_t k = 0; k < 4; ++k)
    if (k < m) c[k] = element_code<kStochastic, kPlain>(t, v[k], s, a.seed, a.index_offset + i + k);
  store_codes(a.codes, i, m, a.bits, c);
}

template <bool kStochastic>
__device__ void quantize_block(const EncodeArgs& a, const detail::QuantTable& t, uint64_t first,
                               uint32_t n, const detail::BlockScale& s, int align) {
  for (uint32_t i = 4 * threadIdx.x; i < n; i += 4 * blockDim.x) {
    const uint32_t m = min(4u, n - i);
    float v[4];
    load_group(a.in + first + i, m, align, v);
    quantize_group<kStochastic>(a, t, first + i, m, v, s);
  }
}

// One CUDA block loops over codec blocks: stats, block reduction, scale, then codes from a.in.
// load(first, i, m, v) gives the values of the stats pass, which must leave a.in holding them by
// the time the same thread quantises its groups (the fused reduction writes them there). The
// table (dynamic shared memory) is loaded once per CUDA block.
template <bool kStochastic, typename Load>
__device__ void encode_blocks(const EncodeArgs& a, const uint8_t* smem, const Load& load) {
  __shared__ Stats partial[kWarps];
  __shared__ detail::BlockScale shared_scale;
  const detail::QuantTable& t = *reinterpret_cast<const detail::QuantTable*>(smem);
  const int align = alignment_of(a.in);
  for (uint64_t b = blockIdx.x; b < a.blocks; b += gridDim.x) {
    const uint64_t first = b * a.block;
    const uint32_t n = min_count(a.block, a.count - first);
    const Stats st = block_reduce(
        thread_stats(n, [&](uint32_t i, uint32_t m, float v[4]) { load(first, i, m, v); }),
        partial);
    if (threadIdx.x == 0) finish_scale(a, t, b, st, &shared_scale);
    __syncthreads();
    const detail::BlockScale s = shared_scale;
    quantize_block<kStochastic>(a, t, first, n, s, align);
    __syncthreads();  // partial and shared_scale are reused by the next block
  }
}

template <bool kStochastic>
__global__ void __launch_bounds__(kThreads) encode_kernel(EncodeArgs a) {
  if (!gate_open(a)) return;
  OCTET_DYNAMIC_SHARED(smem);
  copy_table(smem, a.table, a.table_bytes);
  __syncthreads();
  const int align = alignment_of(a.in);
  encode_blocks<kStochastic>(a, smem, [&](uint64_t first, uint32_t i, uint32_t m, float v[4]) {
    load_group(a.in + first + i, m, align, v);
  });
}

// ---- encode, a warp per tile of codec blocks ---------------------------------------------------
// Codec blocks of up to kTileElements elements (the 8-bit default of 2048 and the 4-bit default
// of 128 included) are encoded a warp per tile of kTileElements (a row is 32 lanes x 4 elements):
// the warp reads a codec block's rows for its stats, reduces them with shuffles, then reads the
// rows again (from L1 or L2: DRAM sees one read) and quantises them. Why: the CUDA-block-per-
// codec-block loop above (kept for larger blocks) gives each thread two loads in flight and three
// block barriers per codec block, so it waits on memory most of the time; a warp never waits for
// another warp. Holding the tile in registers instead (64 floats a lane, 128 registers, 16 warps
// an SM) took 329 us for 256 MiB of 8-bit on an H200 and 474-486 us for 4-bit; reading it twice
// (38-40 registers, 55-62% occupancy) 237-243 and 293-299 us (docs/performance.md).
constexpr int kTileRows = 16;
constexpr uint32_t kTileElements = kTileRows * 128;
constexpr int kTileShapes = 6;  // codec blocks of kTileElements >> q elements, q = 0..5 (64)

// q for a codec block of `block` elements encoded by tiles, or -1 (a larger block).
__host__ __device__ inline int tile_shape_of(uint32_t block) {
  for (int q = 0; q < kTileShapes; ++q)
    if (block == kTileElements >> q) return q;
  return -1;
}

// Scale and flag of codec block b (stored by one lane), and the scale every lane quantises with.
__device__ __forceinline__ detail::BlockScale finish_tile_block(const EncodeArgs& a,
                                                                const detail::QuantTable& t,
                                                                uint64_t b, const Stats& st,
                                                                bool store) {
  const detail::BlockScale s = detail::make_block_scale(st.max_value, st.min_value, st.zeros);
  if (store && b < a.blocks) store_block(a, t, b, st, s);
  return s;
}

// The m values of the group at element i into v, +0 past the tensor's end (the stats need no m).
template <typename Load>
__device__ __forceinline__ uint32_t load_tile_group(uint64_t count, uint64_t i, float v[4],
                                                    const Load& load) {
  const uint32_t m = group_size(count, i);
  if (m == 4) {
    load(i, 4u, v);
  } else {
    for (int k = 0; k < 4; ++k) v[k] = 0.0f;
    if (m > 0) load(i, m, v);
  }
  return m;
}

// The stats of the codec block of kRows rows from element `first` of this lane, reduced over the
// kWidth lanes that hold it. Most blocks are finite and not all zero: there fmaxf/fminf from +0
// give group_stats' max and min (only the sign of a zero result can differ, and make_block_scale
// reads it only when both are zero), and the largest magnitude's bits show any NaN/Inf, at 3
// instructions an element instead of about 10. Other blocks are read again for group_stats. The
// warp takes that path together (__any_sync), so that its shuffles run on every lane, also when
// the two halves of a warp hold different blocks.
template <int kWidth, int kRows, typename Load>
__device__ __forceinline__ Stats tile_block_stats(uint64_t count, uint64_t first,
                                                  const Load& load) {
  float hi = 0.0f, lo = 0.0f;
  uint32_t top = 0;
  OCTET_UNROLL_BY(4)
  for (int r = 0; r < kRows; ++r) {
    float v[4];
    load_tile_group(count, first + 128 * r, v, load);
    for (int k = 0; k < 4; ++k) {
      hi = fmaxf(hi, v[k]);
      lo = fminf(lo, v[k]);
      const uint32_t magnitude = detail::float_bits(v[k]) & detail::kAbsMask;
      top = magnitude > top ? magnitude : top;
    }
  }
  for (int d = kWidth / 2; d > 0; d /= 2) {
    hi = fmaxf(hi, __shfl_xor_sync(0xffffffffu, hi, d));
    lo = fminf(lo, __shfl_xor_sync(0xffffffffu, lo, d));
    const uint32_t other = __shfl_xor_sync(0xffffffffu, top, d);
    top = other > top ? other : top;
  }
  const bool exact = top >= detail::kExpMask || (hi == 0.0f && lo == 0.0f);
  if (!__any_sync(0xffffffffu, exact)) return Stats{hi, lo, 0u, 0u};
  Stats part{0.0f, 0.0f, 0u, 0u};
  for (int r = 0; r < kRows; ++r) {
    float v[4];
    const uint32_t m = load_tile_group(count, first + 128 * r, v, load);
    part = combine(part, group_stats(v, m));
  }
  return warp_reduce<kWidth>(part);
}

// The codes of this lane's kRows rows of a codec block from element `first`, read again.
template <bool kStochastic, bool kPlain, int kRows, typename Load>
__device__ __forceinline__ void quantize_tile_block(const EncodeArgs& a,
                                                    const detail::QuantTable& t, uint64_t first,
                                                    const detail::BlockScale& s, const Load& load) {
  OCTET_UNROLL_BY(4)
  for (int r = 0; r < kRows; ++r) {
    float v[4];
    const uint64_t i = first + 128 * r;
    if (const uint32_t m = load_tile_group(a.count, i, v, load))
      quantize_group<kStochastic, kPlain>(a, t, i, m, v, s);
  }
}

// One warp, one tile: codec block by codec block (with 64-element blocks, two a row, one per
// half-warp), its stats, its scale, then its codes. load(i, m, v) gives the m values of the group
// at element i.
template <bool kStochastic, int kQ, typename Load>
__device__ __forceinline__ void encode_tile(const EncodeArgs& a, const detail::QuantTable& t,
                                            uint64_t tile, const Load& load) {
  constexpr bool kHalves = kQ == kTileShapes - 1;
  constexpr int kWidth = kHalves ? 16 : 32;
  constexpr int kRows = kHalves ? 1 : kTileRows >> kQ;  // rows of a codec block
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t first = tile * kTileElements + 4 * lane;  // this lane's group in row 0
  for (int k = 0; k < kTileRows / kRows; ++k) {
    const uint64_t row0 = first + uint64_t{128} * kRows * k;
    const Stats st = tile_block_stats<kWidth, kRows>(a.count, row0, load);
    const uint64_t b = kHalves ? (tile << kQ) + 2 * k + lane / 16 : (tile << kQ) + k;
    const detail::BlockScale s = finish_tile_block(a, t, b, st, lane % kWidth == 0);
    if (st.nonfinite == 0 && s.pre == 1.0f)
      quantize_tile_block<kStochastic, true, kRows>(a, t, row0, s, load);
    else
      quantize_tile_block<kStochastic, false, kRows>(a, t, row0, s, load);
  }
}

// The warps of the grid take the tiles in turn.
template <bool kStochastic, int kQ, typename Load>
__device__ void encode_tiles(const EncodeArgs& a, const detail::QuantTable& t, const Load& load) {
  const uint64_t tiles = (a.count + kTileElements - 1) / kTileElements;
  const uint64_t warps = uint64_t{gridDim.x} * (blockDim.x / 32);
  for (uint64_t tile = uint64_t{blockIdx.x} * (blockDim.x / 32) + threadIdx.x / 32; tile < tiles;
       tile += warps)
    encode_tile<kStochastic, kQ>(a, t, tile, load);
}

template <bool kStochastic, int kQ>
__global__ void __launch_bounds__(kThreads) encode_tile_kernel(EncodeArgs a) {
  if (!gate_open(a)) return;
  OCTET_DYNAMIC_SHARED(smem);
  copy_table(smem, a.table, a.table_bytes);
  __syncthreads();
  const detail::QuantTable& t = *reinterpret_cast<const detail::QuantTable*>(smem);
  const int align = alignment_of(a.in);
  encode_tiles<kStochastic, kQ>(
      a, t, [&](uint64_t i, uint32_t m, float v[4]) { load_group(a.in + i, m, align, v); });
}

// Calls fn(std::integral_constant<int, q>{}) for the tile shape q of `block`, or
// fn(std::integral_constant<int, -1>{}) for a block larger than a tile: the one place that maps a
// block size to its kernel, for the launchers and the emulation test alike.
template <typename Fn>
void visit_encode_shape(uint32_t block, const Fn& fn) {
  switch (tile_shape_of(block)) {
    case 0:
      return fn(std::integral_constant<int, 0>{});
    case 1:
      return fn(std::integral_constant<int, 1>{});
    case 2:
      return fn(std::integral_constant<int, 2>{});
    case 3:
      return fn(std::integral_constant<int, 3>{});
    case 4:
      return fn(std::integral_constant<int, 4>{});
    case 5:
      return fn(std::integral_constant<int, 5>{});
    default:
      return fn(std::integral_constant<int, -1>{});
  }
}

__global__ void __launch_bounds__(kThreads) special_kernel(SpecialArgs a) {
  const uint32_t entry_bytes = 4 + a.block / 4;
  const int align = alignment_of(a.in);
  const uint32_t specials = a.specials_at ? *a.specials_at : a.specials;
  for (uint64_t s = blockIdx.x; s < specials; s += gridDim.x) {
    uint8_t* entry = a.out + s * entry_bytes;
    const uint64_t first = uint64_t{a.list[s]} * a.block;
    const uint32_t n = min_count(a.block, a.count - first);
    if (threadIdx.x == 0) store_u32(entry, a.list[s], 1);
    for (uint32_t j = threadIdx.x; j < a.block / 4; j += blockDim.x) {
      uint32_t classes = 0;
      if (4 * j < n) {
        const uint32_t m = min(4u, n - 4 * j);
        float v[4];
        load_group(a.in + first + 4 * j, m, align, v);
        for (uint32_t k = 0; k < m; ++k)
          classes |= detail::special_class(v[k]) << (detail::kSpecialClassBits * k);
      }
      entry[4 + j] = static_cast<uint8_t>(classes);
    }
  }
}

// One CUDA block: the flagged blocks' indices in ascending order (a block-wide prefix sum over
// each stretch of blockDim.x flags), their count, and whether any block mixed signs.
__global__ void __launch_bounds__(kThreads) compact_kernel(FinishArgs a) {
  // Without a flagged block there is nothing to list: the usual case costs one load, not a
  // single CUDA block's scan of every flag (encode_device_async of 256 MiB of 4-bit, 524288
  // blocks: 2.5 ms with the scan, 0.5 ms without, on an H200).
  if (a.summary != nullptr && (*a.summary & kFlagNonFinite) == 0) {
    if (threadIdx.x == 0) {
      *a.specials = 0;
      *a.status = *a.summary & kFlagMixedSign;
    }
    return;
  }
  __shared__ uint32_t scan[kThreads];
  uint32_t total = 0, mixed = 0;  // the same running total in every thread
  for (uint64_t first = 0; first < a.blocks; first += blockDim.x) {
    const uint64_t b = first + threadIdx.x;
    const uint8_t f = b < a.blocks ? a.flags[b] : 0;
    mixed |= f & kFlagMixedSign;
    const uint32_t mine = (f & kFlagNonFinite) ? 1u : 0u;
    scan[threadIdx.x] = mine;
    __syncthreads();
    for (uint32_t d = 1; d < blockDim.x; d *= 2) {  // inclusive Hillis-Steele scan
      const uint32_t v = threadIdx.x >= d ? scan[threadIdx.x - d] : 0u;
      __syncthreads();
      scan[threadIdx.x] += v;
      __syncthreads();
    }
    if (mine) a.list[total + scan[threadIdx.x] - 1] = static_cast<uint32_t>(b);
    total += scan[blockDim.x - 1];
    __syncthreads();  // scan is rewritten by the next stretch
  }
  scan[threadIdx.x] = mixed;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (uint32_t t = 1; t < blockDim.x; ++t) mixed |= scan[t];
  *a.specials = total;
  *a.status = mixed;
}

// One thread: the header for the count of special blocks, its CRC patched from the template's by
// the per-byte deltas (CRC32 is affine in its input), and the payload's size.
__global__ void header_kernel(FinishArgs a) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  if (*a.status != 0) {
    *a.size = 0;
    return;
  }
  const uint32_t k = *a.specials;
  uint32_t crc = load_u32(a.header + a.crc_at, 1);
  for (uint32_t j = 0; j < 4; ++j) crc ^= a.crc_delta[256 * j + ((k >> (8 * j)) & 0xFFu)];
  for (uint32_t i = 0; i < kHeaderBytes; ++i) a.out[i] = a.header[i];
  store_u32(a.out + a.specials_at, k, 1);
  store_u32(a.out + a.crc_at, crc, 1);
  *a.size = a.base_size + uint64_t{k} * a.entry_bytes;
}

// Thread 0: the payload's count of special blocks if its header is the expected one for that
// count (every byte but the count, and the CRC patched as header_kernel patches it), and the
// payload fits the buffer; else kPayloadBadHeader in *bad.
__device__ uint32_t checked_header(const ValidateArgs& a, uint32_t* bad) {
  const uint8_t* p = a.payload;
  for (uint32_t i = 0; i < a.crc_at; ++i)
    if ((i < a.specials_at || i >= a.specials_at + 4) && p[i] != a.header[i])
      *bad = kPayloadBadHeader;
  const uint32_t k = load_u32(p + a.specials_at, 1);
  if (k > a.blocks || a.base_size + uint64_t{k} * a.entry_bytes > a.capacity) {
    *bad = kPayloadBadHeader;
    return 0;
  }
  uint32_t crc = load_u32(a.header + a.crc_at, 1);
  for (uint32_t j = 0; j < 4; ++j) crc ^= a.crc_delta[256 * j + ((k >> (8 * j)) & 0xFFu)];
  if (load_u32(p + a.crc_at, 1) != crc) *bad = kPayloadBadHeader;
  return k;
}

// The body rules for the scales and special entries first, first + step, ...: a bit per broken
// rule (1 << PayloadStatus).
__device__ uint32_t body_faults(const ValidateArgs& a, uint32_t k, uint64_t first, uint64_t step) {
  const uint8_t* p = a.payload;
  uint32_t faults = 0;
  for (uint64_t b = first; b < a.blocks; b += step)
    if (!detail::is_finite_bits(load_u32(p + a.scales + 4 * b, 1)))
      faults |= 1u << kPayloadBadScale;
  for (uint64_t s = first; s < k; s += step) {
    const uint8_t* entry = p + a.special + s * a.entry_bytes;
    const uint32_t b = load_u32(entry, 1);
    const int64_t previous = s == 0 ? -1 : int64_t{load_u32(entry - a.entry_bytes, 1)};
    if (!detail::special_index_is_valid(b, previous, a.blocks) ||
        !detail::special_tail_is_valid(entry + 4, b, a.block, a.count))
      faults |= 1u << kPayloadBadSpecial;
  }
  if (first == 0 && a.code_bytes > 0 &&
      !detail::padding_is_valid(a.bits, a.count, p[a.codes + a.code_bytes - 1]))
    faults |= 1u << kPayloadBadPadding;
  return faults;
}

// The body rules over the whole grid (with one CUDA block, decode_device_async of 256 MiB of
// 4-bit, 524288 scales, took 0.86 ms on an H200; 0.14 ms so): broken rules are ORed into *a.status,
// zeroed by the launcher, and read by validate_kernel. Nothing past the header is read unless the
// header is the expected one.
__global__ void __launch_bounds__(kThreads) validate_body_kernel(ValidateArgs a) {
  __shared__ uint32_t header_fault, count;
  if (threadIdx.x == 0) {
    uint32_t bad = kPayloadOk;
    count = checked_header(a, &bad);
    header_fault = bad;
  }
  __syncthreads();
  if (header_fault != kPayloadOk) return;
  const uint32_t faults = body_faults(a, count, uint64_t{blockIdx.x} * blockDim.x + threadIdx.x,
                                      uint64_t{gridDim.x} * blockDim.x);
  if (faults != 0) atomicOr(a.status, faults);
}

// One thread, after validate_body_kernel: the status (the header's verdict, else the first body
// rule broken in validate_body's order) and the count of special blocks, 0 unless valid.
__global__ void validate_kernel(ValidateArgs a) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  uint32_t status = kPayloadOk;
  const uint32_t count = checked_header(a, &status);
  const uint32_t faults = *a.status;
  for (uint32_t rule = kPayloadBadScale; status == kPayloadOk && rule <= kPayloadBadPadding; ++rule)
    if (faults & (1u << rule)) status = rule;
  *a.status = status;
  *a.specials = status == kPayloadOk ? count : 0u;
}

// Codes of the group of element i.
__device__ __forceinline__ void load_codes(const uint8_t* codes, uint64_t i, uint32_t m, int bits,
                                           uint32_t c[4]) {
  if (bits == 8) {
    const uint8_t* src = codes + i;
    if (m == 4 && alignment_of(src) >= 4) {
      const uint32_t w = load_u32(src, 4);
      for (int k = 0; k < 4; ++k) c[k] = (w >> (8 * k)) & 0xFFu;
      return;
    }
    for (uint32_t k = 0; k < m; ++k) c[k] = src[k];
    return;
  }
  const uint8_t* src = codes + i / 2;
  c[0] = src[0] & 0xFu;
  c[1] = src[0] >> 4;
  if (m > 2) {
    c[2] = src[1] & 0xFu;
    c[3] = src[1] >> 4;
  }
}

// log2 of a codec block size (a power of two).
__device__ __forceinline__ int log2_of(uint32_t block) {
  return __ffs(static_cast<int>(block)) - 1;
}

// fn(i, m) for each group of 4 elements (m < 4 only for the tensor's last) that this thread
// takes, grid-stride over count elements.
template <typename Fn>
__device__ void for_each_group(uint64_t count, const Fn& fn) {
  for (uint64_t g = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; 4 * g < count;
       g += uint64_t{gridDim.x} * blockDim.x)
    fn(4 * g, min_count(4, count - 4 * g));
}

// The table's header and values in shared memory, for kernels that only decode.
__device__ const detail::QuantTable& shared_values(uint8_t* smem, const detail::QuantTable* table) {
  copy_table(smem, table, kTablePrefix);
  __syncthreads();
  return *reinterpret_cast<const detail::QuantTable*>(smem);
}

// The decoded values of the m elements of the group of element i (NaN/Inf entries not applied).
__device__ __forceinline__ void decode_group(const detail::QuantTable& t, const uint8_t* scales,
                                             const uint8_t* codes, int bits, uint64_t i, uint32_t m,
                                             int block_shift, float d[4]) {
  const uint8_t* scale_at = scales + 4 * (i >> block_shift);
  const float scale = detail::bits_float(load_u32(scale_at, alignment_of(scale_at)));
  uint32_t c[4] = {0, 0, 0, 0};
  load_codes(codes, i, m, bits, c);
  for (uint32_t k = 0; k < m; ++k) d[k] = detail::decode_value(t, c[k], scale);
}

// Groups each thread decodes per pass: their code loads are issued together, since one 4-byte
// load in flight per thread leaves the memory system mostly idle.
constexpr int kDecodeUnroll = 4;

__global__ void __launch_bounds__(kThreads) decode_kernel(DecodeArgs a) {
  if (a.status != nullptr && *a.status != kPayloadOk) return;
  __shared__ __align__(16) uint8_t smem[kTablePrefix];
  const detail::QuantTable& t = shared_values(smem, a.table);
  const int align = alignment_of(a.out);
  const int block_shift = log2_of(a.block);
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  for (uint64_t g = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; 4 * g < a.count;
       g += kDecodeUnroll * stride) {
    float d[kDecodeUnroll][4];
    OCTET_UNROLL
    for (int u = 0; u < kDecodeUnroll; ++u) {
      const uint64_t i = 4 * (g + u * stride);
      if (const uint32_t m = group_size(a.count, i))
        decode_group(t, a.scales, a.codes, a.bits, i, m, block_shift, d[u]);
    }
    OCTET_UNROLL
    for (int u = 0; u < kDecodeUnroll; ++u) {
      const uint64_t i = 4 * (g + u * stride);
      const uint32_t m = group_size(a.count, i);
      if (m == 0) continue;
      float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (a.accumulate) load_group(a.out + i, m, align, v);
      for (uint32_t k = 0; k < m; ++k) v[k] = a.accumulate ? v[k] + d[u][k] : d[u][k];
      store_group(a.out + i, m, align, v);
    }
  }
}

// Overwrites (or adds) the NaN/Inf elements, after decode_kernel, as the CPU does.
__global__ void __launch_bounds__(kThreads) apply_special_kernel(DecodeArgs a) {
  if (a.status != nullptr && *a.status != kPayloadOk) return;
  const uint32_t entry_bytes = 4 + a.block / 4;
  const int align = alignment_of(a.out);
  const uint32_t specials = a.specials_at ? *a.specials_at : a.specials;
  for (uint64_t s = blockIdx.x; s < specials; s += gridDim.x) {
    const uint8_t* entry = a.special + s * entry_bytes;
    const uint64_t first = uint64_t{load_u32(entry, 1)} * a.block;
    const uint32_t n = min_count(a.block, a.count - first);
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
      const uint32_t c = detail::special_class_at(entry + 4, i);
      if (c == detail::kClassFinite) continue;
      float v = detail::bits_float(detail::special_value_bits(c));
      float* p = a.out + first + i;
      if (a.accumulate) {
        float o;
        load_group(p, 1, align, &o);
        v = o + v;
      }
      store_group(p, 1, align, &v);
    }
  }
}

// ---- the owner's reduction --------------------------------------------------------------------

// The entry of codec block b in a contribution's special section (ascending block indices), or
// null.
__device__ const uint8_t* find_special(const Contribution& c, uint32_t block, uint64_t b) {
  const uint64_t entry_bytes = 4 + block / 4;
  uint32_t lo = 0, hi = c.specials;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    const uint8_t* entry = c.special + mid * entry_bytes;
    const uint32_t at = load_u32(entry, 1);
    if (at == b) return entry;
    if (at < b)
      lo = mid + 1;
    else
      hi = mid;
  }
  return nullptr;
}

// Rank r's message for the group of element i: the decoded values d[] and the special classes
// cls[] (kClassFinite where the payload has no NaN/Inf entry for the element).
__device__ void contribution_group(const ReduceArgs& a, const detail::QuantTable& t,
                                   const Contribution& c, uint64_t i, uint32_t m, int block_shift,
                                   float d[4], uint32_t cls[4]) {
  decode_group(t, c.scales, c.codes, a.bits, i, m, block_shift, d);
  const uint64_t b = i >> block_shift;
  const uint8_t* entry = c.specials > 0 ? find_special(c, a.block, b) : nullptr;
  const uint32_t within = static_cast<uint32_t>(i - (b << block_shift));
  for (uint32_t k = 0; k < m; ++k)
    cls[k] = entry ? detail::special_class_at(entry + 4, within + k) : detail::kClassFinite;
}

// sum_r (term_r / ranks) of element k of the group, the terms being the exact own value and the
// overwriting decode of the others (a NaN/Inf entry replaces the decoded value): the average of
// an element whose plain sum is not finite.
__device__ float average_of_terms(const ReduceArgs& a, const detail::QuantTable& t, uint64_t i,
                                  uint32_t m, int block_shift, const float own[4], uint32_t k) {
  const float ranks = static_cast<float>(a.ranks);
  float avg = -0.0f;
  for (int r = 0; r < a.ranks; ++r) {
    float term = own[k];
    if (r != a.me) {
      float d[4];
      uint32_t cls[4];
      contribution_group(a, t, a.from[r], i, m, block_shift, d, cls);
      term = cls[k] == detail::kClassFinite
                 ? d[k]
                 : detail::bits_float(detail::special_value_bits(cls[k]));
    }
    avg += term / ranks;
  }
  return avg;
}

// others_valid over the reduction's own statuses.
__device__ bool contributions_valid(const ReduceArgs& a) {
  return others_valid(a.statuses, a.ranks, a.me);
}

// The reduction of the m elements of the group at i (any group of the tensor).
__device__ void reduce_group(const ReduceArgs& a, const detail::QuantTable& t, uint64_t i,
                             uint32_t m, int block_shift, float sum[4]) {
  float own[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  load_group(a.own + i, m, alignment_of(a.own), own);
  for (uint32_t k = 0; k < 4; ++k) sum[k] = -0.0f;  // IEEE's additive identity, as on the CPU
  for (int r = 0; r < a.ranks; ++r) {
    if (r == a.me) {
      for (uint32_t k = 0; k < m; ++k) sum[k] += own[k];
      continue;
    }
    float d[4];
    uint32_t cls[4];
    contribution_group(a, t, a.from[r], i, m, block_shift, d, cls);
    for (uint32_t k = 0; k < m; ++k) {
      sum[k] += d[k];
      if (cls[k] != detail::kClassFinite)
        sum[k] += detail::bits_float(detail::special_value_bits(cls[k]));
    }
  }
  if (!a.average || a.ranks == 1) return;
  const float ranks = static_cast<float>(a.ranks);
  for (uint32_t k = 0; k < m; ++k)
    sum[k] = detail::is_finite_bits(detail::float_bits(sum[k]))
                 ? sum[k] / ranks
                 : average_of_terms(a, t, i, m, block_shift, own, k);
}

__global__ void __launch_bounds__(kThreads) reduce_kernel(ReduceArgs a) {
  if (!contributions_valid(a)) return;
  __shared__ __align__(16) uint8_t smem[kTablePrefix];
  const detail::QuantTable& t = shared_values(smem, a.table);
  const int out_align = alignment_of(a.out);
  const int block_shift = log2_of(a.block);
  for_each_group(a.count, [&](uint64_t i, uint32_t m) {
    float sum[4];
    reduce_group(a, t, i, m, block_shift, sum);
    store_group(a.out + i, m, out_align, sum);
  });
}

// The reduction and its re-encoding in one pass over the codec blocks: a CUDA block reduces a
// codec block's groups into r.out while it gathers their stats, then quantises them from there
// (each thread reads back only the groups it wrote). e.in must be r.out, e.count r.count and
// e.block r.block; e.table the full table (the reduction reads its values from the same copy).
template <bool kStochastic>
__global__ void __launch_bounds__(kThreads) reduce_encode_kernel(ReduceArgs r, EncodeArgs e) {
  if (!contributions_valid(r)) return;
  OCTET_DYNAMIC_SHARED(smem);
  copy_table(smem, e.table, e.table_bytes);
  __syncthreads();
  const detail::QuantTable& t = *reinterpret_cast<const detail::QuantTable*>(smem);
  const int out_align = alignment_of(r.out);
  const int block_shift = log2_of(r.block);
  encode_blocks<kStochastic>(e, smem, [&](uint64_t first, uint32_t i, uint32_t m, float v[4]) {
    reduce_group(r, t, first + i, m, block_shift, v);
    store_group(r.out + first + i, m, out_align, v);
  });
}

}  // namespace
}  // namespace cuda_detail
}  // namespace octet
