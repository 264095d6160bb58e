#include "train/trainer.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "octet/error.h"
#include "train/blas.h"
#include "train/rng.h"
#include "train/strategy.h"

namespace octet {
namespace train {
namespace {

using Clock = std::chrono::steady_clock;

// Every kMeasureEvery-th step of an epoch also measures the approximation error of what it sends
// where that costs an extra exact transfer (dp's gradients): a sample, not the whole run.
constexpr size_t kMeasureEvery = 10;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

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

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// One epoch: the shuffled training set in steps of config.batch, then the test error. Compute
// time is the step's wall time less what the strategy spent in communication and codec, and in
// measuring the approximation error (an exact fp32 transfer every kMeasureEvery-th step).
EpochResult run_epoch(const Dataset& data, const TrainConfig& config, Strategy& strategy,
                      uint64_t seed, int epoch) {
  const auto start = Clock::now();
  const CommStats before = strategy.stats();
  const std::vector<uint32_t> order = shuffled(data.train.count, seed, epoch);
  const size_t steps = data.train.count / size_t(config.batch);
  double loss = 0;
  for (size_t s = 0; s < steps; ++s) {
    StepInput in;
    in.ids = order.data() + s * config.batch;
    in.batch = config.batch;
    in.dropout_key = stream_key({seed, 0xd209, uint64_t(epoch)});
    in.step = uint64_t(epoch) * 1000003u + s;
    in.measure = s % kMeasureEvery == 0;
    loss += strategy.step(data.train, in);
  }
  const double train_seconds = since(start);
  const CommStats after = strategy.stats();
  EpochResult r;
  r.epoch = epoch + 1;
  r.steps = int(steps);
  r.train_loss = sum_over_ranks(loss) / double(steps * config.batch);
  const CommStats spent = after - before;
  r.bytes_sent = spent.bytes_sent;
  r.comm_seconds = spent.comm_seconds;
  r.codec_seconds = spent.codec_seconds;
  r.measure_seconds = spent.measure_seconds;
  r.wait_seconds = spent.wait_seconds;
  r.compute_seconds = std::max(
      0.0, train_seconds - r.comm_seconds - r.codec_seconds - r.measure_seconds - r.wait_seconds);
  // Evaluation's own transfers (mp) are left out of the counters above.
  r.test_error = strategy.test_mistakes(data.test) / double(data.test.count);
  r.wall_seconds = since(start);
  return r;
}

std::unique_ptr<Strategy> make_strategy(const TrainConfig& config, const CommSpec& comm,
                                        uint64_t seed) {
  if (config.mode == "dp") return make_data_parallel(config, comm, seed);
  if (config.mode == "mp") return make_model_parallel(config, comm, seed);
  if (config.mode == "hybrid") return make_hybrid(config, comm, seed);
  throw Error(ErrorCode::kInvalidArgument, "--mode: unknown mode '" + config.mode + "'");
}

}  // namespace

void Rows::gather(const Split& s, const uint32_t* ids, size_t n) {
  x.resize(n * kPixels);
  y.resize(n);
  keys.resize(n);
  for (size_t i = 0; i < n; ++i) {
    std::copy_n(s.images.data() + size_t(ids[i]) * kPixels, kPixels, x.data() + i * kPixels);
    y[i] = s.labels[ids[i]];
    keys[i] = ids[i];
  }
}

void check_config(const Dataset& data, const TrainConfig& config, int ranks) {
  const std::string batch = "--batch " + std::to_string(config.batch);
  if (config.batch < ranks)
    throw Error(ErrorCode::kInvalidArgument, batch + " is smaller than the " +
                                                 std::to_string(ranks) +
                                                 " ranks (each rank needs a sample)");
  if (data.train.count < size_t(config.batch))
    throw Error(
        ErrorCode::kInvalidArgument,
        batch + " is larger than the " + std::to_string(data.train.count) + " training samples");
  if (config.model == "alexnet" && config.mode == "mp")
    throw Error(ErrorCode::kInvalidArgument,
                "--mode mp splits fully connected layers only; with --model alexnet use --mode "
                "hybrid (convolutions data-parallel, fully connected layers model-parallel)");
  if (config.mode == "hybrid" && config.batch % ranks != 0)
    throw Error(ErrorCode::kInvalidArgument, "--mode hybrid needs equal shards: " + batch +
                                                 " is not a multiple of the " +
                                                 std::to_string(ranks) + " ranks");
  const int narrowest =
      *std::min_element(config.shape.widths.begin() + 1, config.shape.widths.end());
  if (config.mode != "dp" && ranks > narrowest)
    throw Error(ErrorCode::kInvalidArgument,
                "--mode " + config.mode + " splits each layer's outputs over the ranks: at most " +
                    std::to_string(narrowest) + " ranks, not " + std::to_string(ranks));
}

RunResult train_run(const Dataset& data, const TrainConfig& config, const CommSpec& comm,
                    uint64_t seed, const std::function<void(const RunResult&)>& on_epoch) {
  const int ranks = world_size();
  check_config(data, config, ranks);
  blas_single_thread();
  std::unique_ptr<Strategy> strategy = make_strategy(config, comm, seed);
  RunResult result;
  result.mode = config.mode;
  result.comm = comm.name();
  result.seed = seed;
  result.ranks = ranks;
  for (int e = 0; e < config.epochs; ++e) {
    result.epochs.push_back(run_epoch(data, config, *strategy, seed, e));
    result.fp32_reference_bytes +=
        strategy->fp32_bytes_per_step(config.batch) * uint64_t(result.epochs.back().steps);
    result.best_test_error = std::min(result.best_test_error, result.epochs.back().test_error);
    on_epoch(result);
  }
  result.errors = sum_over_ranks(strategy->errors());
  result.params_hash = strategy->params_hash();
  return result;
}

}  // namespace train
}  // namespace octet
