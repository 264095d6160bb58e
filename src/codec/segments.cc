#include "codec/segments.h"

#include <atomic>
#include <climits>
#include <cmath>
#include <mutex>
#include <vector>

#include "codec/tables.h"

namespace octet {
namespace codec {
namespace {

using detail::float_bits;

struct Segment {
  uint32_t first;  // first level
  uint32_t count;  // levels
};

bool same_gap(double a, double b) {
  return std::fabs(a - b) <= 1e-3 * std::fabs(b);
}

// Runs of equally spaced levels over levels [first, top) (the top level is the override above the
// last threshold), each run taking at least two levels when it can.
std::vector<Segment> runs_from(const detail::QuantTable& t, uint32_t first) {
  std::vector<Segment> runs;
  if (first == 1) runs.push_back({0, 1});
  for (uint32_t b = first; b < t.top;) {
    uint32_t n = b + 1 < t.top ? 2 : 1;
    const double gap = double(t.magnitude[b + 1]) - double(t.magnitude[b]);
    while (b + n < t.top &&
           same_gap(double(t.magnitude[b + n]) - double(t.magnitude[b + n - 1]), gap))
      ++n;
    runs.push_back({b, n});
    b += n;
  }
  return runs;
}

// Rate, intercept and clamp that put the threshold between levels L-1 and L of a segment at about
// z = L + epsilon.
void fit_segment(const detail::QuantTable& t, const Segment& s, int i, SegmentPlan& p) {
  p.z_max[i] = float(s.first + s.count - 1) + 0.75f;
  if (s.count == 1) {  // one level: z = first + 0.5 + a / 2, clamped below first + 1
    p.rate[i] = 0.5f;
    p.intercept[i] = float(s.first) + 0.5f;
    return;
  }
  const double step =
      (double(t.magnitude[s.first + s.count - 1]) - double(t.magnitude[s.first])) / (s.count - 1);
  const double origin = double(t.magnitude[s.first]) - step / 2;  // threshold "Q = 0"
  p.rate[i] = float(1.0 / step);
  p.intercept[i] = float(double(s.first) + double(p.epsilon) - origin / step);
}

// The decisions z makes are those of the thresholds, outside a margin: for every threshold T
// between levels L-1 and L, elements below T have z < L + 2 epsilon and elements at or above it
// z >= L (z is monotonic in a, so the two floats at T settle it); and the segment's first element
// has z >= its first level.
bool margins_hold(const detail::QuantTable& t, const Segment& s, int i, const SegmentPlan& p,
                  uint32_t domain_start) {
  if (!(segment_z(p, i, detail::bits_float(domain_start)) >= float(s.first))) return false;
  for (uint32_t level = s.first + 1; level < s.first + s.count; ++level) {
    const uint32_t thr = midpoint_threshold(t.magnitude[level - 1], t.magnitude[level]);
    if (!(segment_z(p, i, detail::bits_float(thr - 1)) < float(level) + 2 * p.epsilon))
      return false;
    if (!(segment_z(p, i, detail::bits_float(thr)) >= float(level))) return false;
  }
  return true;
}

// Groups of 2 binades, the last one holding the top threshold; each may hold one boundary.
bool fill_groups(const std::vector<uint32_t>& starts, uint32_t top_threshold, SegmentPlan& p) {
  p.group_offset = int32_t(top_threshold >> kGroupShift) - (kGroups - 1);
  if (p.group_offset < 1) return false;
  for (int g = 0; g < kGroups; ++g) {
    const uint32_t lo = g == 0 ? 0u : uint32_t(p.group_offset + g) << kGroupShift;
    const uint32_t hi = uint32_t(p.group_offset + g + 1) << kGroupShift;
    int inside = 0;
    p.group_segment[g] = 0;
    for (size_t s = 1; s < starts.size(); ++s) {
      if (starts[s] <= lo) p.group_segment[g] = uint8_t(s);
      if (starts[s] > lo && starts[s] < hi) ++inside;
    }
    if (inside > 1) return false;
  }
  for (size_t s = 0; s < kMaxSegments; ++s)
    p.next_below[s] = s + 1 < starts.size() ? int32_t(starts[s + 1] - 1) : INT32_MAX;
  return true;
}

SegmentPlan plan_with_margin(const detail::QuantTable& t, const std::vector<Segment>& segs,
                             float epsilon) {
  SegmentPlan p{};
  p.epsilon = epsilon;
  const uint32_t top_threshold = midpoint_threshold(t.magnitude[t.top - 1], t.magnitude[t.top]);
  p.top_below = int32_t(top_threshold - 1);
  std::vector<uint32_t>
      starts;  // domain start of each segment: the threshold below its first level
  for (const Segment& s : segs)
    starts.push_back(
        s.first == 0 ? 0u : midpoint_threshold(t.magnitude[s.first - 1], t.magnitude[s.first]));
  for (size_t i = 0; i < segs.size(); ++i) {
    fit_segment(t, segs[i], int(i), p);
    if (!margins_hold(t, segs[i], int(i), p, starts[i])) return p;
  }
  p.usable = fill_groups(starts, top_threshold, p);
  return p;
}

// The smallest margin that the table's rounding allows (a smaller one sends fewer vectors to the
// bucket lookup).
SegmentPlan build_segment_plan(const detail::QuantTable& t) {
  std::vector<Segment> segs = runs_from(t, 0);
  const std::vector<Segment> alt = runs_from(t, 1);
  if (alt.size() < segs.size()) segs = alt;
  if (segs.size() > kMaxSegments) return SegmentPlan{};
  for (float epsilon : {1.0f / 4096, 1.0f / 1024, 1.0f / 256}) {
    const SegmentPlan p = plan_with_margin(t, segs, epsilon);
    if (p.usable) return p;
  }
  return SegmentPlan{};
}

}  // namespace

const SegmentPlan& segment_plan(const detail::QuantTable& t) {
  // Keyed by address: the kernels only see quant_table()'s tables, which are never freed.
  struct Entry {
    std::atomic<const detail::QuantTable*> table{nullptr};
    SegmentPlan plan{};
  };
  static Entry entries[64];
  static std::atomic<int> count{0};
  static std::mutex mutex;
  static const SegmentPlan unusable{};
  for (int i = 0, n = count.load(std::memory_order_acquire); i < n; ++i)
    if (entries[i].table.load(std::memory_order_relaxed) == &t) return entries[i].plan;
  std::lock_guard<std::mutex> lock(mutex);
  const int n = count.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i)
    if (entries[i].table.load(std::memory_order_relaxed) == &t) return entries[i].plan;
  if (n == 64) return unusable;
  entries[n].plan = build_segment_plan(t);
  entries[n].table.store(&t, std::memory_order_relaxed);
  count.store(n + 1, std::memory_order_release);
  return entries[n].plan;
}

}  // namespace codec
}  // namespace octet
