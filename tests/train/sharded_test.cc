// The model-parallel MLP against the whole one: column splits cover every column once, packing
// round-trips, and ShardedMlp over 1, 2 and 3 simulated ranks (threads sharing memory) gives the
// Mlp's gradients: bit for bit at one rank, and within float rounding when split (the sums over
// ranks add the same terms in another order).
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "train/blas.h"
#include "train/mlp.h"
#include "train/rng.h"
#include "train/sharded_mlp.h"

namespace octet {
namespace train {
namespace {

TEST(ColumnSplit, CoversEveryColumnOnce) {
  for (int width : {1, 10, 1024, 1025})
    for (int ranks = 1; ranks <= std::min(width, 7); ++ranks) {
      const ColumnSplit s{width, ranks};
      int next = 0;
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(s.begin(r), next);
        EXPECT_GE(s.count(r), 1);
        EXPECT_LE(s.count(r), s.block());
        next += s.count(r);
      }
      EXPECT_EQ(next, width);
    }
}

TEST(ColumnSplit, PackUnpackRoundTrip) {
  const ColumnSplit s{10, 3};
  const int n = 4;
  std::vector<float> full(n * 10), blocks(size_t(n) * s.block() * 3), back(full.size());
  for (size_t i = 0; i < full.size(); ++i) full[i] = float(i + 1);
  pack_columns(s, full.data(), n, blocks.data());
  unpack_columns(s, blocks.data(), n, back.data());
  EXPECT_EQ(full, back);
  EXPECT_EQ(blocks[3], 0.0f);  // rank 0 holds 3 columns of a 4-column block: padding
}

// An in-memory Exchange for `ranks` threads: each call meets the others at a barrier.
class Shared {
 public:
  explicit Shared(int ranks) : ranks_(ranks), slots_(ranks) {}
  void barrier() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int generation = generation_;
    if (++arrived_ == ranks_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
  }
  int ranks_;
  std::vector<std::vector<float>> slots_;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0, generation_ = 0;
};

class Done : public Pending {
 public:
  bool test() override { return true; }
  void wait() override {}
};

class ThreadExchange : public Exchange {
 public:
  ThreadExchange(Shared& shared, int rank) : s_(shared), rank_(rank) {}
  std::unique_ptr<Pending> start_allgather(const float* in, float* out, size_t count,
                                           TransferTag) override {
    s_.slots_[rank_].assign(in, in + count);
    s_.barrier();
    for (int r = 0; r < s_.ranks_; ++r)
      std::copy(s_.slots_[r].begin(), s_.slots_[r].end(), out + r * count);
    s_.barrier();
    return std::make_unique<Done>();
  }
  std::unique_ptr<Pending> start_reduce_scatter(const float* in, float* out, size_t count,
                                                TransferTag) override {
    s_.slots_[rank_].assign(in, in + count * s_.ranks_);
    s_.barrier();
    for (size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int r = 0; r < s_.ranks_; ++r) sum += s_.slots_[r][rank_ * count + i];
      out[i] = sum;
    }
    s_.barrier();
    return std::make_unique<Done>();
  }
  void reduce_scatter_exact(const float* in, float* out, size_t count) override {
    ThreadExchange::start_reduce_scatter(in, out, count, {});
  }
  bool exact() const override { return true; }

 protected:
  CommStats transfer_stats() const override { return {}; }

 private:
  Shared& s_;
  int rank_;
};

// The same, with reduce_scatter's sums rounded to bfloat16 (the top 16 bits): an approximate
// transfer whose error the model can measure.
class RoundingExchange : public ThreadExchange {
 public:
  using ThreadExchange::ThreadExchange;
  std::unique_ptr<Pending> start_reduce_scatter(const float* in, float* out, size_t count,
                                                TransferTag tag) override {
    auto done = ThreadExchange::start_reduce_scatter(in, out, count, tag);
    for (size_t i = 0; i < count; ++i) {
      uint32_t bits;
      std::memcpy(&bits, out + i, 4);
      bits &= 0xffff0000u;
      std::memcpy(out + i, &bits, 4);
    }
    return done;
  }
  bool exact() const override { return false; }
};

struct Batch {
  std::vector<float> x;
  std::vector<uint8_t> y;
  std::vector<uint64_t> keys;
  Batch(int n, int width) : x(size_t(n) * width), y(n), keys(n) {
    Rng rng(3);
    for (float& v : x) v = rng.uniform();
    for (int i = 0; i < n; ++i) {
      y[i] = uint8_t(rng.below(10));
      keys[i] = uint64_t(i);
    }
  }
};

// One ShardedMlp (seed 5) per rank, each on its own thread with an `Ex` exchange between them:
// body(rank, its part, its exchange).
template <typename Ex, typename Body>
void on_sharded_ranks(const MlpShape& shape, int ranks, Body body) {
  Shared shared(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ShardedMlp part(shape, 5, r, ranks);
      Ex ex(shared, r);
      body(r, part, ex);
    });
  for (std::thread& t : threads) t.join();
}

// Gradients of the whole model, gathered from `ranks` sharded ones (layer by layer, (in + 1)
// rows of each rank's columns), and the Mlp's own, after one forward_backward; and the gradient
// of the input.
void compare(int ranks, bool bitwise) {
  blas_single_thread();
  const MlpShape shape{{30, 16, 12, 10}, {0.2f, 0.3f, 0.3f}};
  const int n = 8;
  const Batch b(n, 30);
  Mlp whole(shape, 5);
  std::vector<float> dx(b.x.size());
  const double loss =
      whole.forward_backward(b.x.data(), b.y.data(), n, 11, b.keys.data(), 1.0f / n, dx.data());
  std::vector<std::vector<float>> grads(ranks), partials(ranks, std::vector<float>(dx.size()));
  std::vector<double> losses(ranks);
  on_sharded_ranks<ThreadExchange>(shape, ranks, [&](int r, ShardedMlp& part, Exchange& ex) {
    losses[r] = part.forward_backward(ex, b.x.data(), b.y.data(), n, 11, b.keys.data(), 1.0f / n, 0,
                                      false, partials[r].data());
    grads[r] = part.grads();
  });
  size_t at = 0;
  std::vector<size_t> cursor(ranks, 0);
  for (int l = 0; l < 3; ++l) {
    const ColumnSplit s{shape.widths[l + 1], ranks};
    for (int row = 0; row < shape.widths[l] + 1; ++row)
      for (int r = 0; r < ranks; ++r)
        for (int c = 0; c < s.count(r); ++c, ++at) {
          const float got = grads[r][cursor[r]++];
          if (bitwise)
            ASSERT_EQ(got, whole.grads()[at]) << "layer " << l << " value " << at;
          else
            ASSERT_NEAR(got, whole.grads()[at], 1e-5f * (1 + std::fabs(whole.grads()[at])));
        }
  }
  EXPECT_EQ(at, whole.grads().size());
  // The input gradient (hybrid sends it back to the stem): the partial sums add up to it.
  for (size_t i = 0; i < dx.size(); ++i) {
    float sum = 0;
    for (int r = 0; r < ranks; ++r) sum += partials[r][i];
    if (bitwise)
      ASSERT_EQ(sum, dx[i]);
    else
      ASSERT_NEAR(sum, dx[i], 1e-5f * (1 + std::fabs(dx[i])));
  }
  for (double l : losses) EXPECT_NEAR(l, loss, bitwise ? 0.0 : 1e-5 * loss);
}

// One forward_backward at 2 ranks over `Ex`; every rank's error table.
template <typename Ex>
std::vector<ErrorTable> error_tables(bool measure) {
  blas_single_thread();
  const MlpShape shape{{30, 16, 12, 10}, {0.2f, 0.3f, 0.3f}};
  const int n = 8, ranks = 2;
  const Batch b(n, 30);
  std::vector<ErrorTable> tables(ranks);
  on_sharded_ranks<Ex>(shape, ranks, [&](int r, ShardedMlp& part, Exchange& ex) {
    part.forward_backward(ex, b.x.data(), b.y.data(), n, 11, b.keys.data(), 1.0f / n, 0, false,
                          nullptr, measure);
    tables[r] = part.errors();
  });
  return tables;
}

// mp's input gradients (the reduce_scatter of partial sums) are measured on measured steps of an
// approximate exchange: "igrad layer 1" and "2", one value per row and column this rank owns.
TEST(ShardedMlp, MeasuresTheInputGradientsItReceives) {
  const std::vector<ErrorTable> tables = error_tables<RoundingExchange>(true);
  for (int r = 0; r < 2; ++r)
    for (int l : {1, 2}) {
      const std::string key = "igrad layer " + std::to_string(l);
      ASSERT_EQ(tables[r].count(key), 1u) << key;
      const ErrorSum& e = tables[r].at(key);
      EXPECT_EQ(e.count, uint64_t(8 * ColumnSplit{l == 1 ? 16 : 12, 2}.count(r))) << key;
      EXPECT_GT(e.mean_abs(), 0.0) << key;
      EXPECT_GT(e.mean_rel(), 0.0) << key;
      EXPECT_LT(e.mean_rel(), 1.0 / 128) << key;  // bfloat16 keeps 8 significant bits
    }
}

TEST(ShardedMlp, NoInputGradientErrorWhenExactOrNotMeasured) {
  for (const ErrorTable& t : error_tables<ThreadExchange>(true))
    EXPECT_TRUE(t.empty());  // fp32: nothing approximated, nothing recorded
  for (const ErrorTable& t : error_tables<RoundingExchange>(false))
    for (const auto& [key, e] : t) EXPECT_EQ(key.rfind("igrad", 0), std::string::npos) << key;
}

TEST(ShardedMlp, OneRankIsTheMlpBitForBit) {
  compare(1, true);
}
TEST(ShardedMlp, TwoRanksGiveTheMlpGradients) {
  compare(2, false);
}
TEST(ShardedMlp, ThreeRanksGiveTheMlpGradients) {
  compare(3, false);
}

}  // namespace
}  // namespace train
}  // namespace octet
