// The layers of the MLP as free functions on row-major batches (n samples x width), each with its
// backward pass; tests/train checks every backward against finite differences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace octet {
namespace train {

// A fully connected layer's parameters: w is in x out (row-major), b is out.
struct DenseView {
  int in = 0, out = 0;
  const float* w = nullptr;
  const float* b = nullptr;
};

// y[n x out] = x[n x in] * w + b.
void dense_forward(const DenseView& layer, const float* x, int n, float* y);
// From dy[n x out]: dw = x^T dy, db = column sums of dy (both overwritten, or added to when
// `accumulate`: hybrid sums sub-batches), and, when dx is not null, dx[n x in] = dy w^T.
void dense_backward(const DenseView& layer, const float* x, const float* dy, int n, float* dw,
                    float* db, float* dx, bool accumulate = false);

// y = max(x, 0) in place over count values; backward: dy = 0 where the output is 0.
void relu_forward(float* x, size_t count);
void relu_backward(const float* y, float* dy, size_t count);

// Inverted dropout in place over n rows of `width`: each value is kept with probability 1 - p
// and scaled by 1 / (1 - p). Row i draws from a stream keyed by (key, row_keys[i]), so a sample's
// mask depends on the sample, not on which rank or batch position holds it. mask gets the
// factor applied to each value (0 or 1 / (1 - p)), for the backward pass: dx = dy * mask.
void dropout_forward(float* x, int n, int width, float p, uint64_t key, const uint64_t* row_keys,
                     float* mask);
void dropout_backward(const float* mask, float* dy, size_t count);

// One layer's forward pass as both MLPs (whole and split) run it: act = x[n x in] with dropout p
// applied when p > 0 (its mask kept for the backward pass), y = act * w + b, then ReLU if `relu`.
void layer_forward(const DenseView& layer, const float* x, int n, float p, uint64_t key,
                   const uint64_t* row_keys, bool relu, std::vector<float>& act,
                   std::vector<float>& mask, std::vector<float>& y);

// Softmax cross-entropy of logits[n x classes] against labels: returns the sum of the n losses
// (in double) and, when grad is not null, sets grad = scale * (softmax - onehot).
double softmax_xent(const float* logits, const uint8_t* labels, int n, int classes, float scale,
                    float* grad);

// Index of the largest logit of each row, compared with labels: the number of mistakes.
int count_errors(const float* logits, const uint8_t* labels, int n, int classes);

}  // namespace train
}  // namespace octet
