// The paper's MNIST network (paper 001, section 3.4): fully connected layers with ReLU between
// them, dropout on each layer's input, softmax cross-entropy, RMSProp. Parameters and gradients
// are two flat arrays, layer after layer (weights then bias), so that a layer's gradient is one
// contiguous slice for the allreduce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "train/layers.h"

namespace octet {
namespace train {

struct MlpShape {
  std::vector<int> widths;     // input, hidden..., classes
  std::vector<float> dropout;  // one per layer input (widths.size() - 1 values)
  static MlpShape paper();     // 784-1024-1024-10, dropout 0.2/0.3/0.3
};

struct RmsProp {
  float lr = 0.003f, rho = 0.9f, eps = 1e-6f;
};

// p -= lr * g / (sqrt(ms) + eps) after ms = rho * ms + (1 - rho) * g^2, over n parameters.
void rmsprop_update(const RmsProp& opt, float* p, const float* g, float* ms, size_t n);

class Mlp {
 public:
  // Weights uniform in +-sqrt(6 / fan_in) (He), biases 0, drawn from `seed`.
  Mlp(const MlpShape& shape, uint64_t seed);

  int layers() const { return int(shape_.widths.size()) - 1; }
  DenseView layer(int l) const;
  size_t layer_offset(int l) const { return offsets_[l]; }
  size_t layer_size(int l) const { return offsets_[l + 1] - offsets_[l]; }

  std::vector<float>& params() { return params_; }
  const std::vector<float>& params() const { return params_; }
  std::vector<float>& grads() { return grads_; }

  // Forward and backward over n samples with dropout keyed by (dropout_key, sample_keys[i]);
  // grads() = loss_scale * d(sum of losses)/d(params), and, when dx is not null, dx (n x
  // widths[0]) = loss_scale * d(sum of losses)/dx. Returns the sum of the n losses.
  double forward_backward(const float* x, const uint8_t* labels, int n, uint64_t dropout_key,
                          const uint64_t* sample_keys, float loss_scale, float* dx = nullptr);
  // Mistakes over n samples, without dropout (evaluated in chunks of at most 512 samples).
  int count_errors(const float* x, const uint8_t* labels, int n);
  // params -= lr * grads / (sqrt(mean square) + eps), mean square kept per parameter.
  void rmsprop_step(const RmsProp& opt);

 private:
  void forward(const float* x, int n, bool train, uint64_t dropout_key, const uint64_t* keys);

  MlpShape shape_;
  std::vector<size_t> offsets_;
  std::vector<float> params_, grads_, mean_square_;
  // Per layer: its input after dropout (acts_[l]), the dropout mask, and the logits at the end.
  std::vector<std::vector<float>> acts_, masks_;
  std::vector<float> out_, delta_, delta_in_;
};

}  // namespace train
}  // namespace octet
