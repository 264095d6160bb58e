#include "train/layers.h"

#include <algorithm>
#include <cmath>

#include "train/blas.h"
#include "train/rng.h"

namespace octet {
namespace train {

void dense_forward(const DenseView& layer, const float* x, int n, float* y) {
  for (int i = 0; i < n; ++i) std::copy(layer.b, layer.b + layer.out, y + size_t(i) * layer.out);
  gemm(false, false, n, layer.out, layer.in, 1.0f, x, layer.in, layer.w, layer.out, 1.0f, y,
       layer.out);
}

void dense_backward(const DenseView& layer, const float* x, const float* dy, int n, float* dw,
                    float* db, float* dx, bool accumulate) {
  gemm(true, false, layer.in, layer.out, n, 1.0f, x, layer.in, dy, layer.out,
       accumulate ? 1.0f : 0.0f, dw, layer.out);
  if (!accumulate) std::fill(db, db + layer.out, 0.0f);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < layer.out; ++j) db[j] += dy[size_t(i) * layer.out + j];
  if (dx)
    gemm(false, true, n, layer.in, layer.out, 1.0f, dy, layer.out, layer.w, layer.out, 0.0f, dx,
         layer.in);
}

void layer_forward(const DenseView& d, const float* x, int n, float p, uint64_t key,
                   const uint64_t* row_keys, bool relu, std::vector<float>& act,
                   std::vector<float>& mask, std::vector<float>& y) {
  act.assign(x, x + size_t(n) * d.in);
  if (p > 0) {
    mask.resize(act.size());
    dropout_forward(act.data(), n, d.in, p, key, row_keys, mask.data());
  }
  y.resize(size_t(n) * d.out);
  dense_forward(d, act.data(), n, y.data());
  if (relu) relu_forward(y.data(), y.size());
}

void relu_forward(float* x, size_t count) {
  for (size_t i = 0; i < count; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(const float* y, float* dy, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (!(y[i] > 0.0f)) dy[i] = 0.0f;
}

void dropout_forward(float* x, int n, int width, float p, uint64_t key, const uint64_t* row_keys,
                     float* mask) {
  const float keep = 1.0f / (1.0f - p);
  for (int i = 0; i < n; ++i) {
    Rng rng(stream_key({key, row_keys[i]}));
    float* row = x + size_t(i) * width;
    float* m = mask + size_t(i) * width;
    for (int j = 0; j < width; ++j) {
      m[j] = rng.uniform() < p ? 0.0f : keep;
      row[j] *= m[j];
    }
  }
}

void dropout_backward(const float* mask, float* dy, size_t count) {
  for (size_t i = 0; i < count; ++i) dy[i] *= mask[i];
}

double softmax_xent(const float* logits, const uint8_t* labels, int n, int classes, float scale,
                    float* grad) {
  double loss = 0;
  for (int i = 0; i < n; ++i) {
    const float* z = logits + size_t(i) * classes;
    const float top = *std::max_element(z, z + classes);
    double sum = 0;
    for (int j = 0; j < classes; ++j) sum += std::exp(double(z[j]) - top);
    const double log_sum = std::log(sum);
    loss += log_sum - (double(z[labels[i]]) - top);
    if (!grad) continue;
    float* g = grad + size_t(i) * classes;
    for (int j = 0; j < classes; ++j) {
      const double prob = std::exp(double(z[j]) - top - log_sum);
      g[j] = scale * float(prob - (j == labels[i] ? 1.0 : 0.0));
    }
  }
  return loss;
}

int count_errors(const float* logits, const uint8_t* labels, int n, int classes) {
  int errors = 0;
  for (int i = 0; i < n; ++i) {
    const float* z = logits + size_t(i) * classes;
    errors += int(std::max_element(z, z + classes) - z) != labels[i];
  }
  return errors;
}

}  // namespace train
}  // namespace octet
