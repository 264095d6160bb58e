// The AlexNet-style network's convolutional stem (`--model alexnet`): stages of convolution,
// ReLU and 2x2 max pooling on 28 x 28 images, whose output feeds large fully connected layers
// (an Mlp or ShardedMlp over its features). Parameters and gradients are flat arrays, stage after
// stage (weights then bias), like the Mlp's, so that dp averages one slice per stage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "train/conv.h"
#include "train/mlp.h"

namespace octet {
namespace train {

struct StemShape {
  std::vector<ConvShape> convs;  // each followed by ReLU and 2x2 max pooling
  // 1x28x28 -> conv 5x5 16 -> pool -> 16x14x14 -> conv 5x5 32 -> pool -> 32x7x7 (1568 features).
  static StemShape alexnet();
  int features() const;
};

// The fully connected layers after the stem: 1568-1024-1024-10, dropout 0.2/0.3/0.3 (the MLP's
// rates; the first one on the features).
MlpShape alexnet_head();

class ConvStem {
 public:
  // Weights uniform in +-sqrt(6 / fan_in), biases 0, drawn from `seed`.
  ConvStem(const StemShape& shape, uint64_t seed);

  int layers() const { return int(shape_.convs.size()); }
  int features() const { return shape_.features(); }
  size_t layer_offset(int l) const { return offsets_[l]; }
  size_t layer_size(int l) const { return offsets_[l + 1] - offsets_[l]; }
  std::vector<float>& params() { return params_; }
  const std::vector<float>& params() const { return params_; }
  std::vector<float>& grads() { return grads_; }

  // Features of n images (n x 784), n x features(); kept for backward.
  const float* forward(const float* x, int n);
  // grads() = gradient of sum(dfeatures . features) for the last forward's n images.
  void backward(const float* dfeatures, int n);
  void rmsprop_step(const RmsProp& opt);

 private:
  StemShape shape_;
  std::vector<size_t> offsets_;
  std::vector<float> params_, grads_, mean_square_;
  // Per stage: its input, its ReLU output, the pooling's argmax; then the features.
  std::vector<std::vector<float>> inputs_, relu_;
  std::vector<std::vector<uint32_t>> argmax_;
  std::vector<float> out_, d_out_, d_relu_, col_;
};

}  // namespace train
}  // namespace octet
