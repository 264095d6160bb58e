// The `auto` policy's cost curves from a calibration: the collective costs of cost.cc at a
// range of sizes, in the units and indexing of octet/policy.h.
#include <cmath>
#include <vector>

#include "octet/error.h"
#include "predictor/predictor.h"

namespace octet {
namespace predictor {
namespace {

Collective model_of(octet::Collective op) {
  switch (op) {
    case octet::Collective::kAllreduce:
      return Collective::kAllreduce;
    case octet::Collective::kReduceScatter:
      return Collective::kReduceScatter;
    case octet::Collective::kAllgather:
      return Collective::kAllgather;
    case octet::Collective::kBroadcast:
      return Collective::kBcast;
  }
  return Collective::kAllreduce;
}

// The hierarchical allreduce of `bytes` (hierarchical.h's steps as rings).
double hierarchical_time(const Cluster& c, const CodecCost& codec, double bytes, int ranks,
                         int hosts) {
  const int local = ranks / hosts;
  return collective_time(Collective::kReduceScatter, bytes, local, c.intra, nullptr) +
         collective_time(Collective::kAllreduce, bytes / local, hosts, c.inter, &codec) +
         collective_time(Collective::kAllgather, bytes, local, c.intra, nullptr);
}

}  // namespace

ScenarioParts load_calibration(const std::string& path) {
  ScenarioParts parts = load_scenario_file(path);
  if (!parts.has_cluster || !parts.has_codec)
    throw Error(
        ErrorCode::kInvalidArgument,
        path + ": a calibration needs [cluster] and [codec] (octet calibrate under mpirun)");
  return parts;
}

PolicyCurves policy_curves(const Cluster& cluster, const CodecCost& codec, octet::Collective op,
                           int ranks, int hosts) {
  if (ranks < 1 || hosts < 1 || hosts > ranks)
    throw Error(ErrorCode::kInvalidArgument, "policy_curves: need 1 <= hosts <= ranks");
  const Link& link = hosts > 1 ? cluster.inter : cluster.intra;
  const Collective model = model_of(op);
  // The model's size is the whole tensor: reduce_scatter's input, allgather's output.
  const bool per_rank =
      op == octet::Collective::kReduceScatter || op == octet::Collective::kAllgather;
  const bool hierarchical = op == octet::Collective::kAllreduce && hosts > 1 && hosts < ranks;
  PolicyCurves curves;
  for (int e = 6; e <= 32; ++e) {
    const double bytes = std::ldexp(1.0, e), whole = per_rank ? bytes * ranks : bytes;
    curves.bytes.push_back(bytes);
    curves.plain_seconds.push_back(collective_time(model, whole, ranks, link, nullptr));
    curves.compressed_seconds.push_back(collective_time(model, whole, ranks, link, &codec));
    if (hierarchical)
      curves.hierarchical_seconds.push_back(hierarchical_time(cluster, codec, bytes, ranks, hosts));
  }
  return curves;
}

std::vector<PolicyCurveSet> policy_curve_sets(const Cluster& cluster, const CodecCost& codec,
                                              const CodecOptions& setting, int ranks, int hosts) {
  std::vector<PolicyCurveSet> sets;
  for (octet::Collective op : {octet::Collective::kAllreduce, octet::Collective::kReduceScatter,
                               octet::Collective::kAllgather, octet::Collective::kBroadcast}) {
    PolicyCurveSet s;
    s.op = op;
    s.codec.type = setting.type;
    s.codec.block_size = setting.block_size;
    s.codec.stochastic = setting.stochastic;
    s.ranks = ranks;
    s.hosts = hosts;
    s.curves = policy_curves(cluster, codec, op, ranks, hosts);
    sets.push_back(s);
  }
  return sets;
}

}  // namespace predictor
}  // namespace octet
