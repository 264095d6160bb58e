// One way of spreading a training step over the ranks (`--mode`): what trainer.cc's epoch loop
// calls. Every function is a collective over MPI_COMM_WORLD unless it says otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "train/approx_error.h"
#include "train/idx.h"
#include "train/reducer.h"
#include "train/trainer.h"

namespace octet {
namespace train {

// Which samples a step trains on, and the keys of its random draws.
struct StepInput {
  const uint32_t* ids = nullptr;  // the global minibatch's sample indices, batch of them
  int batch = 0;
  uint64_t dropout_key = 0;
  uint64_t step = 0;     // counts steps over the run (stochastic rounding's stream)
  bool measure = false;  // also measure the approximation error of what is sent
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // One step (forward, backward, exchange, RMSProp); returns this rank's part of the batch's
  // loss sum (the parts add up to the sum over the batch).
  virtual double step(const Split& train, const StepInput& in) = 0;
  // Mistakes on the whole test split (the same on every rank).
  virtual int test_mistakes(const Split& test) = 0;
  // This rank's counters (not collective).
  virtual CommStats stats() const = 0;
  virtual ErrorTable errors() const = 0;
  // What fp32 would send per rank for one training step of `batch` samples.
  virtual uint64_t fp32_bytes_per_step(int batch) const = 0;
  // FNV-1a of the whole model's parameters, in Mlp's layout for the MLP (the same value for the
  // same model whatever the mode).
  virtual uint64_t params_hash() = 0;
};

// Rows ids[0, n) of a split gathered into contiguous images, labels and sample keys.
struct Rows {
  std::vector<float> x;
  std::vector<uint8_t> y;
  std::vector<uint64_t> keys;
  void gather(const Split& s, const uint32_t* ids, size_t n);
};

// [begin, end) of n items for `rank` of `ranks`, in contiguous, nearly equal shards.
inline std::pair<size_t, size_t> shard_of(size_t n, int rank, int ranks) {
  return {n * size_t(rank) / size_t(ranks), n * size_t(rank + 1) / size_t(ranks)};
}

std::unique_ptr<Strategy> make_data_parallel(const TrainConfig& config, const CommSpec& comm,
                                             uint64_t seed);
std::unique_ptr<Strategy> make_hybrid(const TrainConfig& config, const CommSpec& comm,
                                      uint64_t seed);
std::unique_ptr<Strategy> make_model_parallel(const TrainConfig& config, const CommSpec& comm,
                                              uint64_t seed);

}  // namespace train
}  // namespace octet
