// When to compress: the `auto` policy decides per call, from measurement, whether compressing
// a collective beats sending it as plain fp32 (docs/algorithms.md, "The auto policy").
//
// On the first `auto` call of an operation on a Comm, every rank measures, together, the plain
// fp32 call (the transport's own collective where it has one, e.g. MPI's tuned algorithms) and
// the compressed call at a few sizes; the times (medians over calls and ranks) form two curves,
// interpolated linearly between the sizes and extrapolated with the last segment's slope. A call
// compresses when the compressed curve is below the plain one at its size. Blocking calls then
// record their time, and after kPolicySyncCalls `auto` calls (then twice as many each time, up to
// kPolicySyncMaxCalls) the ranks agree on what they observed and correct the curves per size
// bucket. Every input of the decision is agreed (the same medians),
// so every rank decides the same for the same call: no rank compresses a call that another passes
// through.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "octet/export.h"

namespace octet {

class Comm;
struct CollectiveOptions;

enum class Policy : uint8_t {
  kAuto = 0,    // compress where the measured cost model predicts a gain
  kAlways = 1,  // compress every call at or above min_bytes
  kNever = 2,   // never compress (the transport's own fp32 collective where it has one)
};

// "auto", "always", "never"; parse_policy throws kInvalidArgument for anything else.
OCTET_API const char* policy_name(Policy policy);
OCTET_API Policy parse_policy(std::string_view name);

enum class Collective : uint8_t { kAllreduce, kReduceScatter, kAllgather, kBroadcast };

// `auto`'s view of one call: whether it compresses and the two predicted times.
struct PolicyEstimate {
  bool compress = false;
  double plain_seconds = 0, compressed_seconds = 0;
};

// What `options.policy` decides for a call of `count` elements (allreduce: the vector;
// reduce_scatter and allgather: per rank; broadcast: the buffer). Collective on the first call per
// operation and Comm (the measurement); throws like the collectives for invalid options.
OCTET_API PolicyEstimate estimate_policy(Comm& comm, Collective op, size_t count,
                                         const CollectiveOptions& options);

// Decides a call as the collectives would and counts it as one of the Comm's `auto` calls
// (collective like them: the measurement on first use, then the agreements on observed times). For
// wrappers that run the plain call themselves, such as the PMPI shim: call it on every rank for
// the same calls, in the same order as the collectives, and never also start the collective with
// policy `auto` (that would count the call twice).
OCTET_API bool decide_policy(Comm& comm, Collective op, size_t count,
                             const CollectiveOptions& options);

// `auto` calls before the first agreement on observed times; the interval doubles after each, up
// to kPolicySyncMaxCalls, so that the agreement (one small all-to-all) costs little per call.
constexpr int kPolicySyncCalls = 64;
constexpr int kPolicySyncMaxCalls = 4096;

}  // namespace octet
