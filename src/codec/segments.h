// A code table seen as a few runs of equally spaced levels ("segments"), for the SIMD encoders
// that compute a level with a multiply instead of looking it up in the bucket table
// (simd_encode.cc): a gather per vector is slow on AMD, a handful of in-register lookups is not.
//
// For |xn| = a, the segment s comes from a's exponent (a 16-entry table of groups of 2 binades
// holding at most one segment boundary each) and one exact integer compare with that boundary.
// Inside the segment, z = min(a * rate[s] + intercept[s], z_max[s]) (one fused multiply-add) puts
// the threshold between levels L-1 and L at about z = L + epsilon, so the level is floor(z).
// Rounding makes z only approximately right near a threshold: segment_plan proves, for every
// threshold T of the table, that elements below T have z < L + 2 epsilon and elements at or above
// it z >= L, so a level is exact unless frac(z) < 2 epsilon; the encoder sends every group of
// vectors with such an element (about one element in 2000) through the exact bucket lookup. So the
// arithmetic path gives the bucket lookup's codes for every input, which tests/codec also checks
// over every float in [2^-26, 2]. Elements at or above the last threshold (and NaN) get the top
// level by one more compare.
#pragma once

#include <cmath>
#include <cstdint>

#include "octet/detail/quant_math.h"

namespace octet {
namespace codec {

constexpr int kMaxSegments = 8;  // one 256-bit permute of 32-bit lanes
constexpr int kGroups = 16;      // one byte shuffle
constexpr int kGroupShift = 24;  // group = max((abs_bits >> 24) - group_offset, 0): 2 binades

// The arithmetic inputs of one table. Segment tables have 16 lanes so that 512-bit vectors can
// load them (indices stay below 8).
struct SegmentPlan {
  bool usable;           // false: the table does not fit, use the bucket lookup
  int32_t group_offset;  // see kGroupShift
  int32_t top_below;     // abs_bits > top_below: the top level (bits of the last threshold - 1)
  float epsilon;         // decision margin in units of z (a power of two)
  uint8_t group_segment[kGroups];  // segment at the start of each group (group 0's is 0)
  int32_t next_below[16];  // abs_bits > next_below[s]: one segment further (bits of the next
                           // segment's first threshold - 1; INT32_MAX for the last segment)
  float rate[16];
  float intercept[16];
  float z_max[16];  // (last level of the segment) + 0.75: floor(z) stays inside it
};

// Built once per table and cached (thread-safe; tables live as long as the process).
const SegmentPlan& segment_plan(const detail::QuantTable& t);

// The plan for stochastic rounding (quant_math.h's encode_stochastic): the continuous "position"
// of |xn| = a among the levels, pos(a) = lower + (a - m[lower]) / (m[lower + 1] - m[lower]) (lower:
// the largest level with m[lower] <= a), so that the code is ceil(pos(a) - u) for the uniform u,
// which the reference compares in fp32 as a - m[lower] > u * (m[lower + 1] - m[lower]).
//
// Segments are the same runs of equally spaced levels as for round-to-nearest, but start at their
// first level's magnitude (not at a threshold): segment s covers [m[first], m[next first]) (the
// last one up to 1 inclusive), that is its run's intervals and then the interval up to the next
// run, whose gap differs. With w = fma(a, rate[s], intercept[s]) (about pos(a) - margin inside the
// run),
//   pos' = fma(w - min(w, last[s]), stretch[s], min(w, last[s]))
// also follows the last interval's slope, and v = pos' - u = pos(a) - u - margin. When the table
// is built, every segment's model error (the largest difference of two piecewise-linear functions,
// so checked at every breakpoint, in long double) plus bounds of the kernel's and the reference's
// fp32 roundings must stay below `margin`: then a lane with ceil(v) - v >= 2 margin (pos(a) - u at
// least `margin` from the integers) gets the reference's level ceil(v), and a group of vectors with
// any other lane (2 * margin of the lanes: one in 8192 for the dynamic tree's 2^-14) goes through
// the exact bucket lookup.
struct StochasticPlan {
  bool usable;
  int32_t group_offset;            // as SegmentPlan
  float margin;                    // in units of levels (a power of two)
  uint8_t group_segment[kGroups];  // segment at the start of each group
  int32_t next_below[16];          // abs_bits > next_below[s]: one segment further
  float rate[16];
  float intercept[16];  // includes -margin
  float last[16];       // last level of the run, minus margin
  float stretch[16];    // slope of the interval after the run / slope of the run
};

// Built once per table and cached like segment_plan().
const StochasticPlan& stochastic_plan(const detail::QuantTable& t);

// z of quant_math.h's |xn| = a in segment s, exactly as the SIMD code computes it (with a fused
// multiply-add).
inline float segment_z(const SegmentPlan& p, int s, float a) {
  const float z = std::fma(a, p.rate[s], p.intercept[s]);
  return z < p.z_max[s] ? z : p.z_max[s];
}

}  // namespace codec
}  // namespace octet
