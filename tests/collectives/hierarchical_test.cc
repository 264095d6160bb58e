// The hierarchical allreduce over the thread transport with emulated hosts
// (make_thread_transports(host_of_rank)): results against the exact fp32 sum within the flat
// allreduce's bound (each element quantized at most twice), bit-identity across ranks, even and
// uneven hosts, P = 1, counts 0/1/odd/large, in place, average, stochastic rounding, error
// feedback, the choice of algorithm, bytes between hosts, mismatches and invalid arguments.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "collectives/hierarchical.h"
#include "counting_transport.h"
#include "octet/collectives.h"
#include "octet/policy.h"
#include "octet/transport.h"
#include "thread_ranks.h"
#include "verify/verify.h"

namespace octet {
namespace {

using test::expect_all;
using test::expect_ok;

using verify::input;
using Algorithm = CollectiveOptions::AllreduceAlgorithm;

// Runs fn(comm) for each rank on its own thread, rank r on host hosts[r]; returns every rank's
// exception (null where it returned normally). `between_hosts` (optional) counts the bytes sent
// across hosts.
std::vector<std::exception_ptr> run_on_hosts(const std::vector<int>& hosts,
                                             const std::function<void(Comm&)>& fn,
                                             std::atomic<size_t>* between_hosts = nullptr) {
  auto transports = make_thread_transports(hosts);
  std::vector<std::shared_ptr<test::CountingTransport>> counting;
  for (auto& t : transports)
    if (between_hosts) {
      counting.push_back(std::make_shared<test::CountingTransport>(t));
      t = counting.back();
    }
  auto errors = test::run_on_threads(transports, fn);
  for (const auto& c : counting) *between_hosts += c->between_hosts;
  return errors;
}

// Host ids for `hosts` hosts of `per_host` ranks each, ranks numbered host by host.
std::vector<int> grid(int hosts, int per_host) {
  std::vector<int> h;
  for (int r = 0; r < hosts * per_host; ++r) h.push_back(r / per_host);
  return h;
}

CollectiveOptions small_chunks(Algorithm algorithm = Algorithm::kHierarchical) {
  CollectiveOptions o;
  o.policy = Policy::kAlways;  // compressed whatever the cost model says
  o.codec.block_size = 64;
  o.chunk_bytes = 4 * 256;  // several chunks per segment even for small counts
  o.window = 3;
  o.allreduce_algorithm = algorithm;
  return o;
}

// Every rank's allreduce of input(r, n, seed) with options o (in place or not).
std::vector<std::vector<float>> run_allreduce(const std::vector<int>& hosts, size_t n,
                                              const CollectiveOptions& o, bool in_place,
                                              uint64_t seed = 1) {
  const size_t p = hosts.size();
  std::vector<std::vector<float>> outputs(p);
  expect_ok(run_on_hosts(hosts, [&](Comm& c) {
    const std::vector<float> original = input(c.rank(), n, seed);
    std::vector<float> x = original, y(n, -7.0f);
    if (in_place) {
      allreduce(c, x.data(), x.data(), n, o);
      outputs[c.rank()] = x;
    } else {
      allreduce(c, x.data(), y.data(), n, o);
      EXPECT_EQ(x, original) << "input changed";
      outputs[c.rank()] = y;
    }
  }));
  return outputs;
}

std::vector<std::vector<float>> all_inputs(size_t p, size_t n, uint64_t seed = 1) {
  std::vector<std::vector<float>> in;
  for (size_t r = 0; r < p; ++r) in.push_back(input(static_cast<int>(r), n, seed));
  return in;
}

// Every output within the reference's bound and bit-identical to rank 0's.
void expect_within_and_identical(const std::vector<std::vector<float>>& outputs,
                                 const verify::Reference& want, const std::string& what) {
  const size_t n = want.exact.size();
  for (size_t r = 0; r < outputs.size(); ++r) {
    EXPECT_EQ(verify::compare(outputs[r].data(), want).wrong, 0u) << what << " rank " << r;
    EXPECT_TRUE(n == 0 || std::memcmp(outputs[r].data(), outputs[0].data(), n * sizeof(float)) == 0)
        << what << ": rank " << r << " differs from rank 0";
  }
}

std::string describe(const std::vector<int>& hosts) {
  std::string s = "hosts";
  for (int h : hosts) s += " " + std::to_string(h);
  return s;
}

struct Case {
  std::vector<int> hosts;
  size_t count;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << describe(c.hosts) << ", count " << c.count;
}

class HierarchicalTest : public ::testing::TestWithParam<Case> {};

TEST_P(HierarchicalTest, SumWithinBoundAndBitIdentical) {
  const Case& c = GetParam();
  const int p = static_cast<int>(c.hosts.size());
  const auto inputs = all_inputs(c.hosts.size(), c.count);
  const auto want = verify::allreduce_reference(verify::source(inputs), p, c.count,
                                                {bound_fraction(DataType::kDynamic), 64});
  for (bool in_place : {false, true})
    expect_within_and_identical(run_allreduce(c.hosts, c.count, small_chunks(), in_place), want,
                                describe(c.hosts) + (in_place ? " in place" : ""));
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, HierarchicalTest,
    ::testing::Values(Case{grid(2, 2), 5000}, Case{grid(3, 2), 2053}, Case{grid(2, 3), 4099},
                      Case{grid(2, 2), 0}, Case{grid(2, 2), 1}, Case{grid(3, 2), 3},
                      Case{grid(2, 3), 5}, Case{grid(2, 2), 300007},
                      Case{{0, 0, 0, 1, 1}, 3001},     // uneven: 3 + 2
                      Case{{0, 1, 1, 1}, 2999},        // uneven: 1 + 3
                      Case{{7, 3, 7, 3, 9, 9}, 1999},  // interleaved, arbitrary ids
                      Case{{0, 0, 0, 0}, 1000},        // one host
                      Case{{0, 1, 2}, 1000},           // one rank per host
                      Case{{0}, 100}, Case{grid(4, 2), 777}));

TEST(Hierarchical, AutoTakesItWithSeveralRanksOnSeveralHosts) {
  std::vector<std::vector<int>> chosen(4);
  const std::vector<std::vector<int>> layouts = {grid(2, 2), {0, 0, 0, 0}, {0, 1, 2, 3}, {0, 1, 1}};
  for (size_t i = 0; i < layouts.size(); ++i)
    expect_ok(run_on_hosts(layouts[i], [&](Comm& c) {
      CollectiveOptions o = small_chunks(Algorithm::kAuto);
      const bool h = detail::use_hierarchical(c, 100, o);
      o.min_bytes = 401;  // uncompressed: flat
      const bool uncompressed = detail::use_hierarchical(c, 100, o);
      o.allreduce_algorithm = Algorithm::kHierarchical;
      const bool forced = detail::use_hierarchical(c, 100, o);
      if (c.rank() == 0) chosen[i] = {h, uncompressed, forced};
    }));
  EXPECT_EQ(chosen[0], (std::vector<int>{1, 0, 1}));  // 2 x 2
  EXPECT_EQ(chosen[1], (std::vector<int>{0, 0, 1}));  // one host
  EXPECT_EQ(chosen[2], (std::vector<int>{0, 0, 1}));  // one rank per host
  EXPECT_EQ(chosen[3], (std::vector<int>{1, 0, 1}));  // uneven 1 + 2
}

// Under `always` the estimate names the algorithm the compressed allreduce takes (octet bench
// reports it per row), as under `auto`.
TEST(Hierarchical, AnAlwaysEstimateNamesTheAlgorithmTaken) {
  std::vector<std::vector<int>> named(2);
  const std::vector<std::vector<int>> layouts = {grid(2, 2), {0, 0, 0, 0}};
  for (size_t i = 0; i < layouts.size(); ++i)
    expect_ok(run_on_hosts(layouts[i], [&](Comm& c) {
      std::vector<int> got;
      for (Algorithm a : {Algorithm::kAuto, Algorithm::kFlat, Algorithm::kHierarchical}) {
        const CollectiveOptions o = small_chunks(a);
        got.push_back(estimate_policy(c, Collective::kAllreduce, 100, o).hierarchical);
      }
      got.push_back(
          estimate_policy(c, Collective::kReduceScatter, 100, small_chunks(Algorithm::kAuto))
              .hierarchical);
      if (c.rank() == 0) named[i] = got;
    }));
  EXPECT_EQ(named[0], (std::vector<int>{1, 0, 1, 0}));  // 2 x 2: auto, flat, forced, not allreduce
  EXPECT_EQ(named[1], (std::vector<int>{0, 0, 1, 0}));  // one host
}

TEST(Hierarchical, AutoGivesTheHierarchicalBytes) {
  const auto hosts = grid(2, 2);
  const size_t n = 4099;
  const auto automatic = run_allreduce(hosts, n, small_chunks(Algorithm::kAuto), false);
  const auto forced = run_allreduce(hosts, n, small_chunks(), false);
  EXPECT_EQ(automatic, forced);
}

TEST(Hierarchical, LayoutOfHosts) {
  const std::vector<int> hosts = {5, 2, 5, 2, 5, 8, 8};  // hosts {0,2,4} {1,3} {5,6}
  std::vector<detail::HostLayout> got(hosts.size());
  expect_ok(
      run_on_hosts(hosts, [&](Comm& c) { got[c.rank()] = detail::HostLayout::of(c.transport()); }));
  EXPECT_EQ(got[0].hosts, 3);
  EXPECT_EQ(got[0].slices, 2);
  EXPECT_EQ(got[4].host, 0);
  EXPECT_EQ(got[4].local, 2);
  EXPECT_FALSE(got[4].owner());
  EXPECT_EQ(got[4].members, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(got[3].host, 1);
  EXPECT_EQ(got[3].local, 1);
  EXPECT_EQ(got[3].peers, (std::vector<int>{2, 3, 6}));
  EXPECT_EQ(got[5].peers, (std::vector<int>{0, 1, 5}));
}

// Between hosts the hierarchical algorithm sends 1/L of what the flat one sends (L ranks per
// host): each host's slice owners exchange their slice's host sums instead of every rank its
// whole vector.
TEST(Hierarchical, SendsLessBetweenHosts) {
  const auto hosts = grid(2, 3);
  const size_t n = 6 * 2048 * 4;
  size_t bytes[2];
  for (int h = 0; h < 2; ++h) {
    std::atomic<size_t> between{0};
    CollectiveOptions o = small_chunks(h ? Algorithm::kHierarchical : Algorithm::kFlat);
    o.chunk_bytes = 1 << 20;
    o.codec.block_size = 2048;
    expect_ok(run_on_hosts(
        hosts,
        [&](Comm& c) {
          std::vector<float> x = input(c.rank(), n);
          allreduce(c, x.data(), x.data(), n, o);
        },
        &between));
    bytes[h] = between;
  }
  // flat: 2 L (H-1)/H C(N) per host; hierarchical: 2 (H-1)/H C(N) (plus the descriptors)
  EXPECT_NEAR(static_cast<double>(bytes[1]) / static_cast<double>(bytes[0]), 1.0 / 3, 0.01)
      << bytes[0] << " flat, " << bytes[1] << " hierarchical";
}

TEST(Hierarchical, Average) {
  for (const auto& hosts : {grid(2, 2), grid(3, 2), std::vector<int>{0, 0, 0, 1, 1}}) {
    const size_t n = 3 * 2048 + 5, p = hosts.size();
    CollectiveOptions o = small_chunks();
    o.average = true;
    o.codec.block_size = 0;  // the default block
    const auto inputs = all_inputs(p, n, 9);
    const auto want =
        verify::allreduce_reference(verify::source(inputs), static_cast<int>(p), n,
                                    {bound_fraction(DataType::kDynamic), 2048}, /*average=*/true);
    for (bool in_place : {false, true})
      expect_within_and_identical(run_allreduce(hosts, n, o, in_place, 9), want,
                                  describe(hosts) + " average");
  }
}

// Each host's fp32 sum of 3e38 overflows; the average of finite values must stay finite.
TEST(Hierarchical, AverageOfHugeValuesStaysFinite) {
  const auto hosts = grid(2, 2);
  const size_t n = 300;
  std::vector<std::vector<float>> outputs(hosts.size());
  CollectiveOptions o = small_chunks();
  o.average = true;
  expect_ok(run_on_hosts(hosts, [&](Comm& c) {
    std::vector<float> x(n, 3e38f);
    allreduce(c, x.data(), x.data(), n, o);
    outputs[c.rank()] = x;
  }));
  for (const auto& y : outputs)
    for (float v : y) ASSERT_NEAR(v, 3e38f, 3e38f * 0.03);
}

TEST(Hierarchical, OneRankIsExact) {
  const size_t n = 1001;
  CollectiveOptions o = small_chunks();
  o.average = true;
  const auto out = run_allreduce({0}, n, o, true);
  EXPECT_EQ(out[0], input(0, n));
}

TEST(Hierarchical, UncompressedIsExactAndIdentical) {
  const auto hosts = grid(2, 2);
  const size_t n = 1001;
  CollectiveOptions o = small_chunks();
  o.min_bytes = n * 4 + 1;
  const auto inputs = all_inputs(hosts.size(), n);
  const auto want = verify::allreduce_reference(verify::source(inputs), 4, n, {0, 64});
  expect_within_and_identical(run_allreduce(hosts, n, o, false), want, "uncompressed");
}

TEST(Hierarchical, EveryTypeWithinItsBound) {
  const auto hosts = grid(2, 2);
  const size_t n = 2000;
  for (DataType t : all_data_types()) {
    CollectiveOptions o = small_chunks();
    o.codec.block_size = 128;
    o.codec.type = t;
    auto inputs = all_inputs(hosts.size(), n, 5);
    if (t == DataType::kDynamicUnsigned)
      for (auto& x : inputs)
        for (float& v : x) v = std::fabs(v);
    std::vector<std::vector<float>> outputs(hosts.size());
    expect_ok(run_on_hosts(hosts, [&](Comm& c) {
      outputs[c.rank()].resize(n);
      allreduce(c, inputs[c.rank()].data(), outputs[c.rank()].data(), n, o);
    }));
    const auto want =
        verify::allreduce_reference(verify::source(inputs), 4, n, {bound_fraction(t), 128});
    expect_within_and_identical(outputs, want, data_type_name(t));
  }
}

TEST(Hierarchical, StochasticWithinTwiceTheBound) {
  const auto hosts = grid(2, 3);
  const size_t n = 3000;
  CollectiveOptions o = small_chunks();
  o.codec.stochastic = true;
  o.codec.seed = 42;
  const auto inputs = all_inputs(hosts.size(), n);
  const auto want = verify::allreduce_reference(verify::source(inputs), 6, n,
                                                {2 * bound_fraction(DataType::kDynamic), 64});
  expect_within_and_identical(run_allreduce(hosts, n, o, false), want, "stochastic");
}

TEST(Hierarchical, ErrorFeedbackShrinksTheMeanError) {
  const auto hosts = grid(2, 2);
  const size_t n = 1024, p = hosts.size();
  const int steps = 16;
  const auto inputs = all_inputs(p, n, 8);
  const auto exact = verify::allreduce_reference(verify::source(inputs), 4, n, {}).exact;
  double error[2] = {0, 0};
  for (int ef = 0; ef < 2; ++ef) {
    std::vector<std::vector<float>> last(p);
    std::vector<double> mean(n, 0.0);
    expect_ok(run_on_hosts(hosts, [&](Comm& c) {
      CollectiveOptions o = small_chunks();
      o.codec.block_size = 1024;
      if (ef) o.error_feedback_key = "grad";
      std::vector<float> y(n);
      for (int s = 0; s < steps; ++s) {
        allreduce(c, inputs[c.rank()].data(), y.data(), n, o);
        if (c.rank() == 0)
          for (size_t i = 0; i < n; ++i) mean[i] += y[i] / steps;
      }
      last[c.rank()] = y;
    }));
    for (size_t r = 1; r < p; ++r) EXPECT_EQ(last[r], last[0]) << "rank " << r;
    for (size_t i = 0; i < n; ++i) error[ef] = std::max(error[ef], std::fabs(mean[i] - exact[i]));
  }
  EXPECT_GT(error[0], 0.0);
  EXPECT_LT(error[1], error[0] / 4) << "without " << error[0] << " with " << error[1];
}

TEST(Hierarchical, NonBlockingCallsOverlap) {
  const auto hosts = grid(2, 2);
  const size_t n = 5000;
  std::vector<std::vector<float>> a(4), b(4);
  expect_ok(run_on_hosts(hosts, [&](Comm& c) {
    std::vector<float> x = input(c.rank(), n, 1), y = input(c.rank(), n, 2);
    Request r1 = iallreduce(c, x.data(), x.data(), n, small_chunks());
    Request r2 = iallreduce(c, y.data(), y.data(), n, small_chunks(Algorithm::kFlat));
    r2.wait();
    r1.wait();
    a[c.rank()] = x;
    b[c.rank()] = y;
  }));
  const verify::Quantization q{bound_fraction(DataType::kDynamic), 64};
  expect_within_and_identical(
      a, verify::allreduce_reference(verify::source(all_inputs(4, n, 1)), 4, n, q), "first");
  expect_within_and_identical(
      b, verify::allreduce_reference(verify::source(all_inputs(4, n, 2)), 4, n, q), "second");
}

// Ranks that disagree fail together in the descriptor exchange (the first chunk's raw data in its
// envelope, count 100), leave an in-place input as it was, and the communicator stays usable.
TEST(Hierarchical, MismatchesFailOnEveryRank) {
  const auto hosts = grid(2, 2);
  const std::vector<std::function<void(int, size_t&, CollectiveOptions&)>> disagreements = {
      [](int r, size_t&, CollectiveOptions& o) {  // one rank forces the flat algorithm
        if (r == 3) o.allreduce_algorithm = Algorithm::kFlat;
      },
      [](int r, size_t& n, CollectiveOptions&) {  // counts
        if (r == 2) n = 99;
      },
      [](int r, size_t&, CollectiveOptions& o) {  // types
        if (r == 1) o.codec.type = DataType::kLinear;
      },
      [](int r, size_t&, CollectiveOptions& o) {  // compressed on some ranks only
        if (r == 0) o.min_bytes = 1 << 20;
      },
  };
  for (const auto& disagree : disagreements) {
    std::vector<std::vector<float>> after(hosts.size());
    std::atomic<int> failed{0};
    expect_ok(run_on_hosts(hosts, [&](Comm& c) {
      CollectiveOptions o = small_chunks(Algorithm::kAuto);
      size_t n = 100;
      disagree(c.rank(), n, o);
      std::vector<float> x(n, 1.0f);
      try {
        allreduce(c, x.data(), x.data(), n, o);
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kMismatch) ++failed;
      }
      EXPECT_EQ(x, std::vector<float>(n, 1.0f)) << "rank " << c.rank();
      std::vector<float> y(64, 1.0f);  // still usable
      allreduce(c, y.data(), y.data(), y.size(), small_chunks());
      after[c.rank()] = y;
    }));
    EXPECT_EQ(failed, 4);
    for (const auto& y : after) EXPECT_EQ(y, std::vector<float>(64, 4.0f));
  }
}

TEST(Hierarchical, InvalidArgumentOnOneRankFailsEveryRank) {
  expect_all(run_on_hosts(grid(2, 2),
                          [](Comm& c) {
                            std::vector<float> x(100, 1.0f);
                            float* p = c.rank() == 1 ? nullptr : x.data();
                            allreduce(c, p, p, x.size(), small_chunks());
                          }),
             ErrorCode::kInvalidArgument);
}

TEST(ThreadTransport, EmulatedHosts) {
  auto plain = make_thread_transports(3);
  auto grouped = make_thread_transports(5, 2);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(plain[0]->host_of(r), r);
  for (int r = 0; r < 5; ++r) EXPECT_EQ(grouped[4]->host_of(r), r / 2);
  EXPECT_THROW(make_thread_transports(4, 0), Error);
  EXPECT_THROW(make_thread_transports(std::vector<int>{}), Error);
}

}  // namespace
}  // namespace octet
