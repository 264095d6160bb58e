// The `auto` policy's machinery (octet/policy.h says what it decides): the measured cost curves
// of each operation on a Comm, their corrections from observed call times, and the routing of a
// call to the compressed algorithm, Octet's uncompressed path, or the transport's own collective.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "octet/collectives.h"
#include "octet/native_collectives.h"
#include "octet/policy.h"

namespace octet {
namespace detail {

class Operation;

// Time against fp32 bytes, measured at a few sizes: linear between them, the first time below
// the first size, the last segment's slope above the last (the predictor's rule for measured
// links, docs/predictor.md).
struct CostCurve {
  std::vector<double> bytes, seconds;
  double at(double fp32_bytes) const;
};

// The calls whose cost is measured together: one operation with one codec setting.
using PolicyKey = std::tuple<Collective, int /*type*/, bool /*stochastic*/, uint32_t /*block*/>;

class PolicyState {
 public:
  static constexpr int kBuckets = 64;         // log2 of the fp32 bytes
  static constexpr int kMinObservations = 8;  // calls in a bucket before they count
  struct Curves {
    CostCurve plain, compressed;
    std::array<double, kBuckets> plain_factor, compressed_factor;  // observed / curve, agreed
    std::array<double, kBuckets> plain_seen{}, compressed_seen{};  // min ratio since the last sync
    std::array<int, kBuckets> plain_calls{}, compressed_calls{};
  };

  // The estimate for a call (measuring first if this key is new; collective).
  PolicyEstimate estimate(Comm& comm, const PolicyKey& key, double fp32_bytes,
                          const CollectiveOptions& options);
  // Counts an `auto` call and, at the agreed intervals (octet/policy.h), agrees on what the ranks
  // observed.
  void count_call(Comm& comm);
  // Records a blocking call's time.
  void observe(const PolicyKey& key, double fp32_bytes, bool compressed, double seconds);

 private:
  void sync(Comm& comm);
  std::map<PolicyKey, Curves> curves_;
  int64_t calls_ = 0, next_sync_ = kPolicySyncCalls, interval_ = kPolicySyncCalls;
};

// One call as the transport's own collective would take it.
struct NativeCall {
  Collective op;
  const float* in;
  float* out;
  size_t count;
  int root = -1;
};

// Whether a call compresses under options.policy (collective for `auto`: see decide_policy).
bool decide(Comm& comm, Collective op, size_t count, const CollectiveOptions& options,
            PolicyKey* key);

// The fp32 bytes the cost curves are indexed by (the message a rank contributes).
double policy_bytes(const NativeCall& call, int ranks);

// A call's route: compressed, Octet's uncompressed path (options with min_bytes raised), or the
// transport's own collective.
class Route {
 public:
  Route(Comm& comm, const NativeCall& call, const CollectiveOptions& options);
  bool native() const { return native_; }
  bool compressed() const { return compressed_; }
  const CollectiveOptions& options() const { return options_; }
  void run_native() const;
  std::shared_ptr<Operation> start_native() const;
  void observe(double seconds) const;

 private:
  void finish_native() const;
  Comm& comm_;
  NativeCall call_;
  CollectiveOptions options_;
  PolicyKey key_;
  bool auto_ = false, compressed_ = false, native_ = false;
};

using MakeOperation = std::function<std::shared_ptr<Operation>(const CollectiveOptions&)>;
// The public entry points: a non-blocking call and a blocking one (timed for `auto`).
Request start_routed(Comm& comm, const NativeCall& call, const CollectiveOptions& options,
                     const MakeOperation& make);
void run_routed(Comm& comm, const NativeCall& call, const CollectiveOptions& options,
                const MakeOperation& make);

}  // namespace detail
}  // namespace octet
