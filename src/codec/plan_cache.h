// A per-table cache for what the SIMD kernels derive from a code table (segments.h, bucket_keys.h):
// built on first use, then shared without a lock.
#pragma once

#include <atomic>
#include <mutex>

#include "octet/detail/quant_math.h"

namespace octet {
namespace codec {

// Plans keyed by table address: the kernels only see quant_table()'s tables, never freed. Past 64
// tables a default (unusable) plan is returned, and the kernels take their generic path.
template <typename Plan, Plan (*kBuild)(const detail::QuantTable&)>
const Plan& cached_plan(const detail::QuantTable& t) {
  struct Entry {
    std::atomic<const detail::QuantTable*> table{nullptr};
    Plan plan{};
  };
  static Entry entries[64];
  static std::atomic<int> count{0};
  static std::mutex mutex;
  static const Plan unusable{};
  for (int i = 0, n = count.load(std::memory_order_acquire); i < n; ++i)
    if (entries[i].table.load(std::memory_order_relaxed) == &t) return entries[i].plan;
  std::lock_guard<std::mutex> lock(mutex);
  const int n = count.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i)
    if (entries[i].table.load(std::memory_order_relaxed) == &t) return entries[i].plan;
  if (n == 64) return unusable;
  entries[n].plan = kBuild(t);
  entries[n].table.store(&t, std::memory_order_relaxed);
  count.store(n + 1, std::memory_order_release);
  return entries[n].plan;
}

}  // namespace codec
}  // namespace octet
