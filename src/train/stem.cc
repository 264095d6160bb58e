#include "train/stem.h"

#include <cmath>

#include "train/idx.h"
#include "train/layers.h"
#include "train/rng.h"

namespace octet {
namespace train {

StemShape StemShape::alexnet() {
  StemShape s;
  s.convs.push_back({1, kImageSide, kImageSide, 16, 5, 2});
  s.convs.push_back({16, kImageSide / 2, kImageSide / 2, 32, 5, 2});
  return s;
}

int StemShape::features() const {
  const ConvShape& last = convs.back();
  return int(last.out_size() / 4);
}

MlpShape alexnet_head() {
  return {{StemShape::alexnet().features(), 1024, 1024, kClasses}, {0.2f, 0.3f, 0.3f}};
}

ConvStem::ConvStem(const StemShape& shape, uint64_t seed) : shape_(shape) {
  offsets_.push_back(0);
  for (const ConvShape& c : shape.convs)
    offsets_.push_back(offsets_.back() + c.weights() + c.out_c);
  params_.assign(offsets_.back(), 0.0f);
  grads_.assign(offsets_.back(), 0.0f);
  mean_square_.assign(offsets_.back(), 0.0f);
  for (int l = 0; l < layers(); ++l) {
    const ConvShape& c = shape.convs[l];
    Rng rng(stream_key({seed, 0xc0a7, uint64_t(l)}));
    const float limit = std::sqrt(6.0f / float(c.in_c * c.k * c.k));
    float* w = params_.data() + offsets_[l];
    for (size_t i = 0; i < c.weights(); ++i) w[i] = (2.0f * rng.uniform() - 1.0f) * limit;
  }
  inputs_.resize(layers());
  relu_.resize(layers());
  argmax_.resize(layers());
}

const float* ConvStem::forward(const float* x, int n) {
  const float* in = x;
  for (int l = 0; l < layers(); ++l) {
    const ConvShape& c = shape_.convs[l];
    inputs_[l].assign(in, in + size_t(n) * c.in_size());
    relu_[l].resize(size_t(n) * c.out_size());
    const float* w = params_.data() + offsets_[l];
    conv_forward(c, w, w + c.weights(), inputs_[l].data(), n, relu_[l].data(), col_);
    relu_forward(relu_[l].data(), relu_[l].size());
    out_.resize(relu_[l].size() / 4);
    argmax_[l].resize(out_.size());
    maxpool_forward(c.out_c, c.out_h(), c.out_w(), relu_[l].data(), n, out_.data(),
                    argmax_[l].data());
    in = out_.data();
  }
  return out_.data();
}

void ConvStem::backward(const float* dfeatures, int n) {
  d_out_.assign(dfeatures, dfeatures + size_t(n) * features());
  for (int l = layers() - 1; l >= 0; --l) {
    const ConvShape& c = shape_.convs[l];
    d_relu_.resize(relu_[l].size());
    maxpool_backward(c.out_c, c.out_h(), c.out_w(), argmax_[l].data(), d_out_.data(), n,
                     d_relu_.data());
    relu_backward(relu_[l].data(), d_relu_.data(), d_relu_.size());
    float* dw = grads_.data() + offsets_[l];
    d_out_.resize(l > 0 ? size_t(n) * c.in_size() : 0);
    conv_backward(c, params_.data() + offsets_[l], inputs_[l].data(), d_relu_.data(), n, dw,
                  dw + c.weights(), l > 0 ? d_out_.data() : nullptr, col_);
  }
}

void ConvStem::rmsprop_step(const RmsProp& opt) {
  rmsprop_update(opt, params_.data(), grads_.data(), mean_square_.data(), params_.size());
}

}  // namespace train
}  // namespace octet
