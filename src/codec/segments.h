// A code table seen as a few runs of equally spaced levels ("segments"), for the SIMD encoders
// that compute a level with a multiply instead of looking it up in the bucket table (simd.cc): a
// gather per vector is slow on AMD, a handful of in-register lookups is not.
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

// z of quant_math.h's |xn| = a in segment s, exactly as the SIMD code computes it (with a fused
// multiply-add).
inline float segment_z(const SegmentPlan& p, int s, float a) {
  const float z = std::fma(a, p.rate[s], p.intercept[s]);
  return z < p.z_max[s] ? z : p.z_max[s];
}

}  // namespace codec
}  // namespace octet
