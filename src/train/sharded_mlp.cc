#include "train/sharded_mlp.h"

#include <mpi.h>

#include <algorithm>
#include <string>

#include "octet/error.h"
#include "train/layers.h"
#include "train/rng.h"

namespace octet {
namespace train {
namespace {

// out[i][0, count) (rows `stride` apart) = full[i][begin, +count) (rows `width` apart), n rows.
void take_columns(const float* full, int n, int width, int begin, int count, int stride,
                  float* out) {
  for (int i = 0; i < n; ++i)
    std::copy_n(full + size_t(i) * width + begin, count, out + size_t(i) * stride);
}

void put_columns(const float* in, int n, int stride, int begin, int count, int width, float* full) {
  for (int i = 0; i < n; ++i)
    std::copy_n(in + size_t(i) * stride, count, full + size_t(i) * width + begin);
}

}  // namespace

void pack_columns(const ColumnSplit& s, const float* full, int n, float* blocks) {
  const size_t block = size_t(n) * s.block();
  std::fill(blocks, blocks + block * s.ranks, 0.0f);
  for (int r = 0; r < s.ranks; ++r)
    take_columns(full, n, s.width, s.begin(r), s.count(r), s.block(), blocks + r * block);
}

void unpack_columns(const ColumnSplit& s, const float* blocks, int n, float* full) {
  const size_t block = size_t(n) * s.block();
  for (int r = 0; r < s.ranks; ++r)
    put_columns(blocks + r * block, n, s.block(), s.begin(r), s.count(r), s.width, full);
}

ShardedMlp::ShardedMlp(const MlpShape& shape, uint64_t seed, int rank, int ranks)
    : shape_(shape), rank_(rank), ranks_(ranks) {
  const Mlp whole(shape, seed);
  offsets_.push_back(0);
  for (int l = 0; l < layers(); ++l) {
    splits_.push_back({shape.widths[l + 1], ranks});
    if (splits_[l].count(rank) < 1)
      throw Error(ErrorCode::kInvalidArgument, "model parallel: layer " + std::to_string(l) +
                                                   " has " + std::to_string(shape.widths[l + 1]) +
                                                   " outputs, fewer than the " +
                                                   std::to_string(ranks) + " ranks");
    offsets_.push_back(offsets_.back() + size_t(shape.widths[l] + 1) * splits_[l].count(rank));
  }
  params_.resize(offsets_.back());
  grads_.assign(offsets_.back(), 0.0f);
  mean_square_.assign(offsets_.back(), 0.0f);
  // A layer is (in + 1) rows (weights, then the bias) of `out` columns, in both layouts.
  for (int l = 0; l < layers(); ++l) {
    const ColumnSplit& s = splits_[l];
    take_columns(whole.params().data() + whole.layer_offset(l), shape.widths[l] + 1, s.width,
                 s.begin(rank), s.count(rank), s.count(rank), params_.data() + offsets_[l]);
  }
  acts_.resize(layers());
  masks_.resize(layers());
}

DenseView ShardedMlp::slice(int l) const {
  DenseView v;
  v.in = shape_.widths[l];
  v.out = splits_[l].count(rank_);
  v.w = params_.data() + offsets_[l];
  v.b = v.w + size_t(v.in) * v.out;
  return v;
}

// Allgathers every rank's slice of layer l's outputs (out_) into full_ (n x width).
void ShardedMlp::exchange_outputs(Exchange& ex, int l, int n, TransferTag tag) {
  const ColumnSplit& s = splits_[l];
  const int block = s.block(), count = s.count(rank_);
  sent_.assign(size_t(n) * block, 0.0f);
  put_columns(out_.data(), n, count, 0, count, block, sent_.data());
  received_.resize(sent_.size() * ranks_);
  ex.allgather(sent_.data(), received_.data(), sent_.size(), tag);
  if (tag.train && !ex.exact()) {
    const float* mine = received_.data() + size_t(rank_) * sent_.size();
    ErrorSum& e = errors_["act layer " + std::to_string(l)];
    for (int i = 0; i < n; ++i)
      e.add(sent_.data() + size_t(i) * block, mine + size_t(i) * block, size_t(count));
  }
  full_.resize(size_t(n) * s.width);
  unpack_columns(s, received_.data(), n, full_.data());
}

void ShardedMlp::forward(Exchange& ex, const float* x, int n, bool train, uint64_t dropout_key,
                         const uint64_t* keys, uint64_t step) {
  const float* in = x;
  for (int l = 0; l < layers(); ++l) {
    layer_forward(slice(l), in, n, train ? shape_.dropout[l] : 0.0f,
                  stream_key({dropout_key, uint64_t(l)}), keys, l + 1 < layers(), acts_[l],
                  masks_[l], out_);
    exchange_outputs(ex, l, n, {l, step, train});
    in = full_.data();
  }
}

// received_ (this rank's block of the summed input gradient of layer l, as decoded) against the
// exact fp32 sum of the same partial sums (sent_), over this rank's columns.
void ShardedMlp::record_input_gradient_error(Exchange& ex, int l, int n) {
  const ColumnSplit& s = splits_[l - 1];
  const int block = s.block(), count = s.count(rank_);
  ex.measuring([&] {
    exact_.resize(received_.size());
    ex.reduce_scatter_exact(sent_.data(), exact_.data(), exact_.size());
    ErrorSum& e = errors_["igrad layer " + std::to_string(l)];
    for (int i = 0; i < n; ++i)
      e.add(exact_.data() + size_t(i) * block, received_.data() + size_t(i) * block, size_t(count));
  });
}

// From partial_ (this rank's partial sum of layer l's input gradient, n x widths[l]) to dy_ (the
// summed gradient of this rank's columns of layer l - 1's outputs, through dropout and ReLU).
void ShardedMlp::backward_input(Exchange& ex, int l, int n, uint64_t step, bool measure) {
  const ColumnSplit& s = splits_[l - 1];
  const int block = s.block(), begin = s.begin(rank_), count = s.count(rank_);
  sent_.resize(size_t(n) * block * ranks_);
  pack_columns(s, partial_.data(), n, sent_.data());
  received_.resize(size_t(n) * block);
  ex.reduce_scatter(sent_.data(), received_.data(), received_.size(), {l, step, true});
  if (measure && !ex.exact()) record_input_gradient_error(ex, l, n);
  dy_.resize(size_t(n) * count);
  take_columns(received_.data(), n, block, 0, count, count, dy_.data());
  cols_.resize(dy_.size());
  if (shape_.dropout[l] > 0) {
    take_columns(masks_[l].data(), n, s.width, begin, count, count, cols_.data());
    dropout_backward(cols_.data(), dy_.data(), dy_.size());
  }
  // acts_[l] is ReLU output times the mask: zero where either zeroed the value.
  take_columns(acts_[l].data(), n, s.width, begin, count, count, cols_.data());
  relu_backward(cols_.data(), dy_.data(), dy_.size());
}

double ShardedMlp::forward_backward(Exchange& ex, const float* x, const uint8_t* labels, int n,
                                    uint64_t dropout_key, const uint64_t* keys, float loss_scale,
                                    uint64_t step, bool accumulate, float* dx, bool measure) {
  forward(ex, x, n, true, dropout_key, keys, step);
  const ColumnSplit& top = splits_.back();
  delta_.resize(size_t(n) * top.width);
  const double loss = softmax_xent(full_.data(), labels, n, top.width, loss_scale, delta_.data());
  dy_.resize(size_t(n) * top.count(rank_));
  take_columns(delta_.data(), n, top.width, top.begin(rank_), top.count(rank_), top.count(rank_),
               dy_.data());
  for (int l = layers() - 1; l >= 0; --l) {
    const DenseView d = slice(l);
    float* in_grad = dx;
    if (l > 0) {
      partial_.resize(size_t(n) * d.in);
      in_grad = partial_.data();
    }
    dense_backward(d, acts_[l].data(), dy_.data(), n, grad(l), grad(l) + size_t(d.in) * d.out,
                   in_grad, accumulate);
    if (l > 0) backward_input(ex, l, n, step, measure);
  }
  // The mask is the same on every rank: masking each partial sum masks their total.
  if (dx && shape_.dropout[0] > 0) dropout_backward(masks_[0].data(), dx, size_t(n) * slice(0).in);
  return loss;
}

int ShardedMlp::count_errors(Exchange& ex, const float* x, const uint8_t* labels, int n) {
  constexpr int kChunk = 512;
  int errors = 0;
  for (int i = 0; i < n; i += kChunk) {
    const int m = std::min(kChunk, n - i);
    forward(ex, x + size_t(i) * shape_.widths[0], m, false, 0, nullptr, 0);
    errors += train::count_errors(full_.data(), labels + i, m, shape_.widths.back());
  }
  return errors;
}

void ShardedMlp::rmsprop_step(const RmsProp& opt) {
  rmsprop_update(opt, params_.data(), grads_.data(), mean_square_.data(), params_.size());
}

std::vector<float> ShardedMlp::full_params() const {
  const Mlp shapes(shape_, 0);
  std::vector<float> full(shapes.params().size());
  for (int l = 0; l < layers(); ++l) {
    const ColumnSplit& s = splits_[l];
    const int rows = shape_.widths[l] + 1, block = s.block(), count = s.count(rank_);
    std::vector<float> mine(size_t(rows) * block, 0.0f), all(mine.size() * ranks_);
    put_columns(params_.data() + offsets_[l], rows, count, 0, count, block, mine.data());
    MPI_Allgather(mine.data(), int(mine.size()), MPI_FLOAT, all.data(), int(mine.size()), MPI_FLOAT,
                  MPI_COMM_WORLD);
    unpack_columns(s, all.data(), rows, full.data() + shapes.layer_offset(l));
  }
  return full;
}

uint64_t ShardedMlp::fp32_bytes(int n) const {
  uint64_t values = 0;  // per rank: P - 1 blocks per allgather and per reduce_scatter
  for (int l = 0; l < layers(); ++l) values += uint64_t(n) * splits_[l].block();
  for (int l = 1; l < layers(); ++l) values += uint64_t(n) * splits_[l - 1].block();
  return values * uint64_t(ranks_ - 1) * sizeof(float);
}

}  // namespace train
}  // namespace octet
