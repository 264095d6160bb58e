// How model-parallel layers trade activations and their gradients (`--mode mp` and `hybrid`):
// allgather of each rank's slice of a layer's outputs, reduce_scatter of the partial sums of an
// input gradient; plain MPI in fp32 or Octet's compressed collectives, blocking or started now
// and waited for later (hybrid overlaps sub-batch k+1's transfer with sub-batch k's compute).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "train/comm_spec.h"
#include "train/reducer.h"

namespace octet {
namespace train {

// What a transfer is: `key` names the tensor (error feedback residuals, stochastic rounding's
// stream), `step` makes stochastic rounding draw fresh numbers, `train` false for evaluation
// (round to nearest, no error feedback: evaluation must not move the residuals).
struct TransferTag {
  int key = 0;
  uint64_t step = 0;
  bool train = true;
};

// A started transfer. test() lets it progress (Octet's collectives move only inside calls);
// wait() finishes it; destroying an unfinished one waits.
class Pending {
 public:
  virtual ~Pending() = default;
  virtual bool test() = 0;
  virtual void wait() = 0;
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  // out[r * count, +count) = rank r's in[0, count), on every rank. Octet decodes the own block
  // too, so out holds what every rank received.
  virtual std::unique_ptr<Pending> start_allgather(const float* in, float* out, size_t count,
                                                   TransferTag tag) = 0;
  // out[0, count) on rank r = sum over ranks of in[r * count, +count).
  virtual std::unique_ptr<Pending> start_reduce_scatter(const float* in, float* out, size_t count,
                                                        TransferTag tag) = 0;
  // The same, blocking.
  virtual void allgather(const float* in, float* out, size_t count, TransferTag tag) {
    start_allgather(in, out, count, tag)->wait();
  }
  virtual void reduce_scatter(const float* in, float* out, size_t count, TransferTag tag) {
    start_reduce_scatter(in, out, count, tag)->wait();
  }
  // out[0, count) = the exact fp32 sum that reduce_scatter approximates (blocking, over
  // MPI_COMM_WORLD unless overridden), to measure what it lost; left out of stats() but its time.
  virtual void reduce_scatter_exact(const float* in, float* out, size_t count);
  // Runs f, a measurement of what a transfer lost (exact references, error sums), and counts its
  // time in stats().measure_seconds.
  template <typename F>
  void measuring(F f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    measure_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  CommStats stats() const {
    CommStats s = transfer_stats();
    s.measure_seconds = measure_seconds_;
    s.wait_seconds = wait_seconds_;
    return s;
  }
  // With `on`, every transfer starts with a barrier over the ranks, timed as stats().wait_seconds:
  // the time a rank waits for the slowest one then stays out of the transfer's.
  void set_barrier(bool on) { barrier_ = on; }
  // True for fp32: what arrives is what was sent (no approximation error to measure).
  virtual bool exact() const = 0;

 protected:
  // Bytes and seconds of the transfers themselves.
  virtual CommStats transfer_stats() const = 0;
  // Called by a transfer before it starts: the barrier of set_barrier (collective).
  void sync_point();

 private:
  double measure_seconds_ = 0, wait_seconds_ = 0;
  bool barrier_ = false;
};

// Over MPI_COMM_WORLD (Octet: a duplicate of it behind a counting transport); `barrier`: see
// set_barrier.
std::unique_ptr<Exchange> make_exchange(const CommSpec& spec, uint64_t seed, bool barrier = false);

}  // namespace train
}  // namespace octet
