// `--mode dp`: every rank the whole model and a contiguous shard of each global minibatch; each
// layer's gradient averaged over the ranks, then the same RMSProp step everywhere.
#include <mpi.h>

#include <algorithm>
#include <memory>

#include "octet/detail/hash.h"
#include "train/stem.h"
#include "train/strategy.h"

namespace octet {
namespace train {
namespace {

class DataParallel : public Strategy {
 public:
  DataParallel(const TrainConfig& config, const CommSpec& comm, uint64_t seed)
      : config_(config), model_(config.shape, seed), reducer_(make_reducer(comm, seed)) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
    if (config.model == "alexnet") stem_ = std::make_unique<ConvStem>(StemShape::alexnet(), seed);
  }

  double step(const Split& train, const StepInput& in) override {
    const auto [begin, end] = shard_of(size_t(in.batch), rank_, ranks_);
    const int n = int(end - begin);
    rows_.gather(train, in.ids + begin, size_t(n));
    const float* x = stem_ ? stem_->forward(rows_.x.data(), n) : rows_.x.data();
    if (stem_) dfeatures_.resize(size_t(n) * stem_->features());
    // Each rank's gradient is scaled so that the average over ranks is the batch mean.
    const float scale = float(ranks_) / float(in.batch);
    const double loss =
        model_.forward_backward(x, rows_.y.data(), n, in.dropout_key, rows_.keys.data(), scale,
                                stem_ ? dfeatures_.data() : nullptr);
    if (stem_) stem_->backward(dfeatures_.data(), n);
    for (int l = 0; l < model_.layers(); ++l)
      reducer_->average(model_.grads().data() + model_.layer_offset(l), model_.layer_size(l), l,
                        in.step, in.measure);
    for (int l = 0; stem_ && l < stem_->layers(); ++l)
      reducer_->average(stem_->grads().data() + stem_->layer_offset(l), stem_->layer_size(l),
                        kConvKey + l, in.step, in.measure);
    model_.rmsprop_step(config_.optimizer);
    if (stem_) stem_->rmsprop_step(config_.optimizer);
    return loss;
  }

  // Each rank counts the mistakes on its shard of the test set.
  int test_mistakes(const Split& test) override {
    const auto [begin, end] = shard_of(test.count, rank_, ranks_);
    constexpr size_t kChunk = 512;  // bounds the stem's saved activations
    int mistakes = 0;
    for (size_t i = begin; i < end; i += kChunk) {
      const int n = int(std::min(kChunk, end - i));
      const float* x = test.images.data() + i * kPixels;
      if (stem_) x = stem_->forward(x, n);
      mistakes += model_.count_errors(x, test.labels.data() + i, n);
    }
    MPI_Allreduce(MPI_IN_PLACE, &mistakes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return mistakes;
  }

  CommStats stats() const override { return reducer_->stats(); }
  ErrorTable errors() const override { return reducer_->errors(); }
  // A bandwidth-optimal ring allreduce sends 2(P-1)/P x 4 bytes per parameter.
  uint64_t fp32_bytes_per_step(int) const override {
    const size_t params = model_.params().size() + (stem_ ? stem_->params().size() : 0);
    return uint64_t(2.0 * (ranks_ - 1) / ranks_ * 4.0 * double(params));
  }
  uint64_t params_hash() override {
    uint64_t h = detail::fnv1a64(model_.params().data(), model_.params().size() * sizeof(float));
    if (stem_)
      h ^= detail::splitmix64(
          detail::fnv1a64(stem_->params().data(), stem_->params().size() * sizeof(float)));
    return h;
  }

 private:
  const TrainConfig& config_;
  Mlp model_;
  std::unique_ptr<ConvStem> stem_;
  std::unique_ptr<GradientReducer> reducer_;
  int rank_ = 0, ranks_ = 1;
  Rows rows_;
  std::vector<float> dfeatures_;
};

}  // namespace

std::unique_ptr<Strategy> make_data_parallel(const TrainConfig& config, const CommSpec& comm,
                                             uint64_t seed) {
  return std::make_unique<DataParallel>(config, comm, seed);
}

}  // namespace train
}  // namespace octet
