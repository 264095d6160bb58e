// Data-parallel training (`--mode dp`): every rank holds the whole model; each global minibatch
// is split into one contiguous shard per rank; each layer's gradient is averaged over the ranks
// (GradientReducer) and every rank applies the same RMSProp step. Everything random is keyed by
// the seed (train/rng.h), so a run is bit-for-bit repeatable for the same seed, rank count and
// options.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "train/comm_spec.h"
#include "train/idx.h"
#include "train/mlp.h"

namespace octet {
namespace train {

struct TrainConfig {
  int epochs = 1;
  int batch = 128;  // global minibatch (all ranks together)
  RmsProp optimizer;
  MlpShape shape = MlpShape::paper();
};

struct EpochResult {
  int epoch = 0;
  double train_loss = 0;    // mean over the epoch's samples (with dropout)
  double test_error = 0;    // fraction of the test set
  uint64_t bytes_sent = 0;  // by rank 0 in this epoch
  double compute_seconds = 0, comm_seconds = 0, codec_seconds = 0, wall_seconds = 0;
  int steps = 0;
};

struct RunResult {
  std::string mode = "dp", comm;
  uint64_t seed = 0;
  int ranks = 1;
  std::vector<EpochResult> epochs;
  double best_test_error = 1;
  // What an fp32 ring allreduce of the same gradients sends per rank, 2(P-1)/P x 4 bytes x
  // parameters x steps: the reference for "saved".
  uint64_t fp32_reference_bytes = 0;
  uint64_t params_hash = 0;     // FNV-1a of the final parameters (the same on every rank)
  double step_seconds() const;  // mean wall time of a step
  uint64_t bytes_sent() const;  // over all epochs
};

// Throws kInvalidArgument when the batch does not fit the rank count or the data.
void check_config(const Dataset& data, const TrainConfig& config, int ranks);

// Trains one (comm, seed) run; a collective over MPI_COMM_WORLD (every rank calls it with the
// same arguments). on_epoch runs on every rank after each epoch.
RunResult train_dp(const Dataset& data, const TrainConfig& config, const CommSpec& comm,
                   uint64_t seed, const std::function<void(const RunResult&)>& on_epoch);

}  // namespace train
}  // namespace octet
