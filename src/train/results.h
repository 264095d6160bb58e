// What a training run reports: per epoch and per run. Plain data, without MPI or BLAS, so that
// reading runs back (`octet train --report`, train/report.h) needs neither.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/approx_error.h"

namespace octet {
namespace train {

struct EpochResult {
  int epoch = 0;
  double train_loss = 0;    // mean over the epoch's samples (with dropout)
  double test_error = 0;    // fraction of the test set
  uint64_t bytes_sent = 0;  // by rank 0 in this epoch
  double compute_seconds = 0, comm_seconds = 0, codec_seconds = 0, wall_seconds = 0;
  double measure_seconds = 0;  // the approximation error's exact references: in wall only
  double wait_seconds = 0;     // --barrier: waiting for the slowest rank (part of a step)
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
  uint64_t params_hash = 0;  // FNV-1a of the final parameters (the same on every rank)
  // Approximation error of what was sent, summed over the ranks: "grad layer <l>" (dp, sampled
  // steps), "act layer <l>" (mp and hybrid, every training step), "igrad layer <l>" (mp and
  // hybrid, sampled steps: the reduce_scattered gradient of layer l's input against its exact
  // sum), "features" (hybrid: the stem's output, or the images, gathered per sub-batch). Empty
  // for fp32.
  ErrorTable errors;
  double step_seconds() const;  // mean wall time of a step
  uint64_t bytes_sent() const;  // over all epochs
};

}  // namespace train
}  // namespace octet
