// Averages one gradient slice over the ranks, the way a CommSpec says: plain MPI_Allreduce of
// fp32, or Octet's compressed allreduce (average = true) over a counting MPI transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "octet/collectives.h"
#include "train/approx_error.h"
#include "train/comm_spec.h"

namespace octet {
namespace train {

struct CommStats {
  uint64_t bytes_sent = 0;   // by this rank (fp32: what a ring allreduce sends, 2(P-1)/P x 4n)
  double comm_seconds = 0;   // inside MPI / transport calls
  double codec_seconds = 0;  // the rest of the allreduce (encode, decode, reduce)
  // Measuring what the transfers lost (the exact fp32 references and the error sums of the
  // `measure` steps): not training's time, so left out of the compute and step times.
  double measure_seconds = 0;
  // `--barrier`: waiting for the slowest rank before each transfer (the ranks' imbalance), apart
  // from the transfer's own time.
  double wait_seconds = 0;

  CommStats operator+(const CommStats& o) const {
    return {bytes_sent + o.bytes_sent, comm_seconds + o.comm_seconds,
            codec_seconds + o.codec_seconds, measure_seconds + o.measure_seconds,
            wait_seconds + o.wait_seconds};
  }
  CommStats operator-(const CommStats& o) const {  // what happened between two readings
    return {bytes_sent - o.bytes_sent, comm_seconds - o.comm_seconds,
            codec_seconds - o.codec_seconds, measure_seconds - o.measure_seconds,
            wait_seconds - o.wait_seconds};
  }
  CommStats& operator+=(const CommStats& o) { return *this = *this + o; }
};

// Reducer keys: fully connected layer l is key l, the convolutional stem's stage s kConvKey + s.
constexpr int kConvKey = 100;

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  // Replaces grad[0, count) by its average over the ranks. `key` names the tensor (error
  // feedback), `step` makes stochastic rounding draw fresh numbers each step. `measure`: also
  // compare the result with the exact fp32 average (an extra MPI_Allreduce, counted in the
  // stats' measure_seconds only) and add the difference to errors() under "grad layer <l>" or "grad
  // conv <s>".
  virtual void average(float* grad, size_t count, int key, uint64_t step, bool measure) = 0;
  virtual CommStats stats() const = 0;
  // This rank's sums (fp32 sends exact averages: empty).
  virtual const ErrorTable& errors() const = 0;
};

// The options every 8-bit transfer of `octet train` starts from: the spec's type and stochastic
// rounding, one codec thread (the ranks own the cores), policy always.
CollectiveOptions collective_options(const CommSpec& spec);

// Collective over MPI_COMM_WORLD (duplicates it for Octet's transport).
std::unique_ptr<GradientReducer> make_reducer(const CommSpec& spec, uint64_t seed);

}  // namespace train
}  // namespace octet
