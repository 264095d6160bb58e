// The convolutional stem's layers (`--model alexnet`) on batches of NCHW images: a stride-1
// convolution with zero padding as im2col + one OpenBLAS sgemm per sample, and 2x2 max pooling.
// tests/train checks every backward against finite differences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace octet {
namespace train {

// A k x k convolution, stride 1, `pad` zeros on each side. Weights are out_c x (in_c * k * k),
// row-major (one row per output channel), bias out_c.
struct ConvShape {
  int in_c = 1, h = 28, w = 28, out_c = 1, k = 3, pad = 1;
  int out_h() const { return h + 2 * pad - k + 1; }
  int out_w() const { return w + 2 * pad - k + 1; }
  size_t weights() const { return size_t(out_c) * in_c * k * k; }
  size_t in_size() const { return size_t(in_c) * h * w; }  // per sample
  size_t out_size() const { return size_t(out_c) * out_h() * out_w(); }
};

// y[n][out_c][out_h][out_w] = w * x + b. `col` is scratch, resized as needed.
void conv_forward(const ConvShape& s, const float* w, const float* b, const float* x, int n,
                  float* y, std::vector<float>& col);
// From dy: dw and db (overwritten, or added to when `accumulate`), and dx when not null.
void conv_backward(const ConvShape& s, const float* w, const float* x, const float* dy, int n,
                   float* dw, float* db, float* dx, std::vector<float>& col,
                   bool accumulate = false);

// 2x2 max pooling, stride 2, over n x c planes of h x w (h, w even). `argmax` gets, per output,
// the index within the input plane of the maximum (the first one on ties), for the backward
// pass: dx is zero except dx[argmax] = dy.
void maxpool_forward(int c, int h, int w, const float* x, int n, float* y, uint32_t* argmax);
void maxpool_backward(int c, int h, int w, const uint32_t* argmax, const float* dy, int n,
                      float* dx);

}  // namespace train
}  // namespace octet
