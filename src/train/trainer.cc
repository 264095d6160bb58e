#include "train/trainer.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "octet/detail/hash.h"
#include "octet/error.h"
#include "train/blas.h"
#include "train/reducer.h"
#include "train/rng.h"

namespace octet {
namespace train {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct World {
  int rank = 0, size = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  // [begin, end) of n items for this rank, in contiguous, nearly equal shards.
  std::pair<size_t, size_t> shard(size_t n) const {
    return {n * size_t(rank) / size_t(size), n * size_t(rank + 1) / size_t(size)};
  }
};

std::vector<uint32_t> shuffled(size_t n, uint64_t seed, int epoch) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  Rng rng(stream_key({seed, 0x5f1e, uint64_t(epoch)}));
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

double sum_over_ranks(double local) {
  double total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

// Test error: each rank counts the mistakes on its shard of the test set.
double test_error(Mlp& model, const Split& test, const World& world) {
  const auto [begin, end] = world.shard(test.count);
  const int mistakes = model.count_errors(test.images.data() + begin * kPixels,
                                          test.labels.data() + begin, int(end - begin));
  return sum_over_ranks(mistakes) / double(test.count);
}

// Scratch of one rank's shard of a minibatch.
struct Shard {
  std::vector<float> x;
  std::vector<uint8_t> y;
  std::vector<uint64_t> keys;
  void gather(const Split& s, const uint32_t* ids, size_t n) {
    x.resize(n * kPixels);
    y.resize(n);
    keys.resize(n);
    for (size_t i = 0; i < n; ++i) {
      std::copy_n(s.images.data() + size_t(ids[i]) * kPixels, kPixels, x.data() + i * kPixels);
      y[i] = s.labels[ids[i]];
      keys[i] = ids[i];
    }
  }
};

class EpochRunner {
 public:
  EpochRunner(const Dataset& data, const TrainConfig& config, Mlp& model, GradientReducer& reducer,
              uint64_t seed)
      : data_(data), config_(config), model_(model), reducer_(reducer), seed_(seed) {}

  EpochResult run(int epoch) {
    const auto start = Clock::now();
    const CommStats before = reducer_.stats();
    const std::vector<uint32_t> order = shuffled(data_.train.count, seed_, epoch);
    const size_t steps = data_.train.count / size_t(config_.batch);
    EpochResult r;
    double loss = 0;
    for (size_t s = 0; s < steps; ++s) loss += step(order.data() + s * config_.batch, epoch, s, r);
    const CommStats after = reducer_.stats();
    r.epoch = epoch + 1;
    r.steps = int(steps);
    r.train_loss = sum_over_ranks(loss) / double(steps * config_.batch);
    r.test_error = test_error(model_, data_.test, world_);
    r.bytes_sent = after.bytes_sent - before.bytes_sent;
    r.comm_seconds = after.comm_seconds - before.comm_seconds;
    r.codec_seconds = after.codec_seconds - before.codec_seconds;
    r.wall_seconds = since(start);
    return r;
  }

 private:
  double step(const uint32_t* batch, int epoch, size_t s, EpochResult& r) {
    auto t = Clock::now();
    const auto [begin, end] = world_.shard(size_t(config_.batch));
    shard_.gather(data_.train, batch + begin, end - begin);
    // Each rank's gradient is scaled so that the average over ranks is the batch mean.
    const float scale = float(world_.size) / float(config_.batch);
    const double loss = model_.forward_backward(shard_.x.data(), shard_.y.data(), int(end - begin),
                                                stream_key({seed_, 0xd209, uint64_t(epoch)}),
                                                shard_.keys.data(), scale);
    r.compute_seconds += since(t);
    const uint64_t global_step = uint64_t(epoch) * 1000003u + s;
    for (int l = 0; l < model_.layers(); ++l)
      reducer_.average(model_.grads().data() + model_.layer_offset(l), model_.layer_size(l), l,
                       global_step);
    t = Clock::now();
    model_.rmsprop_step(config_.optimizer);
    r.compute_seconds += since(t);
    return loss;
  }

  const Dataset& data_;
  const TrainConfig& config_;
  Mlp& model_;
  GradientReducer& reducer_;
  uint64_t seed_;
  World world_;
  Shard shard_;
};

}  // namespace

double RunResult::step_seconds() const {
  double wall = 0;
  int steps = 0;
  for (const EpochResult& e : epochs) {
    wall += e.compute_seconds + e.comm_seconds + e.codec_seconds;
    steps += e.steps;
  }
  return steps ? wall / steps : 0;
}

uint64_t RunResult::bytes_sent() const {
  uint64_t total = 0;
  for (const EpochResult& e : epochs) total += e.bytes_sent;
  return total;
}

void check_config(const Dataset& data, const TrainConfig& config, int ranks) {
  if (config.batch < ranks)
    throw Error(ErrorCode::kInvalidArgument, "--batch " + std::to_string(config.batch) +
                                                 " is smaller than the " + std::to_string(ranks) +
                                                 " ranks (each rank needs a sample)");
  if (data.train.count < size_t(config.batch))
    throw Error(ErrorCode::kInvalidArgument,
                "--batch " + std::to_string(config.batch) + " is larger than the " +
                    std::to_string(data.train.count) + " training samples");
}

RunResult train_dp(const Dataset& data, const TrainConfig& config, const CommSpec& comm,
                   uint64_t seed, const std::function<void(const RunResult&)>& on_epoch) {
  const World world;
  check_config(data, config, world.size);
  blas_single_thread();
  Mlp model(config.shape, seed);
  std::unique_ptr<GradientReducer> reducer = make_reducer(comm, seed);
  EpochRunner runner(data, config, model, *reducer, seed);
  RunResult result;
  result.comm = comm.name();
  result.seed = seed;
  result.ranks = world.size;
  for (int e = 0; e < config.epochs; ++e) {
    result.epochs.push_back(runner.run(e));
    result.fp32_reference_bytes +=
        uint64_t(2.0 * (world.size - 1) / world.size * 4.0 * double(model.params().size()) *
                 double(result.epochs.back().steps));
    result.best_test_error = std::min(result.best_test_error, result.epochs.back().test_error);
    on_epoch(result);
  }
  result.params_hash =
      detail::fnv1a64(model.params().data(), model.params().size() * sizeof(float));
  return result;
}

}  // namespace train
}  // namespace octet
