#include "collectives/buffer_cache.h"

#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define OCTET_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OCTET_ASAN 1
#endif
#endif

#if defined(OCTET_ASAN)
#include <sanitizer/asan_interface.h>
// A cached block is poisoned while it waits: a use after release still fails under ASan.
#define OCTET_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define OCTET_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define OCTET_POISON(p, n) ((void)(p), (void)(n))
#define OCTET_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace octet {
namespace detail {
namespace {

constexpr std::align_val_t kAlign{64};

// The size class of a cached request: rounded up to a quarter of its power of two.
size_t class_bytes(size_t bytes) {
  size_t power = kMinCachedBytes;
  while (power <= bytes / 2) power *= 2;  // power <= bytes < 2 * power
  const size_t step = power / 4;
  return (bytes + step - 1) / step * step;
}

class Cache {
 public:
  void* take(size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (Entry& e : free_)
        if (e.size == size && !e.blocks.empty()) {
          void* block = e.blocks.back();
          e.blocks.pop_back();
          held_ -= size;
          e.used = ++clock_;
          OCTET_UNPOISON(block, size);
          return block;
        }
    }
    return ::operator new(size, kAlign);
  }

  // Keeps the block, making room by freeing blocks of the class least recently used where the
  // cache is full: the classes a program calls now stay, not those of its first calls (the
  // policy's start-up measurement fills the cache with sizes the program may never call).
  void give(void* block, size_t size) noexcept {
    while (size <= kMaxCachedBytes) {
      void* stale = nullptr;
      size_t stale_size = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (held_ + size <= kMaxCachedBytes) {
          try {
            Entry& e = entry(size);
            e.blocks.push_back(block);
            e.used = ++clock_;
            held_ += size;
            OCTET_POISON(block, size);
            return;
          } catch (const std::bad_alloc&) {  // no room to remember it: free it below
            break;
          }
        }
        Entry* e = least_recent_other(size);
        if (!e) break;
        stale = e->blocks.back();
        stale_size = e->size;
        e->blocks.pop_back();
        held_ -= stale_size;
      }
      OCTET_UNPOISON(stale, stale_size);
      ::operator delete(stale, kAlign);  // outside the lock: freeing a large block is a munmap
    }
    ::operator delete(block, kAlign);
  }

  size_t held() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_;
  }

 private:
  struct Entry {
    size_t size;
    std::vector<void*> blocks;
    uint64_t used = 0;  // clock_ at the last take or give of this class
  };
  Entry& entry(size_t size) {
    for (Entry& e : free_)
      if (e.size == size) return e;
    free_.push_back({size, {}, 0});
    return free_.back();
  }
  // The class other than `size` holding blocks that was used longest ago, or null.
  Entry* least_recent_other(size_t size) {
    Entry* oldest = nullptr;
    for (Entry& e : free_)
      if (e.size != size && !e.blocks.empty() && (!oldest || e.used < oldest->used)) oldest = &e;
    return oldest;
  }
  std::mutex mutex_;
  std::vector<Entry> free_;  // a few dozen classes at most
  size_t held_ = 0;
  uint64_t clock_ = 0;
};

// Never destroyed: buffers may be released during static destruction (a Comm held by a static).
Cache& cache() {
  static Cache* const c = new Cache;
  return *c;
}

}  // namespace

void* allocate_buffer(size_t bytes) {
  if (bytes < kMinCachedBytes) return ::operator new(bytes, kAlign);
  return cache().take(class_bytes(bytes));
}

void release_buffer(void* block, size_t bytes) noexcept {
  if (!block) return;
  if (bytes < kMinCachedBytes) return ::operator delete(block, kAlign);
  cache().give(block, class_bytes(bytes));
}

size_t cached_buffer_bytes() {
  return cache().held();
}

}  // namespace detail
}  // namespace octet
