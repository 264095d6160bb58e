#include "train/mlp.h"

#include <algorithm>
#include <cmath>

#include "octet/error.h"
#include "train/rng.h"

namespace octet {
namespace train {

MlpShape MlpShape::paper() {
  return {{784, 1024, 1024, 10}, {0.2f, 0.3f, 0.3f}};
}

Mlp::Mlp(const MlpShape& shape, uint64_t seed) : shape_(shape) {
  if (shape.widths.size() < 2 || shape.dropout.size() != shape.widths.size() - 1)
    throw Error(ErrorCode::kInvalidArgument, "mlp: need one dropout rate per layer");
  offsets_.push_back(0);
  for (int l = 0; l < layers(); ++l)
    offsets_.push_back(offsets_.back() + size_t(shape.widths[l] + 1) * shape.widths[l + 1]);
  params_.assign(offsets_.back(), 0.0f);
  grads_.assign(offsets_.back(), 0.0f);
  mean_square_.assign(offsets_.back(), 0.0f);
  for (int l = 0; l < layers(); ++l) {
    Rng rng(stream_key({seed, 0x1417, uint64_t(l)}));
    const float limit = std::sqrt(6.0f / float(shape.widths[l]));
    float* w = params_.data() + offsets_[l];
    for (size_t i = 0; i < size_t(shape.widths[l]) * shape.widths[l + 1]; ++i)
      w[i] = (2.0f * rng.uniform() - 1.0f) * limit;
  }
  acts_.resize(layers());
  masks_.resize(layers());
}

DenseView Mlp::layer(int l) const {
  DenseView v;
  v.in = shape_.widths[l];
  v.out = shape_.widths[l + 1];
  v.w = params_.data() + offsets_[l];
  v.b = v.w + size_t(v.in) * v.out;
  return v;
}

void Mlp::forward(const float* x, int n, bool train, uint64_t dropout_key, const uint64_t* keys) {
  const float* in = x;
  for (int l = 0; l < layers(); ++l) {
    layer_forward(layer(l), in, n, train ? shape_.dropout[l] : 0.0f,
                  stream_key({dropout_key, uint64_t(l)}), keys, l + 1 < layers(), acts_[l],
                  masks_[l], out_);
    in = out_.data();
    if (l + 1 < layers()) acts_[l + 1].assign(out_.begin(), out_.end());
  }
}

double Mlp::forward_backward(const float* x, const uint8_t* labels, int n, uint64_t dropout_key,
                             const uint64_t* sample_keys, float loss_scale, float* dx) {
  forward(x, n, true, dropout_key, sample_keys);
  const int classes = shape_.widths.back();
  delta_.resize(size_t(n) * classes);
  const double loss = softmax_xent(out_.data(), labels, n, classes, loss_scale, delta_.data());
  for (int l = layers() - 1; l >= 0; --l) {
    const DenseView d = layer(l);
    float* dw = grads_.data() + offsets_[l];
    delta_in_.resize(l > 0 ? size_t(n) * d.in : 0);
    dense_backward(d, acts_[l].data(), delta_.data(), n, dw, dw + size_t(d.in) * d.out,
                   l > 0 ? delta_in_.data() : dx);
    if (l == 0) {
      if (dx && shape_.dropout[0] > 0) dropout_backward(masks_[0].data(), dx, size_t(n) * d.in);
      break;
    }
    if (shape_.dropout[l] > 0)
      dropout_backward(masks_[l].data(), delta_in_.data(), delta_in_.size());
    // acts_[l] is relu output times the mask: zero exactly where the relu output was zero or
    // dropped, and dropped entries already have a zero gradient.
    relu_backward(acts_[l].data(), delta_in_.data(), delta_in_.size());
    delta_.swap(delta_in_);
  }
  return loss;
}

int Mlp::count_errors(const float* x, const uint8_t* labels, int n) {
  constexpr int kChunk = 512;
  int errors = 0;
  for (int i = 0; i < n; i += kChunk) {
    const int m = std::min(kChunk, n - i);
    forward(x + size_t(i) * shape_.widths[0], m, false, 0, nullptr);
    errors += train::count_errors(out_.data(), labels + i, m, shape_.widths.back());
  }
  return errors;
}

void rmsprop_update(const RmsProp& opt, float* p, const float* g, float* ms, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    ms[i] = opt.rho * ms[i] + (1.0f - opt.rho) * g[i] * g[i];
    p[i] -= opt.lr * g[i] / (std::sqrt(ms[i]) + opt.eps);
  }
}

void Mlp::rmsprop_step(const RmsProp& opt) {
  rmsprop_update(opt, params_.data(), grads_.data(), mean_square_.data(), params_.size());
}

}  // namespace train
}  // namespace octet
