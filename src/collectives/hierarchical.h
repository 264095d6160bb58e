// Hierarchical allreduce, for jobs with several ranks per host (docs/algorithms.md,
// "Hierarchical allreduce"): exact fp32 reduce-scatter inside each host, the flat compressed
// allreduce between hosts (local rank i of every host on slice i, so every core encodes), then an
// exact allgather inside each host. Each element is still quantized at most twice and every rank
// ends bit-identical. It talks only through the Transport of the whole communicator: the
// sub-groups are peer lists, and its phases use the call's own tags.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "octet/collectives.h"

namespace octet {
namespace detail {

class Operation;

// Where ranks live, from Transport::host_of, the same on every rank: hosts are numbered in the
// order of their lowest rank, the ranks of a host (its local ranks) in rank order.
struct HostLayout {
  int hosts = 1;             // H
  int slices = 1;            // S: the fewest ranks on any host; local ranks 0..S-1 each own a slice
  int host = 0;              // this rank's host index
  int local = 0;             // this rank's index on its host
  std::vector<int> members;  // the ranks of this rank's host, ascending
  std::vector<int> peers;    // by host index: local rank `local` of every host (when local < S)

  static HostLayout of(const Transport& transport);
  bool owner() const { return local < slices; }
};

// Whether comm's hosts make the hierarchical algorithm a candidate: more than one host, and more
// than one rank on some host (otherwise it is the flat algorithm with extra steps).
bool hierarchical_fits(const Comm& comm);

// Whether allreduce takes the hierarchical algorithm for this call (`options` as routed: a call
// below min_bytes is uncompressed). Ranks that would decide differently (different options or
// counts) disagree on the descriptor too, so they fail together with kMismatch. The `auto` policy
// forces kFlat or kHierarchical from its cost curves (policy.h); otherwise kAuto follows the
// topology alone (hierarchical_fits).
bool use_hierarchical(const Comm& comm, size_t count, const CollectiveOptions& options);

std::shared_ptr<Operation> make_hierarchical_allreduce(Comm& comm, const float* in, float* out,
                                                       size_t count,
                                                       const CollectiveOptions& options);

}  // namespace detail
}  // namespace octet
