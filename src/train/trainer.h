// Training runs of `octet train`, one per (mode, comm, seed): the epoch loop, its timing and what
// it reports; how a step is spread over the ranks is the mode's Strategy (train/strategy.h):
//  - dp: every rank holds the whole model and a contiguous shard of each global minibatch; each
//    layer's gradient is averaged over the ranks (GradientReducer);
//  - mp: each fully connected layer's output columns are split over the ranks, every rank runs
//    the whole minibatch through its slices, activations are allgathered and input gradients
//    reduce_scattered (ShardedMlp, Exchange);
//  - hybrid: the convolutional stem (alexnet) data-parallel, the fully connected layers as in mp
//    over sub-batches gathered from every rank's shard, transfers overlapping compute.
// Everything random is keyed by the seed (train/rng.h), so a run is bit-for-bit repeatable for
// the same seed, rank count and options.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "train/approx_error.h"
#include "train/comm_spec.h"
#include "train/idx.h"
#include "train/mlp.h"
#include "train/results.h"

namespace octet {
namespace train {

struct TrainConfig {
  std::string model = "mlp";  // mlp | alexnet (shape below: the fully connected layers)
  std::string mode = "dp";    // dp | mp | hybrid
  int sub_batch = 16;         // hybrid: rows of each rank's shard per sub-batch
  int epochs = 1;
  int batch = 128;  // global minibatch (all ranks together)
  // mp and hybrid: a barrier before every transfer, timed apart (CommStats::wait_seconds).
  bool barrier = false;
  RmsProp optimizer;
  MlpShape shape = MlpShape::paper();
};

// Throws kInvalidArgument when the batch does not fit the rank count or the data, or the mode
// cannot split the model over the ranks.
void check_config(const Dataset& data, const TrainConfig& config, int ranks);

// Trains one (config.mode, comm, seed) run; a collective over MPI_COMM_WORLD (every rank calls
// it with the same arguments). on_epoch runs on every rank after each epoch.
RunResult train_run(const Dataset& data, const TrainConfig& config, const CommSpec& comm,
                    uint64_t seed, const std::function<void(const RunResult&)>& on_epoch);

}  // namespace train
}  // namespace octet
