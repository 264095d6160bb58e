// The `auto` policy: measured cost curves, their corrections, and the routing of each call.
#include "collectives/policy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "collectives/comm_core.h"
#include "collectives/hierarchical.h"
#include "collectives/operation.h"
#include "octet/detail/quoted.h"

namespace octet {
namespace detail {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int bucket_of(double fp32_bytes) {  // floor(log2), by the exponent: no libm call per call
  int exponent = 0;
  std::frexp(std::max(1.0, fp32_bytes), &exponent);
  return std::clamp(exponent - 1, 0, PolicyState::kBuckets - 1);
}

// The lower median of v[0, n): the middle one, of two the smaller (the faster of two calls).
template <typename T>
T lower_median(T* v, size_t n) {
  std::nth_element(v, v + (n - 1) / 2, v + n);
  return v[(n - 1) / 2];
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Every rank's values, then elementwise the median over the ranks that have one (> 0): computed
// from the same inputs in the same order on every rank, so every rank holds the same numbers,
// and one rank's hiccup does not move them.
class AgreeMedian : public Operation {
 public:
  AgreeMedian(Comm& comm, std::vector<double>& values)
      : comm_(comm), values_(values), in_(static_cast<size_t>(comm.size())) {
    const int me = comm.rank(), p = comm.size(), tag = core(comm).collective_tag_base();
    const size_t bytes = values.size() * sizeof(double);
    mine_ = std::make_shared<std::vector<double>>(values);
    for (int i = 1; i < p; ++i) {
      const int peer = (me + i) % p;
      in_[peer].resize(values.size());
      pending_.push_back(comm.transport().irecv(in_[peer].data(), bytes, peer, tag));
    }
    for (int i = 1; i < p; ++i) {
      const int peer = (me + p - i) % p;
      pending_.push_back(comm.transport().isend(mine_->data(), bytes, peer, tag, mine_));
    }
  }

 private:
  bool advance() override {
    if (!gate_open(pending_)) return false;
    in_[comm_.rank()] = *mine_;
    for (size_t i = 0; i < values_.size(); ++i) {
      std::vector<double> seen;
      for (const auto& rank : in_)
        if (rank[i] > 0) seen.push_back(rank[i]);
      values_[i] = median(seen);
    }
    return true;
  }
  void block() override {
    for (auto& r : pending_)
      if (r) {
        r->wait();
        r.reset();
        return;
      }
  }
  Comm& comm_;
  std::vector<double>& values_;
  std::shared_ptr<std::vector<double>> mine_;
  std::vector<std::vector<double>> in_;
  std::vector<TransportRequestPtr> pending_;
};

}  // namespace

void agree(Comm& comm, std::vector<double>& values) {
  auto op = std::make_shared<AgreeMedian>(comm, values);
  core(comm).start(op);
  core(comm).complete(*op);
  if (op->error()) std::rethrow_exception(op->error());
}

PolicyState::Curves fresh_curves() {
  PolicyState::Curves c;
  for (auto& f : c.factor) f.fill(1);
  return c;
}

namespace {

// The public blocking call for `op`.
void call(Comm& comm, Collective op, const float* in, float* out, size_t count,
          const CollectiveOptions& o) {
  switch (op) {
    case Collective::kAllreduce:
      return allreduce(comm, in, out, count, o);
    case Collective::kReduceScatter:
      return reduce_scatter(comm, in, out, count, o);
    case Collective::kAllgather:
      return allgather(comm, in, out, count, o);
    case Collective::kBroadcast:
      return broadcast(comm, out, count, 0, o);
  }
}

std::vector<float> calibration_input(Comm& comm, Collective op, size_t count) {
  const size_t p = static_cast<size_t>(comm.size());
  std::vector<float> in(op == Collective::kReduceScatter ? count * p : count);
  uint64_t state = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(comm.rank() + 1);
  for (float& x : in) {  // positive, so that every type (dynamic_unsigned too) takes them
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(state >> 40) * 0x1p-24f;
  }
  return in;
}

// This rank's time of `count` on each path, timed alternately (after one untimed call of each),
// so that a burst of load on a shared machine hits every path alike: for the plain path (the
// first) the fastest call, for the compressed ones the median call (the lower one of an even
// number). On ranks sharing cores the fastest of a few calls prices a path by its lucky calls,
// and a path that exchanges more messages per call (the compressed one, for small calls) is
// lucky less often (PolicyState::kMinSamples); a wrong "compress" is a call slower than fp32, a
// wrong "plain" a gain deferred until observed calls of both paths are agreed, so the start-up
// measurement compresses only a gain that holds against the plain path's lucky calls.
std::vector<double> time_paths(Comm& comm, Collective op, size_t count,
                               const std::vector<CollectiveOptions>& paths) {
  const std::vector<float> in = calibration_input(comm, op, count);
  std::vector<float> out(op == Collective::kAllgather ? count * comm.size() : in.size());
  // A call of up to 2 MiB of fp32 takes a millisecond or less over shared memory, which a rank
  // losing its core for a time slice inflates several times over (a 2 MiB plain allreduce of 4
  // local ranks measured 1.2 ms in 3 samples against 0.75 in steady state): more samples there.
  // Above 2M elements (the extension's sizes) a call takes tens of milliseconds or more, which a
  // time slice hardly moves.
  const int iters = count <= 16384 ? 15 : count <= 524288 ? 7 : count <= 2097152 ? 3 : 2;
  std::vector<std::vector<double>> times(paths.size());
  for (int i = -1; i < iters; ++i)
    for (size_t path = 0; path < paths.size(); ++path) {
      const double t0 = now();
      call(comm, op, in.data(), out.data(), count, paths[path]);
      if (i >= 0) times[path].push_back(now() - t0);
    }
  std::vector<double> priced;
  for (auto& t : times)
    priced.push_back(priced.empty() ? *std::min_element(t.begin(), t.end())
                                    : lower_median(t.data(), t.size()));
  return priced;
}

// The options of each path measured for `key`: plain, flat compressed and, for an allreduce on a
// Comm whose hosts allow it, hierarchical compressed.
std::vector<CollectiveOptions> measured_paths(const Comm& comm, Collective op,
                                              const CollectiveOptions& options) {
  using Algorithm = CollectiveOptions::AllreduceAlgorithm;
  CollectiveOptions plain = options, compressed = options;
  plain.policy = Policy::kNever;
  compressed.policy = Policy::kAlways;
  compressed.min_bytes = 0;
  compressed.error_feedback_key.clear();  // measuring must not touch the residuals
  compressed.allreduce_algorithm = Algorithm::kFlat;
  std::vector<CollectiveOptions> paths = {plain, compressed};
  if (op == Collective::kAllreduce && hierarchical_fits(comm)) {
    compressed.allreduce_algorithm = Algorithm::kHierarchical;
    paths.push_back(compressed);
  }
  return paths;
}

// A larger call never takes less time than a smaller one: a point above the next one is a
// measurement that load inflated, and the next one bounds it.
void make_monotone(std::vector<double>& seconds) {
  for (size_t i = seconds.size(); i-- > 1;) seconds[i - 1] = std::min(seconds[i - 1], seconds[i]);
}

// The element counts measured at start-up: 4x apart up to 256K elements (1 MiB of fp32), then
// 512K and 2M. Between two points a curve is a straight line, and a plain call's time bends
// upwards where its buffers outgrow a cache (over shared memory between 1 and 8 MiB, where the
// codec starts to pay): with 1 and 8 MiB alone the line put a 2 MiB plain allreduce of 4 local
// ranks at 1.3 ms against the 0.7-0.9 it takes. The small points cost microseconds each; the
// 2 MiB one about a quarter of the 8 MiB one.
constexpr size_t kMeasuredCounts[] = {16,    64,    256,    1024,   4096,
                                      16384, 65536, 262144, 524288, 2097152};

// Beyond them a measured curve grows where the calls go: a call more than twice the largest
// measured size measures the sizes 4x apart after it, up to this many elements in all (128 MiB
// of fp32), since a plain call's time keeps bending where its buffers outgrow the last-level
// cache: on 4 local ranks 0.66 ms per MiB at 8 MiB, 1.2 at 32 and 128 MiB, so that the slope up
// to 8 MiB put 32 MiB at 20 ms against the 38 it takes and `auto` passed up a 2.2x gain.
constexpr size_t kMaxMeasuredCount = size_t{32} << 20;

size_t per_rank_divisor(const Comm& comm, Collective op) {
  return op == Collective::kReduceScatter || op == Collective::kAllgather
             ? static_cast<size_t>(comm.size())
             : 1;
}

// Appends the times at `counts` (per rank's call; per rank as time_paths prices them, then the
// median over ranks) to the curves of `paths`, measured together by every rank.
void measure_points(Comm& comm, Collective op, const std::vector<size_t>& counts,
                    const std::vector<CollectiveOptions>& paths, PolicyState::Curves& c) {
  std::vector<double> times;
  for (size_t count : counts)
    for (double t : time_paths(comm, op, count, paths)) times.push_back(t);
  agree(comm, times);
  for (size_t path = 0; path < paths.size(); ++path) {
    CostCurve& curve = c.curve[path];
    for (size_t i = 0; i < counts.size(); ++i) {
      curve.bytes.push_back(static_cast<double>(counts[i]) * sizeof(float));
      curve.seconds.push_back(times[paths.size() * i + path]);
    }
    make_monotone(curve.seconds);
  }
}

// The curves of `key`, measured at start-up.
PolicyState::Curves measure(Comm& comm, const PolicyKey& key, const CollectiveOptions& options) {
  const Collective op = std::get<0>(key);
  std::vector<size_t> counts;
  for (size_t total : kMeasuredCounts) {
    const size_t count = std::max<size_t>(1, total / per_rank_divisor(comm, op));
    if (counts.empty() || counts.back() != count) counts.push_back(count);
  }
  PolicyState::Curves c = fresh_curves();
  c.measured = true;
  measure_points(comm, op, counts, measured_paths(comm, op, options), c);
  return c;
}

// Extends measured curves toward a call of fp32_bytes (kMaxMeasuredCount); returns whether it
// did. The same on every rank: the curves' sizes are, and so are the calls. The buckets above
// the old largest size start over (their corrections were made against the old line).
bool extend(Comm& comm, Collective op, const CollectiveOptions& options, double fp32_bytes,
            PolicyState::Curves& c) {
  const std::vector<double>& sizes = c.curve[PolicyState::kPlain].bytes;
  if (!c.measured || sizes.empty() || !(fp32_bytes > 2 * sizes.back())) return false;
  const size_t divisor = per_rank_divisor(comm, op);
  std::vector<size_t> counts;
  for (double last = sizes.back(); fp32_bytes > 2 * last;) {
    const size_t count = static_cast<size_t>(last / sizeof(float)) * 4;
    if (count * divisor > kMaxMeasuredCount) break;
    counts.push_back(count);
    last = static_cast<double>(count) * sizeof(float);
  }
  if (counts.empty()) return false;
  for (int b = bucket_of(sizes.back()) + 1; b < PolicyState::kBuckets; ++b) {
    c.explore[b] = 0;
    c.explore_near[b] = false;
    for (int path = 0; path < PolicyState::kPaths; ++path) {
      c.factor[path][b] = 1;
      c.observed[path][b] = false;
      c.calls[path][b] = 0;
    }
  }
  measure_points(comm, op, counts, measured_paths(comm, op, options), c);
  return true;
}

// A native collective as an Operation, so that it completes alongside Octet's pending ones;
// `then` runs once it has succeeded.
class NativeOperation : public Operation {
 public:
  NativeOperation(TransportRequestPtr request, std::function<void()> then)
      : request_(std::move(request)), then_(std::move(then)) {}

 private:
  bool advance() override {
    if (!request_->test()) return false;
    then_();
    return true;
  }
  void block() override { request_->wait(); }
  TransportRequestPtr request_;
  std::function<void()> then_;
};

}  // namespace

double CostCurve::at(double b) const {
  if (bytes.empty()) return 0;
  if (b <= bytes.front() || bytes.size() == 1) return seconds.front();
  size_t i = 1;
  while (i + 1 < bytes.size() && b > bytes[i]) ++i;
  const double slope = (seconds[i] - seconds[i - 1]) / (bytes[i] - bytes[i - 1]);
  return std::max(0.0, seconds[i - 1] + slope * (b - bytes[i - 1]));
}

namespace {
// Path `path`'s corrected time for a call of fp32_bytes in bucket b.
double path_time(const PolicyState::Curves& c, int path, double fp32_bytes, int b) {
  return c.curve[path].at(fp32_bytes) * c.factor[path][b];
}

// The compressed path a call takes: allreduce_algorithm where it forces one (the flat curve
// stands in for an unknown hierarchical one), else the cheaper of the two; *other (where `auto`
// chose between two known curves) the time of the one not taken.
void pick_algorithm(const PolicyState::Curves& c, double fp32_bytes, int b,
                    CollectiveOptions::AllreduceAlgorithm algorithm, PolicyEstimate& e,
                    double* other) {
  using Algorithm = CollectiveOptions::AllreduceAlgorithm;
  const double flat = path_time(c, PolicyState::kFlat, fp32_bytes, b);
  e.compressed_seconds = flat;
  if (algorithm == Algorithm::kFlat) return;
  const bool known = !c.curve[PolicyState::kHierarchical].bytes.empty();
  const double h = known ? path_time(c, PolicyState::kHierarchical, fp32_bytes, b) : 0;
  e.hierarchical = algorithm == Algorithm::kHierarchical || (known && h < flat);
  if (e.hierarchical && known) e.compressed_seconds = h;
  if (other && known && algorithm == Algorithm::kAuto) *other = e.hierarchical ? flat : h;
}
}  // namespace

PolicyEstimate PolicyState::estimate(Comm& comm, const PolicyKey& key, double fp32_bytes,
                                     const CollectiveOptions& options, double* other_algorithm) {
  auto it = curves_.find(key);
  if (it == curves_.end()) it = curves_.emplace(key, measure(comm, key, options)).first;
  if (extend(comm, std::get<0>(key), options, fp32_bytes, it->second)) {
    last_valid_ = false;  // the curves changed
    quiet_native_ = nullptr;
  }
  const Curves& c = it->second;
  const int b = bucket_of(fp32_bytes);
  PolicyEstimate e;
  e.plain_seconds = path_time(c, kPlain, fp32_bytes, b);
  pick_algorithm(c, fp32_bytes, b, options.allreduce_algorithm, e, other_algorithm);
  const bool confirmed = c.plain_observed(b) && c.compressed_observed(b);
  const double gain = !c.measured ? 1.0 : confirmed ? kConfirmedGain : kUnconfirmedGain;
  e.compress = e.compressed_seconds < gain * e.plain_seconds;
  return e;
}

void PolicyState::seed(const PolicyKey& key, Curves curves) {
  curves_[key] = std::move(curves);
  last_valid_ = false;
  quiet_native_ = nullptr;
}

PolicyState::Decision PolicyState::decide(Comm& comm, Collective op, double fp32_bytes,
                                          const CollectiveOptions& options) {
  quiet_native_ = nullptr;  // until settle(): this call may explore, be timed or agree
  count_call(comm, fp32_bytes);
  if (repeats_last(op, fp32_bytes, options)) return explored(last_);
  // Options are checked here, on this rank only: the decision needs them before any exchange.
  const PolicyKey key(op, static_cast<int>(options.codec.type), options.codec.stochastic,
                      validate_options(options.codec));
  Decision d;
  d.estimate = estimate(comm, key, fp32_bytes, options, &d.other_algorithm_seconds);
  d.curves = &curves_.find(key)->second;  // std::map: stays valid as keys are added
  d.bucket = bucket_of(fp32_bytes);
  const double faster = std::min(d.estimate.plain_seconds, d.estimate.compressed_seconds);
  const double slower = std::max(d.estimate.plain_seconds, d.estimate.compressed_seconds);
  if (!d.curves->agreed(d.bucket) && slower < kExploreWithin * faster) restart_agreements();
  last_ = d;
  last_op_ = op;
  last_type_ = options.codec.type;
  last_block_size_ = options.codec.block_size;
  last_stochastic_ = options.codec.stochastic;
  last_mantissa_offset_ = options.codec.mantissa_exponent_offset;
  last_algorithm_ = options.allreduce_algorithm;
  last_bytes_ = fp32_bytes;
  last_valid_ = true;
  return explored(d);
}

// The decision, or for kExploreCalls calls per interval another path: where the estimates are
// within kExploreWithin, or whatever they say once the interval is at its longest (one call in
// kPolicySyncMaxCalls). A compressed allreduce with two algorithms to choose from tries the other
// algorithm on the odd exploring calls (3 and 1 of the countdown), the other of compressed or not
// on the even one, unless only the other has observed calls in the bucket. The same call on
// every rank: the flags, the estimates and the interval are agreed, and every rank makes the
// same calls.
PolicyState::Decision PolicyState::explored(Decision d) {
  uint8_t& due = d.curves->explore[d.bucket];
  if (!due) return d;
  const bool odd = due % 2 == 1;
  --due;
  const PolicyEstimate& e = d.estimate;
  const bool at_longest = interval_ >= kPolicySyncMaxCalls && !d.curves->explore_near[d.bucket];
  const double taken = e.compress ? e.compressed_seconds : e.plain_seconds;
  const double other_algorithm = e.compress ? d.other_algorithm_seconds : 0;
  if (other_algorithm > 0 && odd) {
    if (other_algorithm < kExploreWithin * taken || at_longest) {
      d.estimate.hierarchical = !e.hierarchical;
      d.estimate.compressed_seconds = other_algorithm;  // what observe() divides the time by
      d.exploring = true;
    }
    return d;
  }
  // Where the taken kind has no observed calls in this bucket and the other has (the evidence
  // just turned the decision), the taken calls are the ones to measure.
  const bool plain_seen = d.curves->plain_observed(d.bucket);
  const bool compressed_seen = d.curves->compressed_observed(d.bucket);
  if ((e.compress ? plain_seen && !compressed_seen : compressed_seen && !plain_seen)) return d;
  const double other = e.compress ? e.plain_seconds : e.compressed_seconds;
  if (other < kExploreWithin * taken || at_longest) {
    d.estimate.compress = !e.compress;
    d.exploring = true;
  }
  return d;
}

namespace {
// The path whose curve a call's time corrects.
int path_of(const PolicyState::Decision& d, bool compressed) {
  if (!compressed) return PolicyState::kPlain;
  const bool known = !d.curves->curve[PolicyState::kHierarchical].bytes.empty();
  return d.estimate.hierarchical && known ? PolicyState::kHierarchical : PolicyState::kFlat;
}
}  // namespace

bool PolicyState::wants_time(const Decision& d, bool compressed) {
  return d.curves->calls[path_of(d, compressed)][d.bucket] < kMaxSamples;
}

// What decide() would do with the next call like the last: decline it again without exploring
// and without wanting its time (neither changes before the next decide(), sync() or observe(),
// and observe() comes before settle()).
void PolicyState::settle(NativeCollectives* native) {
  const bool quiet = last_valid_ && !last_.estimate.compress &&
                     !last_.curves->explore[last_.bucket] && !wants_time(last_, false);
  quiet_native_ = quiet ? native : nullptr;
}

void PolicyState::count_call(Comm& comm, double fp32_bytes) {
  const bool by_calls = calls_ + 1 >= next_sync_;
  const bool due = sync_due(fp32_bytes);
  ++calls_;
  bytes_ += fp32_bytes;
  if (!due) return;
  interval_ = std::min<int64_t>(2 * interval_, kPolicySyncMaxCalls);
  next_sync_ = calls_ + interval_;
  next_sync_bytes_ = bytes_ + byte_interval();
  sync(comm, by_calls);
}

// The same on every rank: every rank makes the same calls, and `agreed` comes from agreements.
void PolicyState::restart_agreements() {
  interval_ = kPolicySyncCalls;
  next_sync_ = std::min<int64_t>(next_sync_, calls_ + kPolicySyncCalls);
  next_sync_bytes_ = std::min(next_sync_bytes_, bytes_ + kPolicySyncBytes);
}

void PolicyState::observe(const Decision& d, bool compressed, double seconds) {
  Curves& c = *d.curves;
  const int b = d.bucket, path = path_of(d, compressed);
  const double estimated = compressed ? d.estimate.compressed_seconds : d.estimate.plain_seconds;
  const double model = estimated / c.factor[path][b];  // the curve alone
  if (!(model > 0)) return;
  if (!c.warm[path][b]) {  // cold: its pages and buffers may be touched for the first time
    c.warm[path][b] = true;
    if (d.exploring) ++c.explore[b];  // the same exploring call again (every rank alike)
    return;
  }
  int& n = c.calls[path][b];
  if (n < kMaxSamples) c.samples[path][b][n++] = static_cast<float>(seconds / model);
}

namespace {
// A bucket's samples of one path as evidence (0: none yet): their median once there are
// kMinSamples; fewer (kGrossMinSamples at least) only where each is more than kGrossError away
// from the correction, all the same way.
double evidence(std::array<float, PolicyState::kMaxSamples> samples, int n, double factor) {
  if (n <= 0) return 0;
  const auto [fastest, slowest] = std::minmax_element(samples.begin(), samples.begin() + n);
  const bool gross =
      n >= PolicyState::kGrossMinSamples && (*slowest * PolicyState::kGrossError < factor ||
                                             *fastest > PolicyState::kGrossError * factor);
  return n >= PolicyState::kMinSamples || gross
             ? lower_median(samples.data(), static_cast<size_t>(n))
             : 0;
}
}  // namespace

// Each rank's median observed/curve ratio per bucket and path, agreed as the median over the
// ranks that have one, then folded into the corrections; with `explore` (the call schedule's
// agreements), buckets with calls explore next interval. The byte schedule's come every few calls
// for large ones, and exploring at each would spend most of them on the other path; they explore
// only a bucket whose first evidence of one kind of path came where the other kind has none.
void PolicyState::sync(Comm& comm, bool explore) {
  if (curves_.empty())
    return;  // nothing to agree on (a first call of many bytes; alike on every rank)
  std::vector<double> v;
  for (const auto& [key, c] : curves_)
    for (int path = 0; path < kPaths; ++path)
      for (int b = 0; b < kBuckets; ++b)
        v.push_back(evidence(c.samples[path][b], c.calls[path][b], c.factor[path][b]));
  agree(comm, v);
  last_valid_ = false;  // the corrections change
  quiet_native_ = nullptr;
  size_t i = 0;
  for (auto& [key, c] : curves_) {
    if (explore)
      for (int b = 0; b < kBuckets; ++b) {
        c.explore[b] = c.calls[kPlain][b] + c.calls[kFlat][b] + c.calls[kHierarchical][b] > 0
                           ? kExploreCalls
                           : 0;
        c.explore_near[b] = false;
      }
    std::array<bool, kBuckets> counted{};
    for (int path = 0; path < kPaths; ++path)
      for (int b = 0; b < kBuckets; ++b, ++i) {
        if (!(v[i] > 0)) continue;  // samples too few to count are kept (alike on every rank)
        double& factor = c.factor[path][b];
        // The first evidence replaces the curve's 1; later evidence moves it halfway, either
        // way (load comes and goes).
        factor = c.observed[path][b] ? 0.5 * factor + 0.5 * v[i] : v[i];
        c.observed[path][b] = counted[b] = true;
        c.calls[path][b] = 0;
      }
    for (int b = 0; b < kBuckets; ++b)
      if (counted[b] && !(c.plain_observed(b) && c.compressed_observed(b)) &&
          !(explore && c.explore[b])) {
        c.explore[b] = kExploreCalls;
        c.explore_near[b] = true;
      }
  }
}

double policy_bytes(const NativeCall& call, int) {
  return static_cast<double>(call.count) * sizeof(float);
}

PolicyState::Decision decide(Comm& comm, Collective op, size_t count,
                             const CollectiveOptions& options) {
  const double bytes = static_cast<double>(count) * sizeof(float);
  PolicyState::Decision d;
  switch (options.policy) {
    case Policy::kAlways:  // invalid options are reported on every rank by the descriptor exchange
      d.estimate.compress = bytes >= static_cast<double>(options.min_bytes);
      return d;
    case Policy::kNever:
      return d;
    case Policy::kAuto:
      break;
  }
  if (bytes < static_cast<double>(options.min_bytes) || comm.size() == 1) return d;
  return core(comm).policy().decide(comm, op, bytes, options);
}

Route::Route(Comm& comm, const NativeCall& call, const CollectiveOptions& options)
    : comm_(comm), call_(call), options_(options) {
  decision_ = decide(comm, call.op, call.count, options);
  compressed_ = decision_.estimate.compress;
  if (compressed_) return;
  NativeCollectives* n = comm.transport().native_collectives();
  if (n && call.count <= n->max_count()) native_ = n;
  if (native_ && !decision_.curves) validate_options(options.codec);  // the same errors always
  // MPI would crash on it; the other ranks meet MPI's semantics for a rank that did not call.
  if (native_ && call.count > 0 && !call.out)
    throw Error(ErrorCode::kInvalidArgument, "null buffer with a non-zero count");
}

namespace {
// `average` on the native sum: each element divided by the rank count, as the reference and the
// bench's fp32 baseline do.
void finish_native(const NativeCall& call, int ranks, bool average) {
  if (!average || call.op == Collective::kAllgather || call.op == Collective::kBroadcast) return;
  const float divisor = static_cast<float>(ranks);
  for (size_t i = 0; i < call.count; ++i) call.out[i] /= divisor;
}
}  // namespace

CollectiveOptions Route::options() const {
  CollectiveOptions o = options_;
  if (!compressed_) o.min_bytes = std::numeric_limits<size_t>::max();
  // `auto`'s choice of algorithm, agreed like the decision (forced ones stay as they are).
  using Algorithm = CollectiveOptions::AllreduceAlgorithm;
  if (compressed_ && decision_.curves && o.allreduce_algorithm == Algorithm::kAuto)
    o.allreduce_algorithm =
        decision_.estimate.hierarchical ? Algorithm::kHierarchical : Algorithm::kFlat;
  return o;
}

namespace {
// MPI's blocking call for `call` (the same bits as the plain call), then `average`.
[[gnu::hot]] void call_native(NativeCollectives& n, const NativeCall& call, int ranks,
                              bool average) {
  switch (call.op) {
    case Collective::kAllreduce:
      n.allreduce(call.in, call.out, call.count);
      break;
    case Collective::kReduceScatter:
      n.reduce_scatter(call.in, call.out, call.count);
      break;
    case Collective::kAllgather:
      return n.allgather(call.in, call.out, call.count);
    case Collective::kBroadcast:
      return n.broadcast(call.out, call.count, call.root);
  }
  finish_native(call, ranks, average);
}
}  // namespace

void Route::run_native() const {
  call_native(*native_, call_, comm_.size(), options_.average);
}

std::shared_ptr<Operation> Route::start_native() const {
  NativeCollectives& n = *native_;
  TransportRequestPtr r;
  switch (call_.op) {
    case Collective::kAllreduce:
      r = n.iallreduce(call_.in, call_.out, call_.count);
      break;
    case Collective::kReduceScatter:
      r = n.ireduce_scatter(call_.in, call_.out, call_.count);
      break;
    case Collective::kAllgather:
      r = n.iallgather(call_.in, call_.out, call_.count);
      break;
    case Collective::kBroadcast:
      r = n.ibroadcast(call_.out, call_.count, call_.root);
      break;
  }
  // By value: the operation outlives the call, and with it the caller's options.
  return std::make_shared<NativeOperation>(
      std::move(r), [call = call_, ranks = comm_.size(), average = options_.average] {
        finish_native(call, ranks, average);
      });
}

void Route::observe(double seconds) const {
  PolicyState::observe(decision_, compressed_, seconds);
}

void Route::settle() const {
  if (!decision_.curves) return;  // decide() did not take this call
  core(comm_).policy().settle(native_);
}

Request start_routed(Comm& comm, const NativeCall& call, const CollectiveOptions& options,
                     const MakeOperation& make) {
  const Route route(comm, call, options);
  return start_request(comm, route.native() ? route.start_native() : make(route.options()),
                       route.compressed());
}

namespace {
// A blocking `auto` call that repeats the last one, which `auto` declined and ran natively, with
// nothing due (no agreement, no exploring, no time wanted): MPI's call at once. It counts and
// checks what Route would, in fewer steps and touching fewer cache lines, since a declined small
// call is MPI's latency plus whatever Octet adds to it, which ranks sharing cores amplify
// (docs/performance.md, "Tenth session": about 210 instructions beyond MPI's call).
// [[gnu::hot]] here, on the blocking entry points, core() and the MPI transport's blocking
// collectives: GCC puts them in .text.hot, side by side on one page, since after each switch
// between ranks that share a core every page and line the call touches comes back from further
// away ("Twelfth session": the small rows' ratio to MPI up by 0.4-1.4%).
[[gnu::hot]] bool ran_quiet_decline(Comm& comm, const NativeCall& call,
                                    const CollectiveOptions& options) {
  if (options.policy != Policy::kAuto || (call.count > 0 && !call.out)) return false;
  const double bytes = static_cast<double>(call.count) * sizeof(float);
  if (bytes < static_cast<double>(options.min_bytes)) return false;
  CommCore& c = core(comm);
  NativeCollectives* n = c.policy().take_quiet_decline(call.op, bytes, options);
  if (!n) return false;
  if (!c.idle()) c.complete_all();
  const int ranks = options.average ? comm.size() : 1;  // a virtual call: only where needed
  call_native(*n, call, ranks, options.average);
  return true;
}
}  // namespace

[[gnu::hot]] void run_routed(Comm& comm, const NativeCall& call, const CollectiveOptions& options,
                             const MakeOperation& make) {
  if (ran_quiet_decline(comm, call, options)) return;
  const Route route(comm, call, options);
  const bool timed = route.timed();
  const double t0 = timed ? now() : 0;
  if (route.native()) {
    // MPI's blocking call (its blocking algorithms, the plain call's bits) on every rank alike;
    // the Comm's pending operations complete first, since nothing progresses them inside it.
    core(comm).complete_all();
    route.run_native();
  } else {
    start_request(comm, make(route.options())).wait();
  }
  if (timed) route.observe(now() - t0);
  route.settle();
}

}  // namespace detail

const char* policy_name(Policy policy) {
  switch (policy) {
    case Policy::kAuto:
      return "auto";
    case Policy::kAlways:
      return "always";
    case Policy::kNever:
      return "never";
  }
  return "?";
}

Policy parse_policy(std::string_view name) {
  for (Policy p : {Policy::kAuto, Policy::kAlways, Policy::kNever})
    if (name == policy_name(p)) return p;
  throw Error(ErrorCode::kInvalidArgument,
              "unknown policy " + detail::quoted(name) + " (auto, always, never)");
}

bool decide_policy(Comm& comm, Collective op, size_t count, const CollectiveOptions& options) {
  return detail::decide(comm, op, count, options).estimate.compress;
}

PolicyEstimate estimate_policy(Comm& comm, Collective op, size_t count,
                               const CollectiveOptions& options) {
  const uint32_t block = validate_options(options.codec);
  const double bytes = static_cast<double>(count) * sizeof(float);
  PolicyEstimate e;
  if (options.policy == Policy::kNever || bytes < static_cast<double>(options.min_bytes)) return e;
  if (options.policy == Policy::kAlways || comm.size() == 1) {
    e.compress = options.policy == Policy::kAlways;
    // The algorithm the compressed allreduce takes (allreduce.cc asks the same question).
    e.hierarchical = e.compress && op == Collective::kAllreduce &&
                     detail::use_hierarchical(comm, count, options);
    return e;
  }
  const detail::PolicyKey key(op, static_cast<int>(options.codec.type), options.codec.stochastic,
                              block);
  return detail::core(comm).policy().estimate(comm, key, bytes, options);
}

}  // namespace octet
