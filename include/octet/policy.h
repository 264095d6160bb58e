// When to compress: the `auto` policy decides per call, from measurement, whether compressing
// a collective beats sending it as plain fp32 (docs/algorithms.md, "The auto policy").
//
// On the first `auto` call of an operation on a Comm, every rank measures, together, the plain
// fp32 call (the transport's own collective where it has one, e.g. MPI's tuned algorithms) and
// the compressed call at a few sizes up to 8 MiB; the times (per rank the plain path's fastest
// call and the compressed path's median call, then the median over ranks) form two curves,
// interpolated linearly between the sizes and extrapolated with the last segment's slope. A call
// more than twice the largest size measured first measures the sizes 4x apart up to it (to 128 MiB;
// collective like the first measurement). A call compresses when the compressed curve is below the
// plain one at its size. An allreduce on a Comm whose hosts allow the hierarchical algorithm
// (several hosts, several ranks on some) has a curve for each algorithm, and a compressed call
// takes the lower one (CollectiveOptions::allreduce_algorithm may force one). set_policy_curves
// and load_policy_curves seed the curves instead of measuring them. Blocking calls then record
// their time, and after kPolicySyncCalls `auto` calls or kPolicySyncBytes of them (then twice as
// many each time, up to kPolicySyncMaxCalls) the ranks agree on what they observed and correct the
// curves per size bucket. Every input of the decision is agreed (the same medians), so every rank
// decides the same for the same call: no rank compresses a call that another passes through.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "octet/codec.h"
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
// "allreduce", "reduce_scatter", "allgather", "broadcast".
OCTET_API const char* collective_name(Collective op);

// `auto`'s view of one call: whether it compresses and the two predicted times.
struct PolicyEstimate {
  bool compress = false;
  double plain_seconds = 0, compressed_seconds = 0;
  // allreduce: the compressed call takes the hierarchical algorithm (several ranks on several
  // hosts, where its curve is below the flat one's, or when CollectiveOptions forces it).
  bool hierarchical = false;
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

// A cost model for `auto`, for one collective with one codec setting: the time of a call against
// its fp32 bytes (indexed as estimate_policy's count: allreduce the vector, reduce_scatter and
// allgather per rank, broadcast the buffer), at ascending sizes; linear between them, the first
// time below the first size, the last segment's slope above the last (the measured curves' rule).
struct PolicyCurves {
  std::vector<double> bytes;               // > 0, strictly ascending
  std::vector<double> plain_seconds;       // the uncompressed call; finite, >= 0
  std::vector<double> compressed_seconds;  // the compressed call (allreduce: flat)
  // allreduce only, optional (empty: unknown, so `auto` keeps the flat algorithm): the
  // hierarchical algorithm, used where the Comm spans several hosts with several ranks on some.
  std::vector<double> hierarchical_seconds;
};

// Seeds `auto`'s cost model on `comm` for `op` with `codec`'s setting (type, block, rounding), as
// derived from an `octet calibrate` file (octet bench --calibration) or by the application:
// calls of that kind then skip the start-up measurement; the corrections from observed times
// still apply. Collective: every rank calls it, in the same order relative to the collectives.
// The ranks agree on the curves (each rank's resampled at fixed sizes, then the median over the
// ranks), so ranks given different curves still hold identical ones and decide alike. Invalid
// curves on any rank (lengths that differ, sizes not ascending, negative or non-finite values)
// throw kInvalidArgument on every rank, naming that rank.
OCTET_API void set_policy_curves(Comm& comm, Collective op, const CodecOptions& codec,
                                 const PolicyCurves& curves);

// One set of a policy-curve file: curves for one collective and codec setting on a Comm of
// `ranks` ranks over `hosts` hosts (Transport::host_of).
struct PolicyCurveSet {
  Collective op = Collective::kAllreduce;
  CodecOptions codec;  // type, block_size (0: the type's default) and stochastic count
  int ranks = 0, hosts = 0;
  PolicyCurves curves;
};

// The policy-curve file (docs/algorithms.md, "The auto policy"), a line-based text format:
// "octet-policy-curves 1", then per set a line "set <collective> <type> block=<B> stochastic=<0|1>
// ranks=<P> hosts=<H>" followed by its points "<fp32 bytes> <plain s> <compressed s>
// [<hierarchical s>]"; blank lines and lines starting with '#' are comments. format writes one;
// parse reads one strictly (every rule of set_policy_curves, the codec's rules, bounded sizes and
// counts, no duplicate sets) and throws kInvalidArgument "<origin>:<line>: <what is wrong>".
OCTET_API std::string format_policy_curves(const std::vector<PolicyCurveSet>& sets);
OCTET_API std::vector<PolicyCurveSet> parse_policy_curves(std::string_view text,
                                                          const std::string& origin);

// Seeds the cost model from a policy-curve file (docs/algorithms.md, "The auto policy"; written by
// `octet predict curves` from an `octet calibrate` file): rank 0 reads it and sends its bytes to
// the others, so every rank holds rank 0's curves. Only the sets written for comm's rank and host
// counts apply; the other calls measure as before. Collective, as set_policy_curves. A file that
// rank 0 cannot read, or that breaks the format, throws kInvalidArgument on every rank with one
// line: "<path>:<line>: <what is wrong>".
OCTET_API void load_policy_curves(Comm& comm, const std::string& path);

// `auto` calls before the first agreement on observed times; the interval doubles after each, up
// to kPolicySyncMaxCalls, so that the agreement (one small all-to-all) costs little per call.
constexpr int kPolicySyncCalls = 64;
constexpr int kPolicySyncMaxCalls = 4096;
// Or fp32 bytes of `auto` calls, whichever comes first, doubling alike (up to 64x): large calls
// are corrected within a few calls, while an agreement still costs under 1% of the calls' time
// (16 MiB of allreduce take milliseconds even over shared memory).
constexpr double kPolicySyncBytes = 16.0 * 1024 * 1024;

}  // namespace octet
