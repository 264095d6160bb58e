// `--mode hybrid` (paper 001 section 2.4, Krizhevsky's "one weird trick"): the convolutional stem
// data-parallel on each rank's shard, the fully connected layers model-parallel over the whole
// minibatch, fed in sub-batches. Sub-batch k takes rows [k*s, +s) of every rank's shard: their
// features are allgathered (rank-major, so P*s rows), run through the ShardedMlp, and the partial
// sums of their gradient reduce_scattered back to the ranks that own the rows. The allgather of
// sub-batch k+1 and the reduce_scatter of sub-batch k are in flight while sub-batch k computes
// (they progress inside the fully connected layers' own transfers on the same Comm). With the MLP
// (no stem) the features are the images.
#include <mpi.h>

#include <algorithm>
#include <memory>

#include "octet/detail/hash.h"
#include "train/sharded_mlp.h"
#include "train/stem.h"
#include "train/strategy.h"

namespace octet {
namespace train {
namespace {

constexpr int kFeatureKey = 200;  // the features allgather's transfer key

class Hybrid : public Strategy {
 public:
  Hybrid(const TrainConfig& config, const CommSpec& comm, uint64_t seed)
      : config_(config),
        exchange_(make_exchange(comm, seed, config.barrier)),
        reducer_(make_reducer(comm, seed)) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
    model_ = std::make_unique<ShardedMlp>(config.shape, seed, rank_, ranks_);
    if (config.model == "alexnet") stem_ = std::make_unique<ConvStem>(StemShape::alexnet(), seed);
    features_ = config.shape.widths[0];
  }

  double step(const Split& train, const StepInput& in) override {
    const int local = in.batch / ranks_, sub = std::min(config_.sub_batch, local);
    const int subs = (local + sub - 1) / sub;
    rows_.gather(train, in.ids + size_t(rank_) * local, size_t(local));
    const float* x = stem_ ? stem_->forward(rows_.x.data(), local) : rows_.x.data();
    dfeatures_.assign(stem_ ? size_t(local) * features_ : 0, 0.0f);
    gathered_.resize(2);
    partial_.resize(subs);
    std::vector<std::unique_ptr<Pending>> scatters(subs);
    std::unique_ptr<Pending> next = start_gather(x, 0, sub, local, stream(in, 0));
    double loss = 0;
    for (int k = 0; k < subs; ++k) {
      const int m = std::min(sub, local - k * sub);
      next->wait();
      if (k + 1 < subs) next = start_gather(x, k + 1, sub, local, stream(in, k + 1));
      label_rows(train, in, k, sub, m, local);
      record_feature_error(k);
      float* dx = nullptr;
      if (stem_) {
        partial_[k].resize(size_t(ranks_) * m * features_);
        dx = partial_[k].data();
      }
      loss += model_->forward_backward(
          *exchange_, gathered_[k % 2].data(), labels_.data(), ranks_ * m, in.dropout_key,
          keys_.data(), 1.0f / float(in.batch), stream(in, k), k > 0, dx, in.measure);
      if (stem_)
        scatters[k] = exchange_->start_reduce_scatter(
            dx, dfeatures_.data() + size_t(k) * sub * features_, size_t(m) * features_,
            {kFeatureKey, stream(in, k), true});
    }
    for (auto& s : scatters)
      if (s) s->wait();
    finish_stem(in);
    model_->rmsprop_step(config_.optimizer);
    return rank_ == 0 ? loss : 0.0;
  }

  // Every rank runs the stem over the whole test set (evaluation is not what is timed) and the
  // fully connected layers model-parallel, as in mp.
  int test_mistakes(const Split& test) override {
    const CommStats before = exchange_->stats();
    constexpr size_t kChunk = 512;
    int mistakes = 0;
    for (size_t i = 0; i < test.count; i += kChunk) {
      const int n = int(std::min(kChunk, test.count - i));
      const float* x = test.images.data() + i * kPixels;
      if (stem_) x = stem_->forward(x, n);
      mistakes += model_->count_errors(*exchange_, x, test.labels.data() + i, n);
    }
    const CommStats after = exchange_->stats();
    excluded_ += after - before;
    return mistakes;
  }

  CommStats stats() const override { return exchange_->stats() + reducer_->stats() - excluded_; }
  ErrorTable errors() const override {
    ErrorTable t = model_->errors();
    for (const auto& [key, e] : reducer_->errors()) t[key].merge(e);
    for (const auto& [key, e] : errors_) t[key].merge(e);
    return t;
  }
  uint64_t fp32_bytes_per_step(int batch) const override {
    const int local = batch / ranks_, sub = std::min(config_.sub_batch, local);
    uint64_t bytes = 0;
    for (int first = 0; first < local; first += sub) {
      const int m = std::min(sub, local - first);
      const uint64_t block = uint64_t(m) * features_ * sizeof(float) * uint64_t(ranks_ - 1);
      bytes += block * (stem_ ? 2 : 1) + model_->fp32_bytes(ranks_ * m);
    }
    if (stem_)
      bytes += uint64_t(2.0 * (ranks_ - 1) / ranks_ * 4.0 * double(stem_->params().size()));
    return bytes;
  }
  uint64_t params_hash() override {
    const std::vector<float> p = model_->full_params();
    uint64_t h = detail::fnv1a64(p.data(), p.size() * sizeof(float));
    if (stem_)
      h ^= detail::splitmix64(
          detail::fnv1a64(stem_->params().data(), stem_->params().size() * sizeof(float)));
    return h;
  }

 private:
  // Stochastic rounding's stream for sub-batch k: fresh draws per sub-batch, not only per step.
  static uint64_t stream(const StepInput& in, int k) { return in.step * 1024 + uint64_t(k); }

  // Starts the allgather of sub-batch k's features (rows [k*sub, +m) of this rank's shard).
  std::unique_ptr<Pending> start_gather(const float* x, int k, int sub, int local, uint64_t step) {
    const int m = std::min(sub, local - k * sub);
    std::vector<float>& out = gathered_[k % 2];
    out.resize(size_t(ranks_) * m * features_);
    const float* mine = x + size_t(k) * sub * features_;
    sent_[k % 2].assign(mine, mine + size_t(m) * features_);
    return exchange_->start_allgather(sent_[k % 2].data(), out.data(), sent_[k % 2].size(),
                                      {kFeatureKey, step, true});
  }

  // Labels and dropout keys of sub-batch k's rows (every rank's rows [k * sub, +m), rank-major).
  void label_rows(const Split& train, const StepInput& in, int k, int sub, int m, int local) {
    const int first = k * sub;
    labels_.resize(size_t(ranks_) * m);
    keys_.resize(labels_.size());
    for (int q = 0; q < ranks_; ++q)
      for (int i = 0; i < m; ++i) {
        const uint32_t id = in.ids[size_t(q) * local + first + i];
        labels_[size_t(q) * m + i] = train.labels[id];
        keys_[size_t(q) * m + i] = id;
      }
  }

  // Sub-batch k's features as every rank decoded them against what this rank sent.
  void record_feature_error(int k) {
    if (exchange_->exact()) return;
    const std::vector<float>& sent = sent_[k % 2];
    errors_["features"].add(sent.data(), gathered_[k % 2].data() + size_t(rank_) * sent.size(),
                            sent.size());
  }

  void finish_stem(const StepInput& in) {
    if (!stem_) return;
    stem_->backward(dfeatures_.data(), in.batch / ranks_);
    // The fully connected gradients were scaled by 1 / batch over the whole batch: the stem's
    // are this rank's share of the sum, so the ranks' sum (average times P) is the batch mean.
    for (float& g : stem_->grads()) g *= float(ranks_);
    for (int l = 0; l < stem_->layers(); ++l)
      reducer_->average(stem_->grads().data() + stem_->layer_offset(l), stem_->layer_size(l),
                        kConvKey + l, in.step, in.measure);
    stem_->rmsprop_step(config_.optimizer);
  }

  const TrainConfig& config_;
  std::unique_ptr<Exchange> exchange_;
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<ShardedMlp> model_;
  std::unique_ptr<ConvStem> stem_;
  int rank_ = 0, ranks_ = 1, features_ = 0;
  Rows rows_;
  std::vector<std::vector<float>> gathered_, partial_;
  std::vector<float> sent_[2], dfeatures_;
  std::vector<uint8_t> labels_;
  std::vector<uint64_t> keys_;
  ErrorTable errors_;
  CommStats excluded_;
};

}  // namespace

std::unique_ptr<Strategy> make_hybrid(const TrainConfig& config, const CommSpec& comm,
                                      uint64_t seed) {
  return std::make_unique<Hybrid>(config, comm, seed);
}

}  // namespace train
}  // namespace octet
