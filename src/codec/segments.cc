#include "codec/segments.h"

#include <climits>
#include <cmath>
#include <vector>

#include "codec/plan_cache.h"
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

// Groups of 2 binades, the last one holding top_bits (the top threshold, or 1.0); each may hold
// one segment start (starts[0] = 0).
bool fill_group_table(const std::vector<uint32_t>& starts, uint32_t top_bits, int32_t* group_offset,
                      uint8_t* group_segment, int32_t* next_below) {
  *group_offset = int32_t(top_bits >> kGroupShift) - (kGroups - 1);
  if (*group_offset < 1) return false;
  for (int g = 0; g < kGroups; ++g) {
    const uint32_t lo = g == 0 ? 0u : uint32_t(*group_offset + g) << kGroupShift;
    const uint32_t hi = uint32_t(*group_offset + g + 1) << kGroupShift;
    int inside = 0;
    group_segment[g] = 0;
    for (size_t s = 1; s < starts.size(); ++s) {
      if (starts[s] <= lo) group_segment[g] = uint8_t(s);
      if (starts[s] > lo && starts[s] < hi) ++inside;
    }
    if (inside > 1) return false;
  }
  for (size_t s = 0; s < kMaxSegments; ++s)
    next_below[s] = s + 1 < starts.size() ? int32_t(starts[s + 1] - 1) : INT32_MAX;
  return true;
}

bool fill_groups(const std::vector<uint32_t>& starts, uint32_t top_threshold, SegmentPlan& p) {
  return fill_group_table(starts, top_threshold, &p.group_offset, p.group_segment, p.next_below);
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

// The runs with the fewest segments (level 0 alone or in the first run).
std::vector<Segment> fewest_runs(const detail::QuantTable& t) {
  std::vector<Segment> segs = runs_from(t, 0);
  const std::vector<Segment> alt = runs_from(t, 1);
  if (alt.size() < segs.size()) segs = alt;
  return segs;
}

// pos(a) of StochasticPlan (levels first..end, a in [m[first], m[end]]), exact up to double
// rounding.
long double true_position(const detail::QuantTable& t, uint32_t first, uint32_t end,
                          long double a) {
  uint32_t k = first;
  while (k + 1 < end && (long double)t.magnitude[k + 1] <= a) ++k;
  const long double lo = t.magnitude[k], hi = t.magnitude[k + 1];
  return k + (a - lo) / (hi - lo);
}

// The kernel's model of pos(a) in segment i without fp32 rounding.
long double model_position(const StochasticPlan& p, int i, long double a) {
  const long double w = a * (long double)p.rate[i] + (long double)p.intercept[i];
  const long double last = p.last[i];
  return w < last ? w : last + (w - last) * (long double)p.stretch[i];
}

// Fits segment i (run levels s.first .. s.first + count - 1, domain up to level end) to
// pos(a) - shift and returns the largest model error plus the kernel's rounding errors, in units
// of levels (a negative value: the segment cannot be modelled).
double fit_stochastic_segment(const detail::QuantTable& t, const Segment& s, uint32_t end, int i,
                              float shift, StochasticPlan& p) {
  const uint32_t last = s.first + s.count - 1;
  const double m_first = t.magnitude[s.first], m_last = t.magnitude[last];
  const double step =
      s.count == 1 ? double(t.magnitude[end]) - m_first : (m_last - m_first) / (s.count - 1);
  if (!(step > 0)) return -1;
  p.rate[i] = float(1.0 / step);
  p.intercept[i] = float(double(s.first) - double(shift) - m_first * double(p.rate[i]));
  p.last[i] = float(last) - shift;  // exact: shift is a power of two >= 2^-16, last < 256
  const long double w_end =
      (long double)t.magnitude[end] * (long double)p.rate[i] + (long double)p.intercept[i];
  if (!(w_end > p.last[i])) return -1;
  p.stretch[i] = float(1.0L / (w_end - p.last[i]));
  // Both functions are piecewise linear: the error is largest at a breakpoint, a magnitude or
  // the a where w = last.
  long double err = 0;
  auto check = [&](long double a) {
    if (a < t.magnitude[s.first] || a > t.magnitude[end]) return;
    const long double e =
        std::fabs(model_position(p, i, a) - (true_position(t, s.first, end, a) - shift));
    err = e > err ? e : err;
  };
  for (uint32_t k = s.first; k <= end; ++k) check(t.magnitude[k]);
  check(((long double)p.last[i] - (long double)p.intercept[i]) / (long double)p.rate[i]);
  // fp32 roundings of the kernel, each at most 2^-24 of a result below `big` (w is monotonic in a,
  // pos and v stay below end + 1): w (carried with slope max(1, stretch)), w - min(w, last) (times
  // stretch), pos, v; and d = ceil(v) - v.
  const double w_max = double(w_end) > double(end) ? double(w_end) : double(end);
  const double u = 1.0 / 16777216.0, big = w_max + 1.0, c = p.stretch[i];
  const double rounding = u * big * ((c > 1 ? c : 1) + c + 2) + u;
  return double(err) + 1e-12 + rounding;
}

// The model is fitted to pos(a) - margin, so that v = pos - margin - u: a lane is decided when
// ceil(v) - v >= 2 margin (one test: v lies at least `margin` from the integers), and ceil(v) is
// then the level.
StochasticPlan build_stochastic_plan(const detail::QuantTable& t) {
  const std::vector<Segment> segs = fewest_runs(t);
  if (segs.size() > kMaxSegments || segs.empty() || segs[0].first != 0) return StochasticPlan{};
  // The reference's own roundings: it takes the upper level iff fl(a - lo) > fl(u * fl(hi - lo)),
  // that is iff (a - lo) / (hi - lo) > u (1 + eta) with |eta| < 3.0001 * 2^-24.
  const double reference = 3.0001 / 16777216.0;
  for (float margin = 1.0f / 65536; margin <= 1.0f / 1024; margin *= 2) {
    StochasticPlan p{};
    std::vector<uint32_t> starts;
    bool fits = true;
    for (size_t i = 0; i < segs.size() && fits; ++i) {
      const uint32_t end = i + 1 < segs.size() ? segs[i + 1].first : t.top;
      const double e = fit_stochastic_segment(t, segs[i], end, int(i), margin, p);
      fits = e >= 0 && e + reference < margin;
      starts.push_back(i == 0 ? 0u : float_bits(t.magnitude[segs[i].first]));
    }
    if (!fits) continue;
    p.margin = margin;
    p.usable =
        fill_group_table(starts, detail::kOneBits, &p.group_offset, p.group_segment, p.next_below);
    return p;
  }
  return StochasticPlan{};
}

}  // namespace

const SegmentPlan& segment_plan(const detail::QuantTable& t) {
  return cached_plan<SegmentPlan, build_segment_plan>(t);
}

const StochasticPlan& stochastic_plan(const detail::QuantTable& t) {
  return cached_plan<StochasticPlan, build_stochastic_plan>(t);
}

}  // namespace codec
}  // namespace octet
