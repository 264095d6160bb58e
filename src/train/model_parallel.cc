// `--mode mp`: every rank runs the whole minibatch through its column slices of each layer
// (ShardedMlp); activations are allgathered and input gradients reduce_scattered (Exchange).
#include <mpi.h>

#include "octet/detail/hash.h"
#include "train/sharded_mlp.h"
#include "train/strategy.h"

namespace octet {
namespace train {
namespace {

class ModelParallel : public Strategy {
 public:
  ModelParallel(const TrainConfig& config, const CommSpec& comm, uint64_t seed)
      : config_(config), exchange_(make_exchange(comm, seed, config.barrier)) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
    model_ = std::make_unique<ShardedMlp>(config.shape, seed, rank_, ranks_);
  }

  // Every rank computes the same loss: rank 0 reports it.
  double step(const Split& train, const StepInput& in) override {
    rows_.gather(train, in.ids, size_t(in.batch));
    const double loss = model_->forward_backward(
        *exchange_, rows_.x.data(), rows_.y.data(), in.batch, in.dropout_key, rows_.keys.data(),
        1.0f / float(in.batch), in.step, false, nullptr, in.measure);
    model_->rmsprop_step(config_.optimizer);
    return rank_ == 0 ? loss : 0.0;
  }

  // Evaluation sends activations too, as the model would in use; its bytes and seconds are put
  // back so that the counters hold training only.
  int test_mistakes(const Split& test) override {
    const CommStats before = exchange_->stats();
    const int mistakes =
        model_->count_errors(*exchange_, test.images.data(), test.labels.data(), int(test.count));
    const CommStats after = exchange_->stats();
    excluded_ += after - before;
    return mistakes;
  }

  CommStats stats() const override { return exchange_->stats() - excluded_; }
  ErrorTable errors() const override { return model_->errors(); }
  uint64_t fp32_bytes_per_step(int batch) const override { return model_->fp32_bytes(batch); }
  uint64_t params_hash() override {
    const std::vector<float> p = model_->full_params();
    return detail::fnv1a64(p.data(), p.size() * sizeof(float));
  }

 private:
  const TrainConfig& config_;
  std::unique_ptr<Exchange> exchange_;
  std::unique_ptr<ShardedMlp> model_;
  int rank_ = 0, ranks_ = 1;
  Rows rows_;
  CommStats excluded_;
};

}  // namespace

std::unique_ptr<Strategy> make_model_parallel(const TrainConfig& config, const CommSpec& comm,
                                              uint64_t seed) {
  return std::make_unique<ModelParallel>(config, comm, seed);
}

}  // namespace train
}  // namespace octet
