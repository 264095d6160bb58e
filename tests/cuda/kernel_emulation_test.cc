// Runs the device code of kernels/codec_kernels.cuh on CPU threads (one std::thread per CUDA
// thread, CUDA blocks one after another, a real barrier for __syncthreads and shuffles) and checks
// its bytes against the CPU codec. It needs no GPU, so the kernels' indexing, tails, packing,
// reductions and misaligned paths are tested on every machine with nvcc's headers. (It cannot see
// device-only effects such as FMA contraction: the build's --fmad=false covers those, and
// cuda_codec_test.cc compares real GPU output where a device exists.) No CUDA header is needed,
// so this test runs in CPU-only builds too.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

// Stand-ins for what the kernels use of CUDA.
#define OCTET_KERNEL_EMULATION 1
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) {
  return float4{x, y, z, w};
}
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

namespace emu {

class Barrier {
 public:
  explicit Barrier(unsigned n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const unsigned generation = generation_;
    if (++waiting_ == n_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation != generation_; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  unsigned n_, waiting_ = 0, generation_ = 0;
};

thread_local uint3 thread_index;
uint3 block_index;  // blocks run one after another
dim3 block_dim, grid_dim;
Barrier* barrier = nullptr;
std::vector<std::unique_ptr<Barrier>> warp_barriers;  // one per warp: what a shuffle waits for
uint8_t* dynamic_shared = nullptr;
uint64_t exchange[1024];  // shuffle slots, one per thread of the block

// Runs fn() as a grid of `grid` blocks of `threads` threads with `smem` bytes of dynamic shared
// memory.
template <typename Fn>
void launch(unsigned grid, unsigned threads, size_t smem, Fn fn) {
  grid_dim.x = grid;
  block_dim.x = threads;
  std::vector<float4> shared((smem + sizeof(float4) - 1) / sizeof(float4) + 1);
  for (unsigned b = 0; b < grid; ++b) {
    block_index = uint3{b, 0, 0};
    Barrier block_barrier(threads);
    barrier = &block_barrier;
    warp_barriers.clear();
    for (unsigned w = 0; w < threads; w += 32)
      warp_barriers.push_back(std::make_unique<Barrier>(std::min(32u, threads - w)));
    dynamic_shared = reinterpret_cast<uint8_t*>(shared.data());
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([t, &fn] {
        thread_index = uint3{t, 0, 0};
        fn();
      });
    for (auto& th : pool) th.join();
  }
}

}  // namespace emu

#define __shared__ static  // one block at a time: a static is the block's shared memory
#define threadIdx emu::thread_index
#define blockIdx emu::block_index
#define blockDim emu::block_dim
#define gridDim emu::grid_dim
#define OCTET_DYNAMIC_SHARED(name) uint8_t* name = emu::dynamic_shared

inline void __syncthreads() {
  emu::barrier->wait();
}

template <typename T>
T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  const unsigned t = threadIdx.x;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  emu::Barrier& warp = *emu::warp_barriers[t / 32];  // a shuffle synchronises its warp only
  emu::exchange[t] = bits;
  warp.wait();
  bits = emu::exchange[t ^ static_cast<unsigned>(lane_mask)];
  warp.wait();
  T r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

inline bool __any_sync(unsigned, bool predicate) {
  const unsigned t = threadIdx.x;
  emu::Barrier& warp = *emu::warp_barriers[t / 32];
  emu::exchange[t] = predicate ? 1 : 0;
  warp.wait();
  bool any = false;
  const unsigned first = t / 32 * 32, end = std::min(first + 32, emu::block_dim.x);
  for (unsigned u = first; u < end; ++u) any = any || emu::exchange[u] != 0;
  warp.wait();
  return any;
}

inline unsigned atomicOr(unsigned* p, unsigned v) {
  return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
}

inline int __ffs(int x) {
  return __builtin_ffs(x);
}
using std::min;

// The kernels' group loops run k over 0..3 with `if (k < m)` (a constant trip count keeps a
// group in registers on the GPU); g++ cannot see that the guard covers every read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "codec_kernels.cuh"
#pragma GCC diagnostic pop
// The emulation's shims end here.

#include <gtest/gtest.h>

#include "codec/payload.h"
#include "codec/tables.h"
#include "kernel_cases.h"
#include "kernel_inputs.h"
#include "octet/codec.h"

namespace octet {
namespace {

using kernel_cases::encode_args;
using kernel_cases::expect_same_special_blocks;
using kernel_cases::make_input;

unsigned threads_for(uint32_t block) {
  return std::clamp(block / 4, 32u, 64u);  // small blocks keep the emulation quick
}

// What launch_encode runs for a.block (visit_encode_shape: a tile kernel, or the kernel of a
// CUDA block per codec block), on `grid` emulated CUDA blocks of `threads` threads.
void emulate_encode(unsigned grid, unsigned threads, const cuda_detail::EncodeArgs& a) {
  if (a.summary) *a.summary = 0;  // as launch_encode's memset
  cuda_detail::visit_encode_shape(a.block, [&](auto shape) {
    constexpr int q = decltype(shape)::value;
    emu::launch(grid, threads, a.table_bytes, [&] {
      if constexpr (q < 0) {
        if (a.stochastic)
          cuda_detail::encode_kernel<true>(a);
        else
          cuda_detail::encode_kernel<false>(a);
      } else {
        if (a.stochastic)
          cuda_detail::encode_tile_kernel<true, q>(a);
        else
          cuda_detail::encode_tile_kernel<false, q>(a);
      }
    });
  });
}

// What launch_validate runs: the body rules over a grid (one warp unless told: every emulated
// thread is a std::thread, and the random-corruption test validates 600 payloads), then the
// verdict.
void emulate_validate(const cuda_detail::ValidateArgs& v, unsigned grid = 1,
                      unsigned threads = 32) {
  *v.status = 0;  // as launch_validate's memset
  emu::launch(grid, threads, 0, [&] { cuda_detail::validate_body_kernel(v); });
  emu::launch(1, 32, 0, [&] { cuda_detail::validate_kernel(v); });
}

// What launch_reduce_encode runs: for codec blocks of a tile or less the reduction, then the
// gated tile encode; for larger ones the fused kernel of a CUDA block per codec block.
void emulate_reduce_encode(unsigned grid, unsigned threads, const cuda_detail::ReduceArgs& r,
                           const cuda_detail::EncodeArgs& e) {
  if (cuda_detail::tile_shape_of(e.block) >= 0) {
    emu::launch(grid, threads, 0, [&] { cuda_detail::reduce_kernel(r); });
    return emulate_encode(grid, threads, cuda_detail::gated_by(e, r));
  }
  if (e.summary) *e.summary = 0;
  emu::launch(grid, threads, e.table_bytes, [&] {
    if (e.stochastic)
      cuda_detail::reduce_encode_kernel<true>(r, e);
    else
      cuda_detail::reduce_encode_kernel<false>(r, e);
  });
}

struct Case {
  DataType type;
  size_t n;
  uint32_t block;
  bool stochastic;
  size_t in_offset;   // bytes: misaligns the input
  size_t out_offset;  // bytes: misaligns scales and codes
};

void check_encode(const Case& c) {
  SCOPED_TRACE(std::string(data_type_name(c.type)) + " n=" + std::to_string(c.n) +
               " block=" + std::to_string(c.block) + " sr=" + std::to_string(c.stochastic) +
               " offsets " + std::to_string(c.in_offset) + "/" + std::to_string(c.out_offset));
  CodecOptions o;
  o.type = c.type;
  o.block_size = c.block;
  o.stochastic = c.stochastic;
  o.seed = 77;
  o.index_offset = 12345;
  const std::vector<float> x =
      make_input(c.n, static_cast<uint32_t>(c.n), c.type == DataType::kDynamicUnsigned);
  const std::vector<uint8_t> cpu = encode(x, o);
  const PayloadInfo info = inspect(cpu.data(), cpu.size());
  const codec::Layout l =
      codec::make_layout(c.n, c.block, data_type_bits(c.type), info.special_blocks, false);

  std::vector<uint8_t> in(c.n * 4 + c.in_offset), body(l.size + c.out_offset, 0xAB);
  std::memcpy(in.data() + c.in_offset, x.data(), c.n * 4);
  std::vector<uint8_t> flags(l.blocks, 0xFF);
  const cuda_detail::EncodeArgs a =
      encode_args(o, reinterpret_cast<const float*>(in.data() + c.in_offset), c.n, l,
                  body.data() + c.out_offset, flags.data(), &codec::quant_table(c.type));
  ASSERT_EQ(a.stochastic, c.stochastic);
  emulate_encode(3, threads_for(c.block), a);
  const uint8_t* got = body.data() + c.out_offset;
  ASSERT_TRUE(std::equal(cpu.begin() + l.scales, cpu.begin() + l.special, got + l.scales))
      << "scales or codes differ";

  std::vector<uint32_t> list;
  expect_same_special_blocks(flags, cpu, l, info.special_blocks, &list);
  if (list.empty() || ::testing::Test::HasFailure()) return;
  cuda_detail::SpecialArgs sa{};
  sa.in = a.in;
  sa.count = c.n;
  sa.block = c.block;
  sa.list = list.data();
  sa.specials = static_cast<uint32_t>(list.size());
  sa.out = body.data() + c.out_offset + l.special;
  emu::launch(2, 32, 0, [&] { cuda_detail::special_kernel(sa); });
  ASSERT_TRUE(std::equal(cpu.begin() + l.special, cpu.begin() + l.checksum, got + l.special))
      << "special section differs";
}

TEST(KernelEmulation, EncodeMatchesCpuForEveryType) {
  for (DataType type : all_data_types())
    for (size_t n : {size_t{1}, size_t{5}, size_t{64}, size_t{131}, size_t{777}})
      check_encode({type, n, 64, false, 0, 0});
}

TEST(KernelEmulation, EncodeMatchesCpuForBlocksTailsAndAlignment) {
  const Case cases[] = {
      {DataType::kDynamic, 2048 + 67, 2048, false, 0, 0},
      {DataType::kDynamic, 1000, 256, false, 1, 3},
      {DataType::kDynamic, 1001, 128, false, 4, 2},
      {DataType::kDynamic4, 999, 128, false, 2, 1},
      {DataType::kDynamic4, 1024, 64, false, 4, 0},
      {DataType::kLinear, 300, 64, true, 0, 1},
      {DataType::kDynamic, 2000, 256, true, 3, 0},
      {DataType::kDynamic4, 517, 64, true, 0, 0},
      // Warps that take several tiles, and the kernel of blocks larger than a tile.
      {DataType::kDynamic, 20000 + 3, 2048, false, 4, 0},
      {DataType::kDynamic4, 5000 + 1, 64, true, 0, 2},
      {DataType::kDynamic, 9000, 4096, false, 0, 0},
      {DataType::kDynamic4, 9000, 8192, true, 1, 0},
  };
  for (const Case& c : cases) check_encode(c);
}

void check_decode(DataType type, size_t n, uint32_t block, DecodeMode mode, size_t out_offset,
                  size_t payload_offset) {
  SCOPED_TRACE(std::string(data_type_name(type)) + " n=" + std::to_string(n) +
               " acc=" + std::to_string(mode == DecodeMode::kAccumulate) + " offsets " +
               std::to_string(out_offset) + "/" + std::to_string(payload_offset));
  CodecOptions o;
  o.type = type;
  o.block_size = block;
  const std::vector<uint8_t> cpu_payload =
      encode(make_input(n, 5, type == DataType::kDynamicUnsigned), o);
  const PayloadInfo info = inspect(cpu_payload.data(), cpu_payload.size());
  const codec::Layout l =
      codec::make_layout(n, block, data_type_bits(type), info.special_blocks, false);
  const std::vector<float> start = make_input(n, 9, false);
  std::vector<float> want = start;
  decode(cpu_payload.data(), cpu_payload.size(), want.data(), n, mode);

  std::vector<uint8_t> payload(cpu_payload.size() + payload_offset);
  std::memcpy(payload.data() + payload_offset, cpu_payload.data(), cpu_payload.size());
  const uint8_t* p = payload.data() + payload_offset;
  std::vector<uint8_t> out(n * 4 + out_offset);
  std::memcpy(out.data() + out_offset, start.data(), n * 4);
  cuda_detail::DecodeArgs a{};
  a.scales = p + l.scales;
  a.codes = p + l.codes;
  a.special = p + l.special;
  a.specials = info.special_blocks;
  a.count = n;
  a.block = block;
  a.bits = data_type_bits(type);
  a.table = &codec::quant_table(type);
  a.out = reinterpret_cast<float*>(out.data() + out_offset);
  a.accumulate = mode == DecodeMode::kAccumulate;
  emu::launch(2, 64, 0, [&] { cuda_detail::decode_kernel(a); });
  emu::launch(2, 32, 0, [&] { cuda_detail::apply_special_kernel(a); });
  std::vector<float> got(n);
  std::memcpy(got.data(), out.data() + out_offset, n * 4);
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    uint32_t u, v;
    std::memcpy(&u, &want[i], 4);
    std::memcpy(&v, &got[i], 4);
    ASSERT_EQ(u, v) << "element " << i << ": " << want[i] << " vs " << got[i];
  }
}

TEST(KernelEmulation, DecodeMatchesCpu) {
  for (DataType type : all_data_types())
    for (DecodeMode mode : {DecodeMode::kOverwrite, DecodeMode::kAccumulate})
      for (size_t n : {size_t{1}, size_t{3}, size_t{200}, size_t{1001}})
        check_decode(type, n, 64, mode, 0, 0);
  check_decode(DataType::kDynamic, 1001, 256, DecodeMode::kAccumulate, 2, 1);
  check_decode(DataType::kDynamic4, 999, 128, DecodeMode::kOverwrite, 1, 3);
  check_decode(DataType::kDynamic4, 1000, 64, DecodeMode::kAccumulate, 4, 2);
}

using kernel_cases::ReduceCase;

// A case's payloads, own values and output in host memory at c.offset bytes, as the kernels
// see them.
struct Staged {
  std::vector<std::vector<uint8_t>> stored;
  std::vector<cuda_detail::Contribution> from;
  std::vector<uint8_t> own, out;
  const float* own_at() const { return reinterpret_cast<const float*>(own.data() + offset); }
  float* out_at() { return reinterpret_cast<float*>(out.data() + offset); }
  size_t offset;
};

Staged stage(const ReduceCase& c, const kernel_cases::ReduceInputs& in) {
  Staged st;
  st.offset = c.offset;
  st.stored.resize(c.ranks);
  st.from.assign(c.ranks, cuda_detail::Contribution{});
  for (int r = 0; r < c.ranks; ++r) {
    if (r == c.me) continue;
    st.stored[r].assign(in.payloads[r].size() + c.offset, 0);
    std::memcpy(st.stored[r].data() + c.offset, in.payloads[r].data(), in.payloads[r].size());
    const uint8_t* p = st.stored[r].data() + c.offset;
    const codec::Layout& l = in.layouts[r];
    st.from[r] = {p + l.scales, p + l.codes, p + l.special, in.specials[r]};
  }
  st.own.assign(c.n * 4 + c.offset, 0);
  st.out.assign(c.n * 4 + c.offset, 0xCD);
  std::memcpy(st.own.data() + c.offset, in.own.data(), c.n * 4);
  return st;
}

std::string trace(const ReduceCase& c) {
  return std::string(data_type_name(c.type)) + " n=" + std::to_string(c.n) +
         " block=" + std::to_string(c.block) + " ranks=" + std::to_string(c.ranks) +
         " me=" + std::to_string(c.me) + " avg=" + std::to_string(c.average) +
         " offset=" + std::to_string(c.offset);
}

void expect_reduced(const kernel_cases::ReduceInputs& in, Staged& st, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float got;
    std::memcpy(&got, st.out.data() + st.offset + 4 * i, 4);
    EXPECT_TRUE(kernel_cases::same_float(in.want[i], got))
        << "element " << i << ": " << in.want[i] << " vs " << got;
    if (::testing::Test::HasFailure()) return;
  }
}

// The reduce kernel on CPU payloads against reduce_contributions (the collectives' rule) with the
// CPU decoder. Returns how many elements took the average's non-finite path.
size_t check_reduce(const ReduceCase& c) {
  SCOPED_TRACE(trace(c));
  const kernel_cases::ReduceInputs in = kernel_cases::reduce_inputs(c);
  Staged st = stage(c, in);
  const cuda_detail::ReduceArgs a = kernel_cases::reduce_args(
      c, st.from.data(), st.own_at(), &codec::quant_table(c.type), st.out_at());
  emu::launch(2, 64, 0, [&] { cuda_detail::reduce_kernel(a); });
  expect_reduced(in, st, c.n);
  return ::testing::Test::HasFailure() ? 0 : in.redone;
}

// The fused kernel: the reduction as above, and the scales, codes and NaN/Inf blocks of encoding
// it equal the CPU codec's payload of the collectives' reduction.
void check_reduce_encode(const ReduceCase& c, bool stochastic) {
  SCOPED_TRACE(trace(c) + " sr=" + std::to_string(stochastic));
  const kernel_cases::ReduceInputs in = kernel_cases::reduce_inputs(c);
  Staged st = stage(c, in);
  const kernel_cases::Reencoded want = kernel_cases::reencoded(c, in, stochastic);
  const CodecOptions& o = want.options;
  const std::vector<uint8_t>& cpu = want.payload;
  const PayloadInfo& info = want.info;
  const codec::Layout& l = want.layout;
  std::vector<uint8_t> body(l.size + c.offset, 0xAB), flags(l.blocks, 0xFF);
  const cuda_detail::ReduceArgs r = kernel_cases::reduce_args(
      c, st.from.data(), st.own_at(), &codec::quant_table(c.type), st.out_at());
  const cuda_detail::EncodeArgs e = encode_args(o, st.out_at(), c.n, l, body.data() + c.offset,
                                                flags.data(), &codec::quant_table(c.type));
  ASSERT_EQ(e.stochastic, stochastic);
  emulate_reduce_encode(3, threads_for(c.block), r, e);
  expect_reduced(in, st, c.n);
  EXPECT_TRUE(std::equal(cpu.begin() + l.scales, cpu.begin() + l.special,
                         body.begin() + c.offset + l.scales))
      << "scales or codes differ";
  std::vector<uint32_t> list;
  expect_same_special_blocks(flags, cpu, l, info.special_blocks, &list);
}

TEST(KernelEmulation, ReduceMatchesTheCollectivesRuleForEveryType) {
  for (DataType type : all_data_types())
    for (bool average : {false, true}) check_reduce({type, 777, 64, 3, 1, average, 1.0f, 0});
}

TEST(KernelEmulation, ReduceMatchesForRanksTailsAndAlignment) {
  const ReduceCase cases[] = {
      {DataType::kDynamic, 1001, 256, 4, 0, true, 1.0f, 3},
      {DataType::kDynamic, 1001, 256, 4, 3, false, 1.0f, 1},
      {DataType::kDynamic, 130, 64, 1, 0, true, 1.0f, 2},  // a single rank: its own values
      {DataType::kDynamic, 2, 64, 2, 1, true, 1.0f, 0},
      {DataType::kDynamic4, 999, 128, 5, 2, true, 1.0f, 1},
      {DataType::kLinear, 515, 64, 8, 7, true, 1.0f, 2},
  };
  for (const ReduceCase& c : cases) check_reduce(c);
}

// Sums that overflow fp32 take the average's second path (sum_r x_r / P): the test shows that it
// was taken, so that the kernel's copy of it is compared too.
TEST(KernelEmulation, ReduceAveragesOverflowingSumsAsTheCollectivesDo) {
  EXPECT_GT(check_reduce({DataType::kDynamic, 900, 64, 4, 2, true, 4.0f, 1}), 0u);
  EXPECT_GT(check_reduce({DataType::kDynamic4, 600, 128, 3, 0, true, 5.0f, 0}), 0u);
}

void expect_nothing_written_when_rejected(const ReduceCase& c) {
  SCOPED_TRACE(trace(c));
  const kernel_cases::ReduceInputs in = kernel_cases::reduce_inputs(c);
  for (uint32_t bad : {cuda_detail::kPayloadOk, cuda_detail::kPayloadBadScale}) {
    Staged st = stage(c, in);
    const std::vector<uint32_t> statuses = {cuda_detail::kPayloadOk, cuda_detail::kPayloadOk, bad};
    cuda_detail::ReduceArgs r = kernel_cases::reduce_args(c, st.from.data(), st.own_at(),
                                                          &codec::quant_table(c.type), st.out_at());
    r.statuses = statuses.data();
    emu::launch(2, 64, 0, [&] { cuda_detail::reduce_kernel(r); });
    const bool untouched =
        std::all_of(st.out.begin(), st.out.end(), [](uint8_t b) { return b == 0xCD; });
    EXPECT_EQ(untouched, bad != cuda_detail::kPayloadOk);

    Staged fused = stage(c, in);
    const codec::Layout l = codec::make_layout(c.n, c.block, 8, 0, false);
    std::vector<uint8_t> body(l.size, 0xAB), flags(l.blocks, 0xFF);
    CodecOptions o;
    o.block_size = c.block;
    r.out = fused.out_at();
    const cuda_detail::EncodeArgs e = encode_args(o, fused.out_at(), c.n, l, body.data(),
                                                  flags.data(), &codec::quant_table(c.type));
    emulate_reduce_encode(2, 64, r, e);
    const bool body_untouched =
        std::all_of(body.begin(), body.end(), [](uint8_t b) { return b == 0xAB; });
    EXPECT_EQ(body_untouched, bad != cuda_detail::kPayloadOk);
  }
}

// A contribution that validate_kernel rejected stops the reduction, and the encode of its result
// (the gated tile encode for 64-element blocks, the fused kernel for 4096), before they write
// anything; all valid, they run.
TEST(KernelEmulation, ReduceWritesNothingWhenAContributionWasRejected) {
  for (const ReduceCase& c : {ReduceCase{DataType::kDynamic, 300, 64, 3, 1, false, 1.0f, 0},
                              ReduceCase{DataType::kDynamic, 5000, 4096, 3, 1, false, 1.0f, 0}})
    expect_nothing_written_when_rejected(c);
}

TEST(KernelEmulation, FusedReduceEncodeMatchesTheCpuPayloadOfTheReduction) {
  for (DataType type : all_data_types())
    check_reduce_encode({type, 777, 64, 3, 1, true, 1.0f, 0}, false);
  check_reduce_encode({DataType::kDynamic, 1001, 256, 4, 3, false, 1.0f, 3}, false);
  check_reduce_encode({DataType::kDynamic, 1001, 256, 4, 0, true, 1.0f, 1}, true);
  check_reduce_encode({DataType::kDynamic4, 999, 128, 5, 2, true, 1.0f, 2}, true);
  check_reduce_encode({DataType::kDynamic, 900, 64, 4, 2, true, 4.0f, 1}, false);     // overflow
  check_reduce_encode({DataType::kDynamic, 5000, 2048, 3, 1, true, 1.0f, 0}, false);  // 8-bit
  check_reduce_encode({DataType::kDynamic, 9000, 4096, 2, 0, false, 1.0f, 1}, true);  // large block
}

// An encode finished on the device: the encode kernel, then compact_kernel, special_kernel with
// the count read from device memory, and header_kernel give the CPU codec's whole payload (header
// and its CRC included) and its size, with no host step between them.
void check_finished_encode(DataType type, size_t n, uint32_t block, bool stochastic,
                           const std::vector<float>& x) {
  SCOPED_TRACE(std::string(data_type_name(type)) + " n=" + std::to_string(n) +
               " block=" + std::to_string(block) + " sr=" + std::to_string(stochastic));
  CodecOptions o;
  o.type = type;
  o.block_size = block;
  o.stochastic = stochastic;
  o.seed = 3;
  o.index_offset = 99;
  const codec::ResolvedOptions resolved = codec::resolve(o);
  const size_t capacity = max_encoded_size(n, o);
  std::vector<uint8_t> out(capacity, 0xEE), flags(1 + n / block, 0xFF);
  const codec::EncodePlan plan = codec::plan_encode(resolved, x.data(), n, out.data(), capacity);
  cuda_detail::EncodeArgs e =
      encode_args(o, x.data(), n, plan.base, out.data(), flags.data(), &codec::quant_table(type));
  uint32_t summary = 0xDEAD;
  e.summary = &summary;  // compact_kernel skips its scan when no block is flagged
  std::vector<uint32_t> list(plan.base.blocks + 1);
  const std::array<uint32_t, 1024> table = cuda_detail::header_crc_deltas();
  uint32_t specials = 0xDEAD, status = 0xDEAD;
  uint64_t size = 0xDEAD;
  cuda_detail::FinishArgs f = cuda_detail::finish_args(plan);
  f.flags = flags.data();
  f.summary = &summary;
  f.list = list.data();
  f.specials = &specials;
  f.status = &status;
  f.crc_delta = table.data();
  f.out = out.data();
  f.size = &size;
  cuda_detail::SpecialArgs sa{};
  sa.in = x.data();
  sa.count = n;
  sa.block = block;
  sa.list = list.data();
  sa.out = out.data() + plan.base.special;
  sa.specials_at = &specials;
  ASSERT_EQ(e.stochastic, stochastic);
  emulate_encode(2, threads_for(block), e);
  emu::launch(1, 64, 0, [&] { cuda_detail::compact_kernel(f); });
  emu::launch(3, 32, 0, [&] { cuda_detail::special_kernel(sa); });
  emu::launch(1, 32, 0, [&] { cuda_detail::header_kernel(f); });
  bool mixed = false;
  std::vector<uint8_t> cpu;
  try {
    cpu = encode(x, o);
  } catch (const Error& err) {
    mixed = err.code() == ErrorCode::kInvalidArgument;
  }
  if (mixed) {  // dynamic_unsigned on data of both signs: the CPU throws, the device says size 0
    EXPECT_NE(status, 0u);
    EXPECT_EQ(size, 0u);
    return;
  }
  EXPECT_EQ(status, 0u);
  ASSERT_EQ(size, cpu.size());
  EXPECT_EQ(specials, inspect(cpu.data(), cpu.size()).special_blocks);
  for (size_t i = 0; i < cpu.size(); ++i)
    ASSERT_EQ(out[i], cpu[i]) << "payload byte " << i << " of " << cpu.size();
}

TEST(KernelEmulation, EncodeFinishedOnTheDeviceIsTheCpuPayload) {
  for (DataType type : all_data_types())
    for (size_t n : {size_t{1}, size_t{131}, size_t{777}})
      check_finished_encode(type, n, 64, false,
                            make_input(n, 7, type == DataType::kDynamicUnsigned));
  // More flagged blocks than the compaction's 64 threads take at once: NaN in two blocks of
  // three, so that a stretch's last block is flagged in some stretches and not in others.
  std::vector<float> x = make_input(64 * 300 + 5, 8, false);
  for (size_t b = 0; b < 300; ++b)
    if (b % 3 != 1) x[64 * b + 7] = std::numeric_limits<float>::quiet_NaN();
  check_finished_encode(DataType::kDynamic, x.size(), 64, true, x);
  // No special block at all, and an empty tensor.
  check_finished_encode(DataType::kDynamic4, 1000, 128, false, std::vector<float>(1000, 0.5f));
  check_finished_encode(DataType::kDynamic, 0, 64, false, {});
}

TEST(KernelEmulation, EncodeFinishedOnTheDeviceReportsMixedSignsAsSizeZero) {
  check_finished_encode(DataType::kDynamicUnsigned, 300, 64, false, make_input(300, 7, false));
}

// The device's verdict on a received payload (held in a buffer of `capacity` bytes) against the
// host's for the same bytes: read_header, the expected header fields, the fit, validate_body.
struct Verdicts {
  uint32_t device;
  bool host_rejects;
};

Verdicts validate_both(const codec::ResolvedOptions& r, uint64_t count,
                       const std::vector<uint8_t>& buffer, unsigned grid = 1,
                       unsigned threads = 32) {
  const std::array<uint32_t, 1024> deltas = cuda_detail::header_crc_deltas();
  uint32_t status = 0xDEAD, specials = 0xDEAD;
  cuda_detail::ValidateArgs v = cuda_detail::validate_args(r, count);
  v.payload = buffer.data();
  v.capacity = buffer.size();
  v.crc_delta = deltas.data();
  v.status = &status;
  v.specials = &specials;
  emulate_validate(v, grid, threads);
  bool host_rejects = false;
  try {
    const PayloadInfo info = codec::read_header(buffer.data(), buffer.size());
    host_rejects = info.type != r.options.type || info.block_size != r.block ||
                   info.count != count || info.has_checksum ||
                   info.stochastic != r.options.stochastic ||
                   info.mantissa_exponent_offset != r.options.mantissa_exponent_offset ||
                   info.size > buffer.size();
    if (!host_rejects)
      codec::validate_body(
          buffer.data(), info,
          codec::make_layout(info.count, info.block_size, data_type_bits(info.type),
                             info.special_blocks, false));
    if (!host_rejects && status == cuda_detail::kPayloadOk) {
      EXPECT_EQ(specials, info.special_blocks);
    }
  } catch (const Error&) {
    host_rejects = true;
  }
  if (status != cuda_detail::kPayloadOk) {
    EXPECT_EQ(specials, 0u);
  }
  return {status, host_rejects};
}

// A payload in a receive buffer of max_encoded_size bytes (the rest zero), and its options.
struct Received {
  codec::ResolvedOptions options;
  uint64_t count;
  std::vector<uint8_t> buffer;
  size_t length;
};

Received received(DataType type, uint64_t count, uint32_t block) {
  CodecOptions o;
  o.type = type;
  o.block_size = block;
  std::vector<float> x = make_input(count, 21, type == DataType::kDynamicUnsigned);
  const std::vector<uint8_t> p = encode(x, o);
  Received r{codec::resolve(o), count, std::vector<uint8_t>(max_encoded_size(count, o), 0),
             p.size()};
  std::copy(p.begin(), p.end(), r.buffer.begin());
  return r;
}

TEST(KernelEmulation, ValidatePassesEveryValidPayloadWithItsCount) {
  for (DataType type : all_data_types())
    for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{131}, uint64_t{777}}) {
      SCOPED_TRACE(std::string(data_type_name(type)) + " n=" + std::to_string(n));
      const Received r = received(type, n, 64);
      const Verdicts v = validate_both(r.options, r.count, r.buffer);
      EXPECT_EQ(v.device, cuda_detail::kPayloadOk);
      EXPECT_FALSE(v.host_rejects);
    }
}

// Each rule broken on purpose gives its status, and the host rejects the same bytes.
TEST(KernelEmulation, ValidateNamesTheBrokenRule) {
  const Received base = received(DataType::kDynamic4, 777, 64);  // odd count: a padding nibble
  const uint32_t specials = inspect(base.buffer.data(), base.length).special_blocks;
  ASSERT_GE(specials, 2u);
  const codec::Layout l = codec::make_layout(777, 64, 4, specials, false);
  const auto expect = [&](const char* what, uint32_t status, const auto& corrupt) {
    SCOPED_TRACE(what);
    std::vector<uint8_t> b = base.buffer;
    corrupt(b);
    const Verdicts v = validate_both(base.options, base.count, b);
    EXPECT_EQ(v.device, status);
    EXPECT_TRUE(v.host_rejects);
  };
  using cuda_detail::kPayloadBadHeader;
  expect("type byte", kPayloadBadHeader, [](std::vector<uint8_t>& b) { b[5] ^= 1; });
  expect("header CRC", kPayloadBadHeader, [](std::vector<uint8_t>& b) { b[29] ^= 0x40; });
  expect("special count past the buffer", kPayloadBadHeader,
         [](std::vector<uint8_t>& b) { codec::store_u32(b.data() + 12, 1000); });
  expect("NaN scale", cuda_detail::kPayloadBadScale,
         [&](std::vector<uint8_t>& b) { codec::store_u32(b.data() + l.scales + 8, 0x7fc00000u); });
  expect("special indices swapped", cuda_detail::kPayloadBadSpecial, [&](std::vector<uint8_t>& b) {
    std::swap_ranges(b.begin() + l.special, b.begin() + l.special + 4,
                     b.begin() + l.special + l.special_entry);
  });
  // make_input puts an Inf at the last element: the last entry is the tail block (777 = 12 * 64
  // + 9), whose element 60 does not exist.
  expect("class past the tail", cuda_detail::kPayloadBadSpecial, [&](std::vector<uint8_t>& b) {
    const size_t last = l.special + (specials - 1) * l.special_entry;
    ASSERT_EQ(codec::load_u32(b.data() + last), l.blocks - 1);
    b[last + 4 + 60 / 4] |= 1;
  });
  expect("padding nibble", cuda_detail::kPayloadBadPadding,
         [&](std::vector<uint8_t>& b) { b[l.codes + l.code_bytes - 1] |= 0x10; });
}

// More scales than a grid of 2 CUDA blocks of 64 threads has threads (validate_body_kernel
// strides over the grid): a broken scale is found in the first pass, the second and the last.
TEST(KernelEmulation, ValidateCoversEveryScaleAcrossTheGrid) {
  const Received base = received(DataType::kDynamic, 64 * 300 + 5, 64);
  const uint32_t specials = inspect(base.buffer.data(), base.length).special_blocks;
  const codec::Layout l = codec::make_layout(base.count, 64, 8, specials, false);
  ASSERT_GT(l.blocks, 2u * 128u);
  EXPECT_EQ(validate_both(base.options, base.count, base.buffer, 2, 64).device,
            cuda_detail::kPayloadOk);
  for (uint64_t b : {uint64_t{0}, uint64_t{129}, l.blocks - 1}) {
    std::vector<uint8_t> bad = base.buffer;
    codec::store_u32(bad.data() + l.scales + 4 * b, 0x7f800000u);  // an infinite scale
    const Verdicts v = validate_both(base.options, base.count, bad, 2, 64);
    EXPECT_EQ(v.device, cuda_detail::kPayloadBadScale) << "scale " << b;
    EXPECT_TRUE(v.host_rejects);
  }
}

// Random bit flips anywhere in the payload: the device rejects exactly what the host rejects.
TEST(KernelEmulation, ValidateAgreesWithTheHostOnRandomCorruptions) {
  for (DataType type : {DataType::kDynamic, DataType::kDynamic4}) {
    const Received base = received(type, 1001, 64);
    std::mt19937 rng(17);
    size_t rejected = 0;
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<uint8_t> b = base.buffer;
      const size_t at = rng() % base.length;
      b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      const Verdicts v = validate_both(base.options, base.count, b);
      ASSERT_EQ(v.device != cuda_detail::kPayloadOk, v.host_rejects)
          << data_type_name(type) << ": flip at byte " << at << ", device status " << v.device;
      rejected += v.host_rejects ? 1 : 0;
    }
    EXPECT_GT(rejected, 10u);  // the flips reach the header, scales and special entries too
    EXPECT_LT(rejected, 300u);
  }
}

// The asynchronous decode's chain on CPU threads: validate_kernel, then the decode kernels
// reading the verdict and the count from "device" memory. A valid payload decodes as the CPU
// decodes it (overwrite and accumulate); a corrupt one leaves the output as it was.
void check_checked_decode(DataType type, uint64_t n, DecodeMode mode, bool corrupt) {
  SCOPED_TRACE(std::string(data_type_name(type)) + " n=" + std::to_string(n) +
               " acc=" + std::to_string(mode == DecodeMode::kAccumulate) +
               " corrupt=" + std::to_string(corrupt));
  Received r = received(type, n, 64);
  if (corrupt)
    codec::store_u32(r.buffer.data() + codec::kHeaderSize + 4, 0x7f800000u);  // Inf scale
  const std::vector<float> start = make_input(n, 9, false);
  std::vector<float> want = start;
  if (!corrupt) decode(r.buffer.data(), r.length, want.data(), n, mode);
  const std::array<uint32_t, 1024> deltas = cuda_detail::header_crc_deltas();
  uint32_t status = 0xDEAD, specials = 0xDEAD;
  cuda_detail::ValidateArgs v = cuda_detail::validate_args(r.options, n);
  v.payload = r.buffer.data();
  v.capacity = r.buffer.size();
  v.crc_delta = deltas.data();
  v.status = &status;
  v.specials = &specials;
  std::vector<float> got = start;
  cuda_detail::DecodeArgs a{};
  a.scales = r.buffer.data() + v.scales;
  a.codes = r.buffer.data() + v.codes;
  a.special = r.buffer.data() + v.special;
  a.count = n;
  a.block = 64;
  a.bits = data_type_bits(type);
  a.table = &codec::quant_table(type);
  a.out = got.data();
  a.accumulate = mode == DecodeMode::kAccumulate;
  a.status = &status;
  a.specials_at = &specials;
  emulate_validate(v);
  emu::launch(2, 64, 0, [&] { cuda_detail::decode_kernel(a); });
  emu::launch(3, 32, 0, [&] { cuda_detail::apply_special_kernel(a); });
  EXPECT_EQ(status == cuda_detail::kPayloadOk, !corrupt);
  for (uint64_t i = 0; i < n; ++i)
    ASSERT_TRUE(kernel_cases::same_float(want[i], got[i]))
        << "element " << i << ": " << want[i] << " vs " << got[i];
}

TEST(KernelEmulation, CheckedDecodeDecodesValidPayloadsAndLeavesCorruptOnesUnwritten) {
  for (DataType type : all_data_types())
    for (DecodeMode mode : {DecodeMode::kOverwrite, DecodeMode::kAccumulate})
      check_checked_decode(type, 777, mode, false);
  check_checked_decode(DataType::kDynamic, 777, DecodeMode::kOverwrite, true);
  check_checked_decode(DataType::kDynamic4, 333, DecodeMode::kAccumulate, true);
}

}  // namespace
}  // namespace octet
