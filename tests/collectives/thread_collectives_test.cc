// Every operation over the thread transport (ranks as threads): results against the exact fp32
// result within the bound derived from bound_fraction, bit-identity across ranks, odd counts,
// in place, non-blocking, NaN, mismatches and invalid arguments on one rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "collectives/c_comm.h"
#include "counting_transport.h"
#include "octet/collectives.h"
#include "thread_ranks.h"
#include "verify/verify.h"

namespace octet {
namespace {

using test::expect_all;
using test::expect_ok;

using test::CountingTransport;

using verify::input;

// One quantization with the dynamic type (round to nearest) in blocks of `block`.
verify::Quantization dynamic(uint32_t block) {
  return {bound_fraction(DataType::kDynamic), block};
}

// Elements of `got` outside the bound of `want`.
uint64_t wrong(const std::vector<float>& got, const verify::Reference& want) {
  return verify::compare(got.data(), want).wrong;
}

// Runs fn(comm) on `size` threads; returns each rank's exception (or null).
std::vector<std::exception_ptr> run_ranks(int size, const std::function<void(Comm&)>& fn) {
  return test::run_on_threads(size, fn);
}

CollectiveOptions small_chunks(uint32_t block = 64) {
  CollectiveOptions o;
  o.policy = Policy::kAlways;
  o.codec.block_size = block;
  o.chunk_bytes = 4 * 256;  // several chunks per segment even for small counts
  o.window = 3;
  return o;
}

struct Case {
  int ranks;
  size_t count;
};

class AllreduceTest : public ::testing::TestWithParam<Case> {};

TEST_P(AllreduceTest, SumWithinBoundAndBitIdentical) {
  const auto [p, n] = GetParam();
  for (bool in_place : {false, true}) {
    const CollectiveOptions o = small_chunks();
    std::vector<std::vector<float>> inputs, outputs(p);
    for (int r = 0; r < p; ++r) inputs.push_back(input(r, n));
    expect_ok(run_ranks(p, [&](Comm& c) {
      std::vector<float> x = inputs[c.rank()], y(n, -7.0f);
      if (in_place) {
        allreduce(c, x.data(), x.data(), n, o);
        outputs[c.rank()] = x;
      } else {
        allreduce(c, x.data(), y.data(), n, o);
        EXPECT_EQ(x, inputs[c.rank()]) << "input changed";
        outputs[c.rank()] = y;
      }
    }));
    const auto want = verify::allreduce_reference(verify::source(inputs), p, n, dynamic(64));
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(wrong(outputs[r], want), 0u) << "rank " << r;
      EXPECT_TRUE(n == 0 ||
                  std::memcmp(outputs[r].data(), outputs[0].data(), n * sizeof(float)) == 0)
          << "rank " << r << " differs from rank 0";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Counts, AllreduceTest,
                         ::testing::Values(Case{1, 100}, Case{2, 0}, Case{2, 1}, Case{3, 1},
                                           Case{3, 2053}, Case{4, 5000}, Case{5, 777},
                                           Case{8, 4099}, Case{4, 3}));

TEST(Allreduce, AverageAndDefaultBlock) {
  const int p = 4;
  const size_t n = 3 * 2048 + 5;
  CollectiveOptions o;
  o.policy = Policy::kAlways;
  o.average = true;
  std::vector<std::vector<float>> inputs, outputs(p);
  for (int r = 0; r < p; ++r) inputs.push_back(input(r, n, 9));
  expect_ok(run_ranks(p, [&](Comm& c) {
    outputs[c.rank()].resize(n);
    allreduce(c, inputs[c.rank()].data(), outputs[c.rank()].data(), n, o);
  }));
  const auto want =
      verify::allreduce_reference(verify::source(inputs), p, n, dynamic(2048), /*average=*/true);
  for (int r = 0; r < p; ++r) EXPECT_EQ(wrong(outputs[r], want), 0u);
}

TEST(Allreduce, UncompressedBelowMinBytesIsExactRankOrderSum) {
  const int p = 3;
  const size_t n = 1001;
  CollectiveOptions o;
  o.policy = Policy::kAlways;
  o.min_bytes = n * 4 + 1;
  std::vector<std::vector<float>> inputs, outputs(p);
  for (int r = 0; r < p; ++r) inputs.push_back(input(r, n, 3));
  expect_ok(run_ranks(p, [&](Comm& c) {
    outputs[c.rank()].resize(n);
    allreduce(c, inputs[c.rank()].data(), outputs[c.rank()].data(), n, o);
  }));
  for (size_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int r = 0; r < p; ++r) s += inputs[r][i];
    for (int r = 0; r < p; ++r) ASSERT_EQ(outputs[r][i], s) << i;
  }
}

TEST(Allreduce, EveryTypeWithinItsBound) {
  const int p = 3;
  const size_t n = 2000;
  for (DataType t : all_data_types()) {
    CollectiveOptions o = small_chunks(128);
    o.codec.type = t;
    std::vector<std::vector<float>> inputs, outputs(p);
    for (int r = 0; r < p; ++r) {
      inputs.push_back(input(r, n, 5));
      if (t == DataType::kDynamicUnsigned)
        for (float& v : inputs.back()) v = std::fabs(v);
    }
    expect_ok(run_ranks(p, [&](Comm& c) {
      outputs[c.rank()].resize(n);
      allreduce(c, inputs[c.rank()].data(), outputs[c.rank()].data(), n, o);
    }));
    const auto want =
        verify::allreduce_reference(verify::source(inputs), p, n, {bound_fraction(t), 128});
    for (int r = 0; r < p; ++r) EXPECT_EQ(wrong(outputs[r], want), 0u) << data_type_name(t);
  }
}

TEST(Allreduce, StochasticWithinTwiceTheBound) {
  const int p = 4;
  const size_t n = 3000;
  CollectiveOptions o = small_chunks();
  o.codec.stochastic = true;
  o.codec.seed = 42;
  std::vector<std::vector<float>> inputs, outputs(p);
  for (int r = 0; r < p; ++r) inputs.push_back(input(r, n, 6));
  expect_ok(run_ranks(p, [&](Comm& c) {
    outputs[c.rank()].resize(n);
    allreduce(c, inputs[c.rank()].data(), outputs[c.rank()].data(), n, o);
  }));
  const auto want = verify::allreduce_reference(verify::source(inputs), p, n,
                                                {2 * bound_fraction(DataType::kDynamic), 64});
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(wrong(outputs[r], want), 0u);
    EXPECT_EQ(outputs[r], outputs[0]);
  }
}

TEST(Allreduce, NanPropagatesLikeFp32) {
  const int p = 3;
  const size_t n = 500;
  std::vector<std::vector<float>> outputs(p);
  expect_ok(run_ranks(p, [&](Comm& c) {
    std::vector<float> x = input(c.rank(), n);
    if (c.rank() == 1) x[17] = std::numeric_limits<float>::quiet_NaN();
    if (c.rank() == 2) x[300] = std::numeric_limits<float>::infinity();
    outputs[c.rank()].resize(n);
    allreduce(c, x.data(), outputs[c.rank()].data(), n, small_chunks());
  }));
  for (int r = 0; r < p; ++r) {
    EXPECT_TRUE(std::isnan(outputs[r][17]));
    EXPECT_EQ(outputs[r][300], std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isfinite(outputs[r][16]) && std::isfinite(outputs[r][301]));
  }
}

TEST(Allreduce, ErrorFeedbackShrinksTheMeanError) {
  const int p = 2;
  const size_t n = 1024;
  const int steps = 16;
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < p; ++r) inputs.push_back(input(r, n, 8));
  const auto exact = verify::allreduce_reference(verify::source(inputs), p, n, {}).exact;
  double error[2] = {0, 0};
  for (int ef = 0; ef < 2; ++ef) {
    std::vector<double> mean(n, 0.0);
    expect_ok(run_ranks(p, [&](Comm& c) {
      CollectiveOptions o;
      o.policy = Policy::kAlways;
      o.codec.block_size = 1024;
      if (ef) o.error_feedback_key = "grad";
      std::vector<float> y(n);
      for (int s = 0; s < steps; ++s) {
        allreduce(c, inputs[c.rank()].data(), y.data(), n, o);
        if (c.rank() == 0)
          for (size_t i = 0; i < n; ++i) mean[i] += y[i] / steps;
      }
    }));
    for (size_t i = 0; i < n; ++i) error[ef] = std::max(error[ef], std::fabs(mean[i] - exact[i]));
  }
  EXPECT_GT(error[0], 0.0);
  EXPECT_LT(error[1], error[0] / 4) << "without " << error[0] << " with " << error[1];
}

TEST(Allreduce, MismatchedCountsFailOnEveryRank) {
  expect_all(run_ranks(4,
                       [](Comm& c) {
                         const size_t n = c.rank() == 2 ? 99 : 100;
                         std::vector<float> x(n, 1.0f);
                         allreduce(c, x.data(), x.data(), n);
                       }),
             ErrorCode::kMismatch);
  expect_all(run_ranks(3,
                       [](Comm& c) {
                         CollectiveOptions o;
                         o.policy = Policy::kAlways;
                         if (c.rank() == 0) o.codec.type = DataType::kLinear;
                         std::vector<float> x(64, 1.0f);
                         allreduce(c, x.data(), x.data(), x.size(), o);
                       }),
             ErrorCode::kMismatch);
  expect_all(run_ranks(2,
                       [](Comm& c) {  // different operations
                         std::vector<float> x(64, 1.0f), y(128);
                         if (c.rank() == 0)
                           allreduce(c, x.data(), x.data(), 64);
                         else
                           allgather(c, x.data(), y.data(), 64);
                       }),
             ErrorCode::kMismatch);
}

TEST(Allreduce, InvalidArgumentOnOneRankFailsEveryRankAndTheCommStaysUsable) {
  expect_all(run_ranks(3,
                       [](Comm& c) {
                         std::vector<float> x(10, 1.0f);
                         allreduce(c, c.rank() == 1 ? nullptr : x.data(),
                                   c.rank() == 1 ? nullptr : x.data(), 10);
                       }),
             ErrorCode::kInvalidArgument);
  expect_ok(run_ranks(3, [](Comm& c) {
    std::vector<float> x(10, 1.0f);
    CollectiveOptions bad;
    bad.policy = Policy::kAlways;
    bad.codec.block_size = c.rank() == 0 ? 100 : 0;  // not a power of two on rank 0
    EXPECT_THROW(allreduce(c, x.data(), x.data(), 10, bad), Error);
    allreduce(c, x.data(), x.data(), 10);
    EXPECT_NEAR(x[3], 3.0f, 0.05f);
  }));
}

TEST(ReduceScatter, WithinBoundInAndOutOfPlace) {
  for (int p : {1, 2, 3, 5}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{333}}) {
      for (bool in_place : {false, true}) {
        std::vector<std::vector<float>> inputs, outputs(p);
        for (int r = 0; r < p; ++r) inputs.push_back(input(r, n * p, 2));
        expect_ok(run_ranks(p, [&](Comm& c) {
          std::vector<float> x = inputs[c.rank()], y(n);
          if (in_place) {
            reduce_scatter(c, nullptr, x.data(), n, small_chunks());
            y.assign(x.begin(), x.begin() + n);
          } else {
            reduce_scatter(c, x.data(), y.data(), n, small_chunks());
          }
          outputs[c.rank()] = y;
        }));
        for (int r = 0; r < p; ++r) {
          const auto want =
              verify::reduce_scatter_reference(verify::source(inputs), p, r, n, dynamic(64));
          EXPECT_EQ(wrong(outputs[r], want), 0u) << "p=" << p << " n=" << n << " rank " << r;
        }
      }
    }
  }
}

TEST(Allgather, WithinBoundBitIdenticalInAndOutOfPlace) {
  for (int p : {1, 2, 4, 7}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{1031}}) {
      for (bool in_place : {false, true}) {
        std::vector<std::vector<float>> outputs(p);
        expect_ok(run_ranks(p, [&](Comm& c) {
          std::vector<float> x = input(c.rank(), n), y(n * p);
          if (in_place) {
            std::copy(x.begin(), x.end(), y.begin() + n * c.rank());
            allgather(c, nullptr, y.data(), n, small_chunks());
          } else {
            allgather(c, x.data(), y.data(), n, small_chunks());
          }
          outputs[c.rank()] = y;
        }));
        const auto want =
            verify::allgather_reference(verify::source(verify::Inputs{}), p, n, dynamic(64));
        for (int r = 0; r < p; ++r) {
          EXPECT_EQ(outputs[r], outputs[0]) << "rank " << r;
          EXPECT_EQ(wrong(outputs[r], want), 0u) << "p=" << p << " n=" << n << " rank " << r;
        }
      }
    }
  }
}

TEST(Broadcast, EveryRootWithinBoundBitIdentical) {
  const int p = 4;
  const size_t n = 1500;
  for (int root = 0; root < p; ++root) {
    std::vector<std::vector<float>> outputs(p);
    expect_ok(run_ranks(p, [&](Comm& c) {
      std::vector<float> x = c.rank() == root ? input(root, n) : std::vector<float>(n, 0.0f);
      broadcast(c, x.data(), n, root, small_chunks());
      outputs[c.rank()] = x;
    }));
    const auto want =
        verify::broadcast_reference(verify::source(verify::Inputs{}), p, root, n, dynamic(64));
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(outputs[r], outputs[root]);
      EXPECT_EQ(wrong(outputs[r], want), 0u) << "root " << root << " rank " << r;
    }
  }
  expect_all(run_ranks(2,
                       [](Comm& c) {  // disagreeing roots
                         std::vector<float> x(8);
                         broadcast(c, x.data(), 8, c.rank());
                       }),
             ErrorCode::kMismatch);
}

TEST(SendRecv, OrderedWithinBoundAndBothWays) {
  const size_t n = 777;
  expect_ok(run_ranks(2, [&](Comm& c) {
    const int peer = 1 - c.rank();
    // Two transfers each way with the same tag, started before any completes.
    std::vector<float> a = input(c.rank(), n, 1), b = input(c.rank(), n, 2);
    std::vector<float> ra(n), rb(n);
    Request s1 = isend(c, a.data(), n, peer, 5, small_chunks());
    Request s2 = isend(c, b.data(), n, peer, 5, small_chunks());
    Request r2, r1 = irecv(c, ra.data(), n, peer, 5, small_chunks());
    r2 = irecv(c, rb.data(), n, peer, 5, small_chunks());
    r2.wait();  // waiting on the second drives the first
    r1.wait();
    s1.wait();
    s2.wait();
    const auto sent = [&](uint64_t seed) {  // what the peer sent, inputs of that seed
      return verify::send_recv_reference(verify::source(verify::Inputs{seed}), peer, n,
                                         dynamic(64));
    };
    EXPECT_EQ(wrong(ra, sent(1)), 0u);
    EXPECT_EQ(wrong(rb, sent(2)), 0u);
  }));
}

TEST(SendRecv, MismatchFailsBothSides) {
  expect_all(run_ranks(2,
                       [](Comm& c) {
                         std::vector<float> x(100, 1.0f);
                         if (c.rank() == 0)
                           send(c, x.data(), 100, 1, 0);
                         else
                           recv(c, x.data(), 90, 0, 0);
                       }),
             ErrorCode::kMismatch);
  expect_ok(run_ranks(2, [](Comm& c) {
    std::vector<float> x(10, 1.0f);
    EXPECT_THROW(send(c, x.data(), 10, 5, 0), Error);   // no such peer
    EXPECT_THROW(send(c, x.data(), 10, 0, -1), Error);  // bad tag
  }));
}

TEST(NonBlocking, OverlappingCollectivesProgressInTest) {
  const int p = 3;
  const size_t n = 2500;
  std::vector<std::vector<float>> sums(p), gathered(p);
  expect_ok(run_ranks(p, [&](Comm& c) {
    std::vector<float> x = input(c.rank(), n), y(n), g(n * p);
    Request a = iallreduce(c, x.data(), y.data(), n, small_chunks());
    Request b = iallgather(c, x.data(), g.data(), n, small_chunks());
    bool da = false, db = false;
    while (!da || !db) {
      if (!db) db = b.test();
      if (!da) da = a.test();
    }
    EXPECT_FALSE(a.valid());
    sums[c.rank()] = y;
    gathered[c.rank()] = g;
  }));
  for (int r = 1; r < p; ++r) {
    EXPECT_EQ(sums[r], sums[0]);
    EXPECT_EQ(gathered[r], gathered[0]);
  }
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < p; ++r) inputs.push_back(input(r, n));
  EXPECT_EQ(wrong(sums[0], verify::allreduce_reference(verify::source(inputs), p, n, dynamic(64))),
            0u);
}

TEST(CApi, AllreduceNonBlockingAndErrors) {
  const int p = 2;
  const size_t n = 300;
  auto transports = make_thread_transports(p);
  std::vector<std::thread> threads;
  std::vector<std::vector<float>> out(p);
  std::vector<int> status(p, -1), bad(p, -1), waited(p, -1);
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      octet_comm comm = nullptr;
      if (detail::wrap_comm(transports[r], &comm) != OCTET_OK) return;
      octet_options o;
      octet_options_init(&o);
      o.policy = OCTET_POLICY_ALWAYS;
      o.block_size = 64;
      std::vector<float> x = input(r, n);
      out[r].resize(n);
      status[r] = octet_allreduce(comm, x.data(), out[r].data(), n, &o);
      octet_request req = nullptr;
      std::vector<float> y(n);
      if (octet_iallreduce(comm, x.data(), y.data(), n, &o, &req) == OCTET_OK) {
        int done = 0;
        while (!done) waited[r] = octet_test(&req, &done);
        if (y != out[r]) waited[r] = -2;
      }
      o.block_size = 100;
      bad[r] = octet_allreduce(comm, x.data(), x.data(), n, &o);
      octet_comm_free(comm);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(status[r], OCTET_OK);
    EXPECT_EQ(waited[r], OCTET_OK);
    EXPECT_EQ(bad[r], OCTET_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(out[r], out[0]);
  }
  EXPECT_EQ(octet_allreduce(nullptr, nullptr, nullptr, 0, nullptr), OCTET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error_message()).find("communicator"), std::string::npos);
  EXPECT_EQ(octet_wait(nullptr), OCTET_ERR_INVALID_ARGUMENT);
}

// The bandwidth claim of docs/algorithms.md: in allreduce no rank sends more than 2(P-1)/P of
// the compressed size (plus descriptors and per-chunk headers), whatever the pipeline chunking.
TEST(Allreduce, EachRankSendsAtMostTwoPMinusOneOverPOfTheCompressedSize) {
  for (int p : {2, 4, 5}) {
    const size_t n = (size_t{1} << 20) + 777;
    auto inner = make_thread_transports(p);
    std::vector<std::shared_ptr<CountingTransport>> counting;
    for (auto& t : inner) counting.push_back(std::make_shared<CountingTransport>(t));
    std::vector<std::thread> threads;
    for (int r = 0; r < p; ++r)
      threads.emplace_back([&, r] {
        Comm comm(counting[r]);
        std::vector<float> x = input(r, n), y(n);
        CollectiveOptions o;
        o.policy = Policy::kAlways;
        allreduce(comm, x.data(), y.data(), n, o);
      });
    for (auto& t : threads) t.join();
    const double compressed = double(encoded_size(n, CodecOptions{}));
    const double optimal = 2.0 * (p - 1) / p * compressed;
    for (int r = 0; r < p; ++r) {
      EXPECT_LE(double(counting[r]->bytes_sent), optimal * 1.01 + 4096)
          << "P=" << p << " rank " << r;
      EXPECT_GE(double(counting[r]->bytes_sent), optimal * 0.95) << "P=" << p << " rank " << r;
    }
  }
}

}  // namespace
}  // namespace octet
