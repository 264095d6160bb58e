// The `auto` policy over thread transports behind an emulated link: it compresses where the link
// is slow enough for the codec to pay, declines where it is not, and every rank decides the same.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "collectives/policy.h"
#include "counting_transport.h"
#include "octet/collectives.h"
#include "octet/policy.h"
#include "thread_ranks.h"
#include "verify/verify.h"

namespace octet {
namespace {

using Clock = std::chrono::steady_clock;

// One rank's end of a link carrying `bytes_per_second` with `latency` per message: a message
// reaches the peer (the inner thread transport) once the sender's link has carried it. A
// delivery thread hands messages over in order, so the transport's ordering rules still hold.
class SlowLink : public Transport {
 public:
  SlowLink(std::shared_ptr<Transport> inner, double bytes_per_second, double latency)
      : inner_(std::move(inner)), rate_(bytes_per_second), latency_(latency) {
    thread_ = std::thread([this] { deliver(); });
  }
  ~SlowLink() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int max_tag() const override { return inner_->max_tag(); }

  TransportRequestPtr isend(const void* data, size_t bytes, int peer, int tag,
                            std::shared_ptr<const void>) override {
    auto sent = std::make_shared<Sent>();
    Message m{{}, peer, tag, sent, {}};
    m.bytes.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto now = Clock::now();
      busy_ = std::max(busy_, now) + seconds(double(bytes) / rate_);
      m.due = busy_ + seconds(latency_);
      queue_.push_back(std::move(m));
    }
    wake_.notify_all();
    return std::make_unique<SentRequest>(sent);
  }
  TransportRequestPtr irecv(void* data, size_t capacity, int peer, int tag) override {
    return inner_->irecv(data, capacity, peer, tag);
  }

 private:
  struct Sent {
    std::atomic<bool> done{false};
  };
  struct Message {
    std::vector<char> bytes;
    int peer, tag;
    std::shared_ptr<Sent> sent;
    Clock::time_point due;
  };
  class SentRequest : public TransportRequest {
   public:
    explicit SentRequest(std::shared_ptr<Sent> s) : sent_(std::move(s)) {}
    bool test() override { return sent_->done; }
    void wait() override {
      while (!sent_->done) std::this_thread::yield();
    }
    size_t bytes() const override { return 0; }

   private:
    std::shared_ptr<Sent> sent_;
  };
  static Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  void deliver() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      const auto due = queue_.front().due;
      if (wake_.wait_until(lock, due, [this] { return stop_; }) && queue_.empty()) return;
      if (Clock::now() < due) continue;
      Message m = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      auto copy = std::make_shared<std::vector<char>>(std::move(m.bytes));
      inner_->isend(copy->data(), copy->size(), m.peer, m.tag, copy)->wait();
      m.sent->done = true;
      lock.lock();
    }
  }

  std::shared_ptr<Transport> inner_;
  double rate_, latency_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Message> queue_;
  Clock::time_point busy_{};
  bool stop_ = false;
  std::thread thread_;
};

// Runs fn on `size` ranks as threads, each behind its own link (rate 0: the plain transport).
void run_ranks(int size, double rate, const std::function<void(Comm&)>& fn) {
  auto inner = make_thread_transports(size);
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        std::shared_ptr<Transport> t = inner[r];
        if (rate > 0) t = std::make_shared<SlowLink>(t, rate, 50e-6);
        Comm comm(t);
        fn(comm);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

const std::vector<size_t> kCounts = {1, 64, 1024, 16384, 262144, 1048576};

// Every rank's estimates for kCounts, in order.
std::vector<std::vector<PolicyEstimate>> estimates(int size, double rate) {
  std::vector<std::vector<PolicyEstimate>> all(size);
  run_ranks(size, rate, [&](Comm& comm) {
    for (size_t n : kCounts)
      all[comm.rank()].push_back(estimate_policy(comm, Collective::kAllreduce, n, {}));
  });
  return all;
}

TEST(Policy, NamesRoundTripAndUnknownNamesAreRefused) {
  for (Policy p : {Policy::kAuto, Policy::kAlways, Policy::kNever})
    EXPECT_EQ(parse_policy(policy_name(p)), p);
  try {
    parse_policy("sometimes");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("sometimes"), std::string::npos);
  }
}

// Over the bare thread transport (no collectives of its own: the plain path is Octet's own
// uncompressed one, which copies 4x the bytes through the mailboxes) the decision follows the two
// measured curves, and every rank holds the same numbers.
TEST(Policy, DecisionFollowsTheAgreedCurves) {
  const auto all = estimates(3, 0);
  for (size_t i = 0; i < kCounts.size(); ++i) {
    // No agreement yet: a measured curve compresses only for a clear gain.
    EXPECT_EQ(all[0][i].compress,
              all[0][i].compressed_seconds <
                  detail::PolicyState::kUnconfirmedGain * all[0][i].plain_seconds);
    EXPECT_GT(all[0][i].plain_seconds, 0);
    EXPECT_GT(all[0][i].compressed_seconds, 0);
    for (size_t r = 1; r < all.size(); ++r) {
      EXPECT_EQ(all[r][i].plain_seconds, all[0][i].plain_seconds) << kCounts[i];
      EXPECT_EQ(all[r][i].compressed_seconds, all[0][i].compressed_seconds) << kCounts[i];
    }
  }
}

// Curves measured at start-up compress a size only for a predicted gain of 15% or more
// (kUnconfirmedGain) until agreements have folded in observed calls of both kinds there
// (compressed and plain), and then for 10% or more (kConfirmedGain); where the curves were
// seeded, any gain does. Observed calls of one kind alone confirm nothing: the other kind's
// price is still the start-up measurement's.
TEST(Policy, AStartUpMeasurementCompressesOnlyForAClearGainUntilConfirmed) {
  using detail::PolicyState;
  const double bytes = 4096;
  enum Seen { kNone, kCompressedOnly, kBoth };
  auto curves = [](double compressed, bool measured, Seen seen) {
    PolicyState::Curves c = detail::fresh_curves();
    c.curve[PolicyState::kPlain] = {{4, 1e12}, {1.0, 1.0}};
    c.curve[PolicyState::kFlat] = {{4, 1e12}, {compressed, compressed}};
    c.measured = measured;
    c.observed[PolicyState::kFlat].fill(seen != kNone);
    c.observed[PolicyState::kPlain].fill(seen == kBoth);
    return c;
  };
  Comm comm(make_thread_transports(1)[0]);  // seeded curves: no measurement, no traffic
  PolicyState state;
  std::vector<int> decided;
  int type = 0;
  for (auto [compressed, measured, seen] : {std::tuple{0.9, true, kNone},
                                            {0.8, true, kNone},
                                            {0.92, true, kBoth},
                                            {0.88, true, kBoth},
                                            {0.88, true, kCompressedOnly},
                                            {0.95, false, kNone}}) {
    const detail::PolicyKey key(Collective::kAllreduce, type++, false, 2048);
    state.seed(key, curves(compressed, measured, seen));
    decided.push_back(state.estimate(comm, key, bytes, CollectiveOptions{}).compress);
  }
  EXPECT_EQ(decided, (std::vector<int>{0, 1, 0, 1, 0, 1}));
}

// The key of an allreduce with the default codec options, as PolicyState::decide forms it.
detail::PolicyKey default_key() {
  const CodecOptions codec;
  return {Collective::kAllreduce, static_cast<int>(codec.type), codec.stochastic,
          validate_options(codec)};
}

// One rank's policy state (its agreements among itself), seeded with plain 1 s and compressed
// `compressed` s at every size.
struct SeededPolicy {
  explicit SeededPolicy(double compressed) {
    detail::PolicyState::Curves c = detail::fresh_curves();
    c.curve[detail::PolicyState::kPlain] = {{4, 1e12}, {1.0, 1.0}};
    c.curve[detail::PolicyState::kFlat] = {{4, 1e12}, {compressed, compressed}};
    state.seed(key, c);
  }
  PolicyEstimate estimate(double bytes) {
    return state.estimate(comm, key, bytes, CollectiveOptions{});
  }
  // `calls` decisions of a call of `bytes`, each timed call recorded as taking
  // seconds(compressed, call); how many compressed from call `from` on.
  int drive(double bytes, int calls, int from, const std::function<double(bool, int)>& seconds) {
    int compressed = 0;
    for (int call = 0; call < calls; ++call) {
      const detail::PolicyState::Decision d =
          state.decide(comm, Collective::kAllreduce, bytes, CollectiveOptions{});
      const bool zip = d.estimate.compress;
      if (detail::PolicyState::wants_time(d, zip))
        detail::PolicyState::observe(d, zip, seconds(zip, call));
      compressed += zip && call >= from;
    }
    return compressed;
  }
  Comm comm{make_thread_transports(1)[0]};
  detail::PolicyState state;
  const detail::PolicyKey key = default_key();
};

// Observed calls are judged by their median, not by their fastest: compressed calls that take
// the predicted 0.8 s in 3 calls of 8 and 2 s in the others (ranks sharing cores: a call either
// finds its peers on a core or waits) are a path slower than the plain 1 s, and `auto` declines
// after the first agreement. Judged by the fastest call, 0.8 s would stand and every call would
// compress.
TEST(Policy, ObservedCallsAreJudgedByTheirMedian) {
  SeededPolicy policy(0.8);
  const double bytes = 4096;
  ASSERT_TRUE(policy.estimate(bytes).compress);
  const int late =
      policy.drive(bytes, 4 * kPolicySyncCalls, 2 * kPolicySyncCalls, [](bool zip, int call) {
        return !zip ? 1.0 : call % 3 ? 2.0 : 0.8;
      });
  const PolicyEstimate e = policy.estimate(bytes);
  EXPECT_FALSE(e.compress) << "compressed " << e.compressed_seconds << " s, plain "
                           << e.plain_seconds;
  EXPECT_EQ(late, 0) << "compressed calls after the agreements";
  EXPECT_GT(e.compressed_seconds, 1.5);
}

// Large calls: the byte schedule's agreements come every call or two at first, before a path
// has kMinSamples timed calls; the samples are kept until they count, so a compressed path that
// takes 1.5 s against its predicted 0.5 (the plain 1 s) declines from the 5th call of 64 MiB on
// (the first agreement with kMinSamples or more comes there), and since only the compressed kind
// has been seen, the plain calls are not interrupted to explore it. If each agreement dropped the
// samples it could not count yet, the 9th call would be the first to decline.
TEST(Policy, LargeCallsCountTheirSamplesAcrossAgreements) {
  SeededPolicy policy(0.5);
  const double bytes = 64.0 * 1024 * 1024;
  ASSERT_TRUE(policy.estimate(bytes).compress);
  EXPECT_EQ(policy.drive(bytes, 24, 4, [](bool zip, int) { return zip ? 1.5 : 1.0; }), 0)
      << "compressed calls from the 5th on";
  EXPECT_FALSE(policy.estimate(bytes).compress);
}

// A path's first calls of a size may be cold: MPI's first 128 MiB allreduce of 4 local ranks
// faults in its temporary buffers and took 2.4 s against 0.1-0.2 s for the next ones. A path's
// first call in a bucket is not a sample, and one sample never counts alone, however far from
// its estimate: plain calls of 1 s whose first two took 20 s keep their price, and `auto`
// declines the compressed path's 1.3 s after exploring it. Counted, the cold calls priced plain
// at 20 s and every later call compressed.
TEST(Policy, ColdFirstCallsDoNotPriceAPath) {
  SeededPolicy policy(1.3);
  const double bytes = 128.0 * 1024 * 1024;
  ASSERT_FALSE(policy.estimate(bytes).compress);
  const int late = policy.drive(bytes, 32, 16, [](bool zip, int call) {
    return zip ? 1.3 : call < 2 ? 20.0 : 1.0;
  });
  const PolicyEstimate e = policy.estimate(bytes);
  EXPECT_EQ(late, 0) << "compressed calls from the 17th on";
  EXPECT_FALSE(e.compress);
  EXPECT_LT(e.plain_seconds, 2.0);
}

// An exploring call that is its path's first in the bucket (not a sample) does not count
// against the exploring: the exploring still brings kMinSamples samples, so a compressed path
// seeded at 1.3 s that takes 0.5 s (plain 1 s) is taken from the first agreement after them
// on. Counting the cold call against it, the exploring gave 2 samples, too few, and 5 of the
// calls 17-32 stayed plain.
TEST(Policy, AColdExploringCallIsExploredAgain) {
  SeededPolicy policy(1.3);
  const double bytes = 128.0 * 1024 * 1024;
  ASSERT_FALSE(policy.estimate(bytes).compress);
  const int late = policy.drive(bytes, 32, 16, [](bool zip, int) { return zip ? 0.5 : 1.0; });
  EXPECT_EQ(late, 16) << "compressed calls from the 17th on";
  EXPECT_TRUE(policy.estimate(bytes).compress);
}

// A wildly wrong seed is still corrected before kMinSamples samples: compressed calls predicted
// at 0.25 s that take 5 s (the plain 1 s) count from their second sample (the third call: the
// first is not a sample). For calls of 256 MiB the byte schedule agrees before each of the first
// five calls, and `auto` declines from the fourth call on; waiting for kMinSamples, from the fifth.
TEST(Policy, AWildlyWrongSeedCountsFromTwoSamples) {
  SeededPolicy policy(0.25);
  const double bytes = 256.0 * 1024 * 1024;
  ASSERT_TRUE(policy.estimate(bytes).compress);
  EXPECT_EQ(policy.drive(bytes, 24, 3, [](bool zip, int) { return zip ? 5.0 : 1.0; }), 0)
      << "compressed calls from the 4th on";
  EXPECT_FALSE(policy.estimate(bytes).compress);
}

// A bucket's first evidence explores the other kind only where the estimates are within
// kExploreWithin, even once the agreement interval is at its longest (the byte schedule's
// agreements take it there within a few dozen large calls): plain calls 4x slower than the
// compressed ones are not explored in a new size's bucket. Exploring them 3 times in a row of a
// dozen 64 MiB calls over 1 Gbit/s made it 1.9x faster than fp32 instead of 4x.
TEST(Policy, AFirstEvidenceExploresOnlyANearPath) {
  SeededPolicy policy(0.25);
  const double mib = 1024.0 * 1024;
  auto seconds = [](bool zip, int) { return zip ? 0.25 : 1.0; };
  policy.drive(32 * mib, 64, 0, seconds);  // the interval grows to its longest
  const int calls = 32;
  EXPECT_EQ(policy.drive(128 * mib, calls, 0, seconds), calls) << "a path 4x slower was explored";
}

// A measured curve grows where the calls go: a call more than twice its largest size measures
// the sizes 4x apart after it (here 16 and 64 KiB after 4 KiB, for a call of 40000 bytes), every
// rank together, once; the buckets above the old largest size drop the corrections made against
// the old line. Sizes within 2x extrapolate without a measurement.
TEST(Policy, MeasuredCurvesGrowTowardLargerCalls) {
  using detail::PolicyState;
  std::vector<std::shared_ptr<Transport>> wrapped;
  std::vector<std::shared_ptr<test::CountingTransport>> counting;
  for (auto& t : make_thread_transports(2)) {
    counting.push_back(std::make_shared<test::CountingTransport>(t));
    wrapped.push_back(counting.back());
  }
  std::vector<uint64_t> within(2), grown(2), again(2), largest(2);
  std::vector<double> after(2), at_64k(2);
  test::expect_ok(test::run_on_threads(wrapped, [&](Comm& comm) {
    const size_t r = static_cast<size_t>(comm.rank());
    test::CountingTransport& wire = *counting[r];
    PolicyState state;
    PolicyState::Curves c = detail::fresh_curves();
    const double line = 1e-9 * (4096 - 4);
    c.curve[PolicyState::kPlain] = {{4, 4096}, {1e-6, 1e-6 + line}};
    c.curve[PolicyState::kFlat] = {{4, 4096}, {2e-6, 2e-6 + line}};
    c.measured = true;
    for (auto& f : c.factor) f.fill(1e6);  // corrections made against the line
    const detail::PolicyKey key(Collective::kAllreduce, 0, false, 2048);
    state.seed(key, c);
    uint64_t sent = wire.bytes_sent;
    state.estimate(comm, key, 8192, CollectiveOptions{});
    within[r] = wire.bytes_sent - sent;
    sent = wire.bytes_sent;
    after[r] = state.estimate(comm, key, 40000, CollectiveOptions{}).plain_seconds;
    grown[r] = wire.bytes_sent - sent;
    largest[r] = wire.largest;
    sent = wire.bytes_sent;
    at_64k[r] = state.estimate(comm, key, 65536, CollectiveOptions{}).plain_seconds;
    again[r] = wire.bytes_sent - sent;
  }));
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(within[r], 0u) << "rank " << r << ": 8 KiB is within 2x of 4 KiB";
    EXPECT_GT(grown[r], 0u) << "rank " << r << ": no measurement";
    EXPECT_GE(largest[r], 65536u / 2) << "rank " << r << ": the 64 KiB point was not measured";
    EXPECT_EQ(again[r], 0u) << "rank " << r << ": measured twice";
    EXPECT_EQ(after[r], after[0]) << "rank " << r << ": the ranks disagree";
    // A 64 KiB call over threads takes microseconds; the old correction made it seconds.
    EXPECT_LT(at_64k[r], 0.1) << "rank " << r << ": still the old line's correction";
    EXPECT_GT(at_64k[r], 0.0);
  }
}

// Behind a 100 MB/s link a 4 MiB allreduce moves ~3.7x fewer bytes compressed, which pays (a
// one-element call is a coin toss here: both of Octet's paths send as many messages). Every rank
// holds the same numbers (agreed maxima), so takes the same decision.
TEST(Policy, CompressesLargeCallsOnASlowLinkAndEveryRankAgrees) {
  const auto all = estimates(3, 100e6);
  for (size_t i = 0; i < kCounts.size(); ++i)
    for (size_t r = 1; r < all.size(); ++r) {
      EXPECT_EQ(all[r][i].compress, all[0][i].compress) << kCounts[i];
      EXPECT_EQ(all[r][i].plain_seconds, all[0][i].plain_seconds) << kCounts[i];
      EXPECT_EQ(all[r][i].compressed_seconds, all[0][i].compressed_seconds) << kCounts[i];
    }
  EXPECT_TRUE(all[0].back().compress)
      << "1M elements: plain " << all[0].back().plain_seconds << " s, compressed "
      << all[0].back().compressed_seconds << " s";
}

// `auto` calls give bit-identical results on every rank, within the bound where they compress
// and exact where they do not, across agreements on observed times (every kPolicySyncCalls).
TEST(Policy, AutoCallsStayIdenticalAcrossRanksThroughAgreements) {
  const int p = 3;
  const verify::Inputs inputs{11};
  std::vector<std::vector<float>> results(p);
  std::vector<std::vector<int>> decisions(p);
  run_ranks(p, 100e6, [&](Comm& comm) {
    for (int call = 0; call < kPolicySyncCalls + 8; ++call) {
      const size_t n = call % 2 ? 50000 : 3;
      std::vector<float> x = inputs.slice(comm.rank(), 0, n), y(n);
      allreduce(comm, x.data(), y.data(), n);
      decisions[comm.rank()].push_back(
          estimate_policy(comm, Collective::kAllreduce, n, {}).compress);
      const auto want = verify::allreduce_reference(verify::source(inputs), p, n,
                                                    verify::quantization(CollectiveOptions{}, n));
      EXPECT_EQ(verify::compare(y.data(), want).wrong, 0u) << "call " << call;
      if (call == kPolicySyncCalls + 7) results[comm.rank()] = y;
    }
  });
  for (int r = 1; r < p; ++r) {
    EXPECT_EQ(decisions[r], decisions[0]);
    EXPECT_EQ(0, std::memcmp(results[r].data(), results[0].data(), results[0].size() * 4));
  }
}

// `never` over a transport without its own collectives is Octet's uncompressed path: exact.
TEST(Policy, NeverIsExact) {
  const int p = 3;
  const size_t n = 5000;
  const verify::Inputs inputs{12};
  run_ranks(p, 0, [&](Comm& comm) {
    std::vector<float> x = inputs.slice(comm.rank(), 0, n), y(n);
    CollectiveOptions o;
    o.policy = Policy::kNever;
    allreduce(comm, x.data(), y.data(), n, o);
    for (size_t i = 0; i < n; ++i) {
      float sum = -0.0f;  // the owner's sum in rank order
      for (int r = 0; r < p; ++r) sum += inputs.value(r, i);
      ASSERT_EQ(y[i], sum) << i;
    }
  });
}

}  // namespace
}  // namespace octet
