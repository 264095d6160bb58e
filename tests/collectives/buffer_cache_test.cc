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
  // Take out what this test put in (a full cache may also have freed what others left).
  for (size_t i = 0; i < blocks.size(); ++i)
    ::operator delete (allocate_buffer(bytes), std::align_val_t{64});
  EXPECT_LE(cached_buffer_bytes(), before);
}

// A cache full of one class still keeps the blocks of the class a program calls now: it frees
// blocks of the class used longest ago. Without that, a cache filled by other sizes (the policy's
// measurements reach 128 MiB calls) never kept the buffers of the size the program then called,
// and each of its calls faulted them in again.
TEST(BufferCache, AFullCacheMakesRoomForTheClassInUse) {
  const size_t old_bytes = size_t{16} << 20, new_bytes = size_t{24} << 20;
  const size_t before = cached_buffer_bytes();
  std::vector<void*> old_blocks;
  for (size_t held = 0; held <= kMaxCachedBytes; held += old_bytes)
    old_blocks.push_back(allocate_buffer(old_bytes));
  for (void* b : old_blocks) release_buffer(b, old_bytes);
  ASSERT_GT(cached_buffer_bytes(), kMaxCachedBytes - old_bytes);
  void* a = allocate_buffer(new_bytes);
  release_buffer(a, new_bytes);
  const size_t held = cached_buffer_bytes();
  EXPECT_LE(held, kMaxCachedBytes);
  void* b = allocate_buffer(new_bytes);
  EXPECT_EQ(a, b) << "the block of the class in use was not kept";
  EXPECT_EQ(cached_buffer_bytes(), held - new_bytes) << "it did not come from the cache";
  ::operator delete (b, std::align_val_t{64});
  // Take out what this test put in (a full cache may also have freed what others left).
  for (size_t i = 0; i < old_blocks.size(); ++i)
    ::operator delete (allocate_buffer(old_bytes), std::align_val_t{64});
  EXPECT_LE(cached_buffer_bytes(), before);
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
