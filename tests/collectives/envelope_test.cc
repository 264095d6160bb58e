// The descriptor's envelope (docs/algorithms.md, "Descriptor exchange"): a small call's first
// message to each peer travels with the descriptor, so the call has no round of its own for it;
// a disagreement still fails every rank, leaves no message behind for the next call, and leaves
// an in-place input as it was.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "counting_transport.h"
#include "octet/collectives.h"
#include "thread_ranks.h"
#include "verify/verify.h"

namespace octet {
namespace {

using test::CountingTransport;
using test::expect_all;
using test::expect_ok;

CollectiveOptions always() {
  CollectiveOptions o;
  o.policy = Policy::kAlways;
  return o;
}

// Messages each rank handed to its transport while fn ran on every rank (rank r on host
// hosts[r]; one host each when hosts is empty).
std::vector<uint64_t> sends(int p, const std::function<void(Comm&)>& fn,
                            std::vector<int> hosts = {}) {
  if (hosts.empty())
    for (int r = 0; r < p; ++r) hosts.push_back(r);
  std::vector<std::shared_ptr<Transport>> wrapped;
  std::vector<std::shared_ptr<CountingTransport>> counting;
  for (auto& t : make_thread_transports(hosts)) {
    counting.push_back(std::make_shared<CountingTransport>(t));
    wrapped.push_back(counting.back());
  }
  expect_ok(test::run_on_threads(wrapped, fn));
  std::vector<uint64_t> n;
  for (const auto& c : counting) n.push_back(c->sends);
  return n;
}

// Before the envelope, a descriptor was one more message to every peer: allreduce sent 3 (P-1)
// messages per rank, reduce_scatter, allgather and broadcast 2 (P-1) (the root; P-1 elsewhere).
TEST(Envelope, SmallCallsSendNoMessageOfTheirOwnForTheDescriptor) {
  const int p = 4;
  const size_t n = 8192;  // a block of 2048 per rank; 8 KiB compressed: fits an envelope
  const uint64_t peers = p - 1;
  for (uint64_t s : sends(p, [&](Comm& c) {
         std::vector<float> x = verify::input(c.rank(), n), y(n);
         allreduce(c, x.data(), y.data(), n, always());
       }))
    EXPECT_EQ(s, 2 * peers);
  for (uint64_t s : sends(p, [&](Comm& c) {
         std::vector<float> x = verify::input(c.rank(), n * p), y(n);
         reduce_scatter(c, x.data(), y.data(), n, always());
       }))
    EXPECT_EQ(s, peers);
  for (uint64_t s : sends(p, [&](Comm& c) {
         std::vector<float> x = verify::input(c.rank(), n), y(n * p);
         allgather(c, x.data(), y.data(), n, always());
       }))
    EXPECT_EQ(s, peers);
  for (uint64_t s : sends(p, [&](Comm& c) {
         std::vector<float> x = verify::input(0, n);
         broadcast(c, x.data(), n, 1, always());
       }))
    EXPECT_EQ(s, peers);
}

// The hierarchical allreduce, 2 hosts x 2 ranks, one chunk: P - 1 envelopes (the raw chunk for
// the host's other slice owner rides in the one to it), then its segment of the host's sum to the
// other host's owner (1), the total of its segment back (1), and the slice's 2 segments to the
// other rank on its host (2): 7. A descriptor round of its own made it 8 (the raw chunk apart).
TEST(Envelope, SmallHierarchicalCallsSendNoMessageOfTheirOwnForTheDescriptor) {
  const int p = 4;
  CollectiveOptions o = always();
  o.allreduce_algorithm = CollectiveOptions::AllreduceAlgorithm::kHierarchical;
  auto run = [&](size_t n) {
    return sends(p,
                 [&](Comm& c) {
                   std::vector<float> x = verify::input(c.rank(), n), y(n);
                   allreduce(c, x.data(), y.data(), n, o);
                 },
                 {0, 0, 1, 1});
  };
  for (uint64_t s : run(8192)) EXPECT_EQ(s, 7u);  // 16 KiB of fp32 to the other slice's owner
  // 64 KiB of fp32 per slice does not fit: the descriptor goes apart, the chunk after it.
  for (uint64_t s : run(32768)) EXPECT_EQ(s, 8u);
}

// A large call sends its descriptor alone (its data does not fit an envelope) while it encodes.
TEST(Envelope, LargeCallsSendTheDescriptorApart) {
  const int p = 3;
  const size_t n = 200000;  // one chunk per segment at the default chunk size
  for (uint64_t s : sends(p, [&](Comm& c) {
         std::vector<float> x = verify::input(c.rank(), n), y(n);
         allreduce(c, x.data(), y.data(), n, always());
       }))
    EXPECT_EQ(s, 3u * (p - 1));
}

// A mismatch of either size fails every rank, and the next call on the same communicators gets
// exact results: nothing of the failed call was left to be matched by it.
TEST(Envelope, MismatchFailsEveryRankAndLeavesNothingBehind) {
  for (size_t n : {size_t{1000}, size_t{100000}}) {
    auto transports = make_thread_transports(4);
    std::vector<std::unique_ptr<Comm>> comms;
    for (auto& t : transports) comms.push_back(std::make_unique<Comm>(t));
    auto on = [&](const std::function<void(Comm&)>& fn) {
      std::vector<std::exception_ptr> errors(comms.size());
      std::vector<std::thread> threads;
      for (size_t r = 0; r < comms.size(); ++r)
        threads.emplace_back([&, r] {
          try {
            fn(*comms[r]);
          } catch (...) {
            errors[r] = std::current_exception();
          }
        });
      for (auto& t : threads) t.join();
      return errors;
    };
    expect_all(on([&](Comm& c) {
                 const size_t mine = c.rank() == 2 ? n + 1 : n;
                 std::vector<float> x = verify::input(c.rank(), mine), y(mine);
                 allreduce(c, x.data(), y.data(), mine, always());
               }),
               ErrorCode::kMismatch);
    expect_ok(on([&](Comm& c) {
      CollectiveOptions o = always();
      o.min_bytes = ~size_t{0};  // uncompressed: exact, so any stray message would show
      std::vector<float> x(n, static_cast<float>(c.rank() + 1)), y(n);
      allreduce(c, x.data(), y.data(), n, o);
      for (size_t i = 0; i < n; i += 97) ASSERT_EQ(y[i], 10.0f) << "n=" << n << " i=" << i;
    }));
  }
}

// A call that fails at the verdict has not written into its buffers, so an in-place input is
// intact (the early stage only reads and encodes).
TEST(Envelope, AFailedCallLeavesAnInPlaceInputIntact) {
  for (size_t n : {size_t{512}, size_t{70000}}) {
    expect_all(test::run_on_threads(3,
                                    [&](Comm& c) {
                                      const size_t mine = c.rank() == 0 ? n + 64 : n;
                                      std::vector<float> all(mine * 3);
                                      std::vector<float> x = verify::input(c.rank(), mine);
                                      std::copy(x.begin(), x.end(), all.begin() + mine * c.rank());
                                      const std::vector<float> before = all;
                                      try {
                                        allgather(c, nullptr, all.data(), mine, always());
                                      } catch (...) {
                                        EXPECT_EQ(all, before) << "allgather n=" << n;
                                        throw;
                                      }
                                    }),
               ErrorCode::kMismatch);
    expect_all(test::run_on_threads(3,
                                    [&](Comm& c) {
                                      CollectiveOptions o = always();
                                      if (c.rank() == 2) o.codec.type = DataType::kLinear;
                                      std::vector<float> x = verify::input(c.rank(), n);
                                      const std::vector<float> before = x;
                                      try {
                                        broadcast(c, x.data(), n, 0, o);
                                      } catch (...) {
                                        EXPECT_EQ(x, before) << "broadcast n=" << n;
                                        throw;
                                      }
                                    }),
               ErrorCode::kMismatch);
  }
}

// Error feedback keeps the descriptor apart (a failed call must not have touched the residuals),
// so ranks that differ only in it use different envelopes; they still agree and get one result.
TEST(Envelope, RanksThatDifferInErrorFeedbackStillAgree) {
  const int p = 3;
  const size_t n = 3000;
  std::vector<std::vector<float>> out(p);
  expect_ok(test::run_on_threads(p, [&](Comm& c) {
    CollectiveOptions o = always();
    if (c.rank() == 1) o.error_feedback_key = "grad";
    std::vector<float> x = verify::input(c.rank(), n), y(n);
    allreduce(c, x.data(), y.data(), n, o);
    out[static_cast<size_t>(c.rank())] = y;
  }));
  EXPECT_EQ(out[0], out[1]);
  EXPECT_EQ(out[0], out[2]);
}

// Point to point: a small tensor travels in the sender's envelope (one message each way: the
// envelope and the receiver's answer; before, the sender sent its descriptor and then the data).
TEST(Envelope, ASmallSendIsOneMessageEachWay) {
  const size_t n = 5000;
  const auto count = sends(2, [&](Comm& c) {
    std::vector<float> x = verify::input(0, n), y(n);
    if (c.rank() == 0)
      send(c, x.data(), n, 1, 3);
    else
      recv(c, y.data(), n, 0, 3);
  });
  EXPECT_EQ(count[0], 1u);
  EXPECT_EQ(count[1], 1u);
}

// A disagreeing pair fails both sides, small (the tensor came in the envelope and is dropped) or
// large, and the next transfer on the same tag gets exactly what was sent.
TEST(Envelope, ADisagreeingSendLeavesNothingBehind) {
  for (size_t n : {size_t{100}, size_t{50000}}) {
    auto transports = make_thread_transports(2);
    Comm a(transports[0]), b(transports[1]);
    std::exception_ptr error[2];
    auto both = [&](const std::function<void(Comm&)>& fn) {
      std::thread t0([&] {
        try {
          fn(a);
        } catch (...) {
          error[0] = std::current_exception();
        }
      });
      try {
        fn(b);
      } catch (...) {
        error[1] = std::current_exception();
      }
      t0.join();
    };
    both([&](Comm& c) {
      std::vector<float> x(n, 2.0f);
      if (c.rank() == 0)
        send(c, x.data(), n, 1, 7);
      else
        recv(c, x.data(), n - 10, 0, 7);
    });
    expect_all({error[0], error[1]}, ErrorCode::kMismatch);
    error[0] = error[1] = nullptr;
    both([&](Comm& c) {
      CollectiveOptions exact;
      exact.min_bytes = ~size_t{0};
      std::vector<float> x(n, c.rank() == 0 ? 3.0f : 0.0f);
      if (c.rank() == 0) {
        send(c, x.data(), n, 1, 7, exact);
        return;
      }
      recv(c, x.data(), n, 0, 7, exact);
      for (size_t i = 0; i < n; i += 7) ASSERT_EQ(x[i], 3.0f) << "n=" << n << " i=" << i;
    });
    expect_ok({error[0], error[1]});
  }
}

}  // namespace
}  // namespace octet
