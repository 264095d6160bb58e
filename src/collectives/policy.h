// The `auto` policy's machinery (octet/policy.h says what it decides): the measured cost curves
// of each operation on a Comm, their corrections from observed call times, and the routing of a
// call to the compressed algorithm, Octet's uncompressed path, or the transport's own collective.
#pragma once

#include <array>
#include <cstdint>
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
  static constexpr int kBuckets = 64;  // log2 of the fp32 bytes
  // Observed calls are judged by the median of their times, as the start-up measurement judges
  // its calls: on ranks sharing cores a call either finds its peers on a core or waits for them,
  // and the fastest of a few calls then prices a path by its lucky calls (a 2 KiB compressed
  // allreduce of 4 local ranks timed 39 us at its fastest and 77 on average, the plain one 45 and
  // 51, and `auto` compressed that size at 0.67x of fp32's speed). Between two agreements the
  // first kMaxSamples calls per bucket and path are timed (reading the clock is a cost on small
  // calls); their median counts once there are kMinSamples (fewer count only where they put the
  // path more than kGrossError away from its estimate, as a wildly wrong seed is, and are at least
  // kGrossMinSamples, each that far away the same way). Samples too few to count are kept for
  // the next agreement: for large calls the agreements of the byte schedule come every call or
  // two. A path's first call in a bucket is not a sample at all, and a single call never counts:
  // a first call of a size may be cold. MPI's first 128 MiB allreduce of 4 local ranks faults in
  // its temporary buffers and took 2.4 s against 0.09-0.2 s for the next ones; counted alone, it
  // priced the plain path at 1.1-2.6 s for the rest of the run, and `auto` compressed 128 MiB at
  // 0.77-0.80x of fp32's speed; as one of three, at 0.18-0.23 s.
  static constexpr int kMinSamples = 3;
  static constexpr int kMaxSamples = 8;
  static constexpr double kGrossError = 4.0;
  static constexpr int kGrossMinSamples = 2;
  // A bucket whose calls took one path tries another for kExploreCalls calls (their median
  // counts) per agreement interval where the estimates put it within this factor (further apart:
  // once the interval is kPolicySyncMaxCalls long), so that a path that the calibration under
  // load, or a seeded model, made look too slow is measured again. The other path is the other
  // of compressed or not; for a compressed allreduce that could take either algorithm, every
  // other exploring call tries the other algorithm instead (the first, the third ...). A bucket's
  // first counted samples of one of compressed or not, where the other has none yet, explore the
  // other at once (whatever the schedule, but only within this factor: explore_near), so that
  // both are judged on observed calls early.
  static constexpr double kExploreWithin = 2.0;
  static constexpr uint8_t kExploreCalls = 3;
  // A call's paths: plain, compressed with the flat algorithm, compressed with the hierarchical
  // allreduce (its curve is empty where the Comm's hosts do not allow it).
  enum Path { kPlain = 0, kFlat = 1, kHierarchical = 2, kPaths = 3 };
  template <typename T>
  using PerBucket = std::array<std::array<T, kBuckets>, kPaths>;
  struct Curves {
    std::array<CostCurve, kPaths> curve;
    PerBucket<double> factor;    // observed / curve, agreed; 1 until then
    PerBucket<bool> observed{};  // factor is from observed calls (not the curve's 1)
    PerBucket<std::array<float, kMaxSamples>> samples{};  // observed / curve, not yet agreed
    PerBucket<int> calls{};                               // samples held
    // A path's first call in the bucket has been seen: it is not a sample (kGrossMinSamples).
    // Where that call explored, it does not count against the exploring calls either.
    PerBucket<bool> warm{};
    std::array<uint8_t, kBuckets> explore{};  // calls left to explore, set by an agreement
    // The exploring was set by a first evidence (not the call schedule): only where the estimates
    // are within kExploreWithin, also once the interval is at its longest. The byte schedule's
    // agreements double the interval too, so it is often at its longest by the time a job's
    // large calls start, and a row of a dozen 64 MiB calls over 1 Gbit/s that explored the plain
    // path (4x slower) 3 times ran at 1.9x instead of 4x.
    std::array<bool, kBuckets> explore_near{};
    bool plain_observed(int b) const { return observed[kPlain][b]; }
    bool compressed_observed(int b) const {
      return observed[kFlat][b] || observed[kHierarchical][b];
    }
    // Whether an agreement has folded observed times into bucket b. The first call of a size
    // whose bucket has none, where the two paths' estimates are within kExploreWithin, brings the
    // next agreement forward to kPolicySyncCalls calls away and restarts the doubling from there:
    // a size that a job starts calling late (after thousands of calls of others) is corrected
    // within a few hundred calls, not thousands. (Where the paths are far apart, as for tiny
    // calls, an agreement would cost more than it could change.)
    bool agreed(int b) const { return plain_observed(b) || compressed_observed(b); }
    // Measured at start-up (not seeded): a bucket where agreements have not yet folded in the
    // observed calls of both kinds (compressed and plain) then compresses only for a predicted
    // gain of kUnconfirmedGain. A few calls per size on a loaded machine are off by more than a
    // small gain (a 2 MiB plain allreduce of 4 local ranks measured 1.2 ms, and 0.56-1.3 ms its
    // compressed one, against 0.72-0.79 for both in steady state), and a wrong "compress" is a
    // call slower than fp32, a wrong "plain" only a gain deferred until the observed times are
    // agreed.
    bool measured = false;
  };
  static constexpr double kUnconfirmedGain = 0.85;  // compressed <= 0.85 x plain
  // ... and one where they have, for a predicted gain of kConfirmedGain: where the
  // two paths are close, a few calls' times do not rank them (on 4 local ranks sharing 2 cores a
  // 4 KiB compressed allreduce took 16 us in some calls and 22-26 in the others, the plain one
  // 17 in nearly all; with the corrections keeping the fastest call, `auto` compressed 4 KiB,
  // 1 MiB or 2 MiB at 0.83-0.92 of fp32's speed in 4 of 6 runs, and with this margin 1 row of
  // 138 fell below 0.95, declined: `octet bench allreduce -b 8 -e 32M -f 2`,
  // docs/performance.md). A gain below 10% forgone is a call as fast as fp32's.
  static constexpr double kConfirmedGain = 0.9;

  // A call's estimate and where to record its time.
  struct Decision {
    PolicyEstimate estimate;
    Curves* curves = nullptr;
    int bucket = 0;
    // A compressed allreduce whose algorithm `auto` picks, with both curves known: the estimate
    // of the algorithm not picked (0: none to explore).
    double other_algorithm_seconds = 0;
    bool exploring = false;  // explored() took another path than the estimate's
  };

  // The estimate for a call (measuring first if this key is new; collective).
  // `other_algorithm`, if given: Decision::other_algorithm_seconds.
  PolicyEstimate estimate(Comm& comm, const PolicyKey& key, double fp32_bytes,
                          const CollectiveOptions& options, double* other_algorithm = nullptr);
  // Counts an `auto` call (at the agreed intervals, octet/policy.h, the ranks agree on what they
  // observed) and decides it. A loop repeats its calls, so the last decision is kept until the
  // corrections change.
  Decision decide(Comm& comm, Collective op, double fp32_bytes, const CollectiveOptions& options);
  // For a blocking call that repeats the last decision, which declined and ran the transport's
  // own collective, with nothing due at this call (an agreement, exploring, a time to record):
  // counts it as decide() would and returns that collective; otherwise changes nothing and
  // returns null (decide() then takes the call). Inline, reading one or two cache lines of this
  // object and not the curves: a declined small call costs MPI's latency plus this.
  NativeCollectives* take_quiet_decline(Collective op, double fp32_bytes,
                                        const CollectiveOptions& options) {
    if (!quiet_native_ || !repeats_last(op, fp32_bytes, options) || sync_due(fp32_bytes))
      return nullptr;
    ++calls_;  // count_call's count; no agreement is due
    bytes_ += fp32_bytes;
    return quiet_native_;
  }
  // After a blocking call that decide() took: whether the next one like it may take
  // take_quiet_decline (`native`: the collective this one ran, null if not the transport's).
  void settle(NativeCollectives* native);
  // Installs curves for `key` (the same on every rank), replacing any: no measurement follows.
  void seed(const PolicyKey& key, Curves curves);
  // Whether a call's time is still wanted: kMaxSamples per bucket and path between two
  // agreements are enough for their median, and reading the clock is a cost on small calls.
  static bool wants_time(const Decision& d, bool compressed);
  // Records a blocking call's time.
  static void observe(const Decision& d, bool compressed, double seconds);

 private:
  // Whether a call is what the last decision was made for (the options as given; of the codec's,
  // the fields that the policy's key and validate_options read).
  bool repeats_last(Collective op, double fp32_bytes, const CollectiveOptions& options) const {
    const CodecOptions& a = options.codec;
    return last_valid_ && fp32_bytes == last_bytes_ && op == last_op_ && a.type == last_type_ &&
           a.block_size == last_block_size_ && a.stochastic == last_stochastic_ &&
           a.mantissa_exponent_offset == last_mantissa_offset_ &&
           options.allreduce_algorithm == last_algorithm_;
  }
  Decision explored(Decision d);
  // Whether the call of fp32_bytes after those counted is due for an agreement.
  bool sync_due(double fp32_bytes) const {
    return calls_ + 1 >= next_sync_ || bytes_ + fp32_bytes >= next_sync_bytes_;
  }
  void count_call(Comm& comm, double fp32_bytes);
  void restart_agreements();
  // explore: buckets with calls explore next (the call schedule's agreements; the byte
  // schedule's only fold in what was observed).
  void sync(Comm& comm, bool explore);
  // First, together, what take_quiet_decline reads. settle()'s verdict on the last decision
  // (cleared wherever it may change), and what that decision was made for (the options as given,
  // unvalidated).
  NativeCollectives* quiet_native_ = nullptr;
  bool last_valid_ = false;
  bool last_stochastic_ = false;
  Collective last_op_ = Collective::kAllreduce;
  DataType last_type_ = DataType::kDynamic;
  CollectiveOptions::AllreduceAlgorithm last_algorithm_{};
  uint32_t last_block_size_ = 0;
  int last_mantissa_offset_ = 0;
  double last_bytes_ = 0;
  // The agreement schedule, in calls and in fp32 bytes (the same on every rank: every rank makes
  // the same calls). The byte interval is the call interval's multiple of kPolicySyncBytes.
  int64_t calls_ = 0, next_sync_ = kPolicySyncCalls;
  double bytes_ = 0, next_sync_bytes_ = kPolicySyncBytes;
  int64_t interval_ = kPolicySyncCalls;
  double byte_interval() const {
    return kPolicySyncBytes * static_cast<double>(interval_ / kPolicySyncCalls);
  }
  std::map<PolicyKey, Curves> curves_;
  Decision last_;
};

// Curves with factors of 1 and nothing observed.
PolicyState::Curves fresh_curves();

// Every rank's `values` (the same length everywhere), then elementwise the median over the ranks
// that hold one (> 0): the same numbers on every rank. Collective.
void agree(Comm& comm, std::vector<double>& values);

// One call as the transport's own collective would take it.
struct NativeCall {
  Collective op;
  const float* in;
  float* out;
  size_t count;
  int root = -1;
};

// Whether a call compresses under options.policy (collective for `auto`: see decide_policy).
PolicyState::Decision decide(Comm& comm, Collective op, size_t count,
                             const CollectiveOptions& options);

// The fp32 bytes the cost curves are indexed by (the message a rank contributes).
double policy_bytes(const NativeCall& call, int ranks);

// A call's route: compressed, Octet's uncompressed path (options with min_bytes raised), or the
// transport's own collective.
class Route {
 public:
  Route(Comm& comm, const NativeCall& call, const CollectiveOptions& options);
  bool native() const { return native_ != nullptr; }
  bool compressed() const { return compressed_; }
  bool timed() const { return decision_.curves && PolicyState::wants_time(decision_, compressed_); }
  // The options Octet's own path runs with (a copy only where they change).
  CollectiveOptions options() const;
  void run_native() const;
  std::shared_ptr<Operation> start_native() const;
  void observe(double seconds) const;
  void settle() const;  // after a blocking call: PolicyState::settle

 private:
  Comm& comm_;
  NativeCall call_;
  const CollectiveOptions& options_;  // the caller's: a Route lives for one call only
  PolicyState::Decision decision_;
  bool compressed_ = false;
  NativeCollectives* native_ = nullptr;  // the transport's collective where the call takes it
};

// A non-owning reference to the caller's factory of the compressed operation: no copy and no
// allocation per call, unlike std::function (the lambda outlives the call it is passed to).
class MakeOperation {
 public:
  template <typename F>
  MakeOperation(const F& f)  // NOLINT: implicit, like std::function
      : object_(&f),
        call_([](const void* o, const CollectiveOptions& options) -> std::shared_ptr<Operation> {
          return (*static_cast<const F*>(o))(options);
        }) {}
  std::shared_ptr<Operation> operator()(const CollectiveOptions& options) const {
    return call_(object_, options);
  }

 private:
  const void* object_;
  std::shared_ptr<Operation> (*call_)(const void*, const CollectiveOptions&);
};
// The public entry points: a non-blocking call and a blocking one (timed for `auto`).
Request start_routed(Comm& comm, const NativeCall& call, const CollectiveOptions& options,
                     const MakeOperation& make);
void run_routed(Comm& comm, const NativeCall& call, const CollectiveOptions& options,
                const MakeOperation& make);

}  // namespace detail
}  // namespace octet
