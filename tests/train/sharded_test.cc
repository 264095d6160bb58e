// The model-parallel MLP against the whole one: column splits cover every column once, packing
// round-trips, and ShardedMlp over 1, 2 and 3 simulated ranks (threads sharing memory) gives the
// Mlp's gradients: bit for bit at one rank, and within float rounding when split (the sums over
// ranks add the same terms in another order).
#include <cmath>
#include <condition_variable>
#include <mutex>
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
  CommStats stats() const override { return {}; }
  bool exact() const override { return true; }

 private:
  Shared& s_;
  int rank_;
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
  Shared shared(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ShardedMlp part(shape, 5, r, ranks);
      ThreadExchange ex(shared, r);
      losses[r] = part.forward_backward(ex, b.x.data(), b.y.data(), n, 11, b.keys.data(), 1.0f / n,
                                        0, false, partials[r].data());
      grads[r] = part.grads();
    });
  for (std::thread& t : threads) t.join();
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
