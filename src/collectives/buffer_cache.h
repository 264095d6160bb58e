// Where the collectives' message buffers and chunk sums live between calls. glibc gives a freed
// block above its mmap threshold, and a heap top above its trim threshold, back to the kernel;
// both thresholds adapt only to blocks of at most 32 MiB. A pipelined call frees its buffers when
// it ends, so in a program whose own arrays are larger than that the next call faulted every page
// of its buffers in again: a 32 MiB compressed allreduce of 4 local ranks took 24-26 ms, and 16.3
// to 16.8 with the thresholds raised (GLIBC_TUNABLES), about a third of its time in page faults.
// Blocks of kMinCachedBytes and more are therefore kept here when released, by size class (four
// per power of two, so a block is at most 25% larger than asked), up to kMaxCachedBytes in all,
// for any thread to reuse; a full cache frees the blocks of the class used longest ago to keep a
// new one. Smaller blocks go to operator new as usual.
#pragma once

#include <cstddef>

namespace octet {
namespace detail {

constexpr size_t kMinCachedBytes = size_t{64} << 10;
constexpr size_t kMaxCachedBytes = size_t{256} << 20;

// A block of at least `bytes`, 64-byte aligned; thread-safe. Throws std::bad_alloc.
void* allocate_buffer(size_t bytes);
// Gives back a block from allocate_buffer(bytes) (the same `bytes`); thread-safe.
void release_buffer(void* block, size_t bytes) noexcept;
// The bytes held for reuse now (for tests).
size_t cached_buffer_bytes();

}  // namespace detail
}  // namespace octet
