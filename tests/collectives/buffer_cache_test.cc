// The message-buffer cache (src/collectives/buffer_cache.h): released large blocks are reused by
// size class, small ones are not kept, the total stays under its cap, and a second compressed
// call finds its buffers there instead of allocating them again.
#include "collectives/buffer_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <vector>

#include "octet/collectives.h"
#include "thread_ranks.h"

namespace octet {
namespace detail {
namespace {

TEST(BufferCache, AReleasedLargeBlockIsReusedForTheSameSizeClass) {
  const size_t bytes = 3 * kMinCachedBytes + 5;
  void* a = allocate_buffer(bytes);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  const size_t before = cached_buffer_bytes();
  release_buffer(a, bytes);
  EXPECT_GT(cached_buffer_bytes(), before);
  void* b = allocate_buffer(bytes + 1000);  // the same class: 3.5 times 64 KiB
  EXPECT_EQ(a, b);
  EXPECT_EQ(cached_buffer_bytes(), before);
  release_buffer(b, bytes + 1000);
}

TEST(BufferCache, SmallBlocksAreNotKept) {
  const size_t before = cached_buffer_bytes();
  void* a = allocate_buffer(kMinCachedBytes - 1);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  release_buffer(a, kMinCachedBytes - 1);
  EXPECT_EQ(cached_buffer_bytes(), before);
}

TEST(BufferCache, HoldsNoMoreThanItsCap) {
  const size_t bytes = size_t{16} << 20;
  const size_t before = cached_buffer_bytes();
  std::vector<void*> blocks;
  for (size_t held = 0; held <= 2 * kMaxCachedBytes; held += bytes)
    blocks.push_back(allocate_buffer(bytes));
  for (void* b : blocks) release_buffer(b, bytes);
  EXPECT_LE(cached_buffer_bytes(), kMaxCachedBytes);
  EXPECT_GT(cached_buffer_bytes(), kMaxCachedBytes - bytes);
  // Take out what this test put in, so that the other tests see the cache as they would alone.
  const size_t added = cached_buffer_bytes() - before;
  for (size_t i = 0; i < added / bytes; ++i)
    ::operator delete (allocate_buffer(bytes), std::align_val_t{64});
  EXPECT_EQ(cached_buffer_bytes(), before);
}

// A compressed allreduce's buffers (messages, chunk sums) return to the cache when it ends, and
// the next call of the same size takes them from there: after the second call (on new Comms, the
// first ones gone) the cache holds about what it held after the first (the ranks' threads may
// overlap differently), not twice as much.
TEST(BufferCache, ASecondCallReusesTheFirstCallsBuffers) {
  const size_t n = size_t{1} << 20;
  CollectiveOptions o;
  o.policy = Policy::kAlways;
  auto call = [&](Comm& comm) {
    std::vector<float> x(n, 1.0f), y(n);
    allreduce(comm, x.data(), y.data(), n, o);
  };
  test::expect_ok(test::run_on_threads(3, call));
  const size_t after_first = cached_buffer_bytes();
  test::expect_ok(test::run_on_threads(3, call));
  EXPECT_GT(after_first, 0u);
  EXPECT_LT(cached_buffer_bytes(), after_first + after_first / 2);
}

}  // namespace
}  // namespace detail
}  // namespace octet
