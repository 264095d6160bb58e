// Averages one gradient slice over the ranks, the way a CommSpec says: plain MPI_Allreduce of
// fp32, or Octet's compressed allreduce (average = true) over a counting MPI transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "train/comm_spec.h"

namespace octet {
namespace train {

struct CommStats {
  uint64_t bytes_sent = 0;   // by this rank (fp32: what a ring allreduce sends, 2(P-1)/P x 4n)
  double comm_seconds = 0;   // inside MPI / transport calls
  double codec_seconds = 0;  // the rest of the allreduce (encode, decode, reduce)
};

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  // Replaces grad[0, count) by its average over the ranks. `key` names the tensor (error
  // feedback), `step` makes stochastic rounding draw fresh numbers each step.
  virtual void average(float* grad, size_t count, int key, uint64_t step) = 0;
  virtual CommStats stats() const = 0;
};

// Collective over MPI_COMM_WORLD (duplicates it for Octet's transport).
std::unique_ptr<GradientReducer> make_reducer(const CommSpec& spec, uint64_t seed);

}  // namespace train
}  // namespace octet
