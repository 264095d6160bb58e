#include "train/conv.h"

#include <algorithm>

#include "train/blas.h"

namespace octet {
namespace train {
namespace {

// col[(ci * k + ky) * k + kx][oy * out_w + ox] = x[ci][oy + ky - pad][ox + kx - pad], 0 outside.
void im2col(const ConvShape& s, const float* x, float* col) {
  const int oh = s.out_h(), ow = s.out_w();
  for (int ci = 0; ci < s.in_c; ++ci)
    for (int ky = 0; ky < s.k; ++ky)
      for (int kx = 0; kx < s.k; ++kx) {
        float* row = col + size_t((ci * s.k + ky) * s.k + kx) * oh * ow;
        for (int oy = 0; oy < oh; ++oy) {
          const int iy = oy + ky - s.pad;
          for (int ox = 0; ox < ow; ++ox) {
            const int ix = ox + kx - s.pad;
            const bool inside = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w;
            row[oy * ow + ox] = inside ? x[(size_t(ci) * s.h + iy) * s.w + ix] : 0.0f;
          }
        }
      }
}

// The adjoint of im2col: dx[ci][iy][ix] += every col entry that copied it.
void col2im(const ConvShape& s, const float* col, float* dx) {
  const int oh = s.out_h(), ow = s.out_w();
  std::fill(dx, dx + s.in_size(), 0.0f);
  for (int ci = 0; ci < s.in_c; ++ci)
    for (int ky = 0; ky < s.k; ++ky)
      for (int kx = 0; kx < s.k; ++kx) {
        const float* row = col + size_t((ci * s.k + ky) * s.k + kx) * oh * ow;
        for (int oy = 0; oy < oh; ++oy) {
          const int iy = oy + ky - s.pad;
          if (iy < 0 || iy >= s.h) continue;
          for (int ox = 0; ox < ow; ++ox) {
            const int ix = ox + kx - s.pad;
            if (ix >= 0 && ix < s.w) dx[(size_t(ci) * s.h + iy) * s.w + ix] += row[oy * ow + ox];
          }
        }
      }
}

}  // namespace

void conv_forward(const ConvShape& s, const float* w, const float* b, const float* x, int n,
                  float* y, std::vector<float>& col) {
  const int pixels = s.out_h() * s.out_w(), patch = s.in_c * s.k * s.k;
  col.resize(size_t(patch) * pixels);
  for (int i = 0; i < n; ++i) {
    float* out = y + size_t(i) * s.out_size();
    for (int c = 0; c < s.out_c; ++c) std::fill_n(out + size_t(c) * pixels, pixels, b[c]);
    im2col(s, x + size_t(i) * s.in_size(), col.data());
    gemm(false, false, s.out_c, pixels, patch, 1.0f, w, patch, col.data(), pixels, 1.0f, out,
         pixels);
  }
}

void conv_backward(const ConvShape& s, const float* w, const float* x, const float* dy, int n,
                   float* dw, float* db, float* dx, std::vector<float>& col, bool accumulate) {
  const int pixels = s.out_h() * s.out_w(), patch = s.in_c * s.k * s.k;
  col.resize(size_t(patch) * pixels);
  if (!accumulate) {
    std::fill(dw, dw + s.weights(), 0.0f);
    std::fill(db, db + s.out_c, 0.0f);
  }
  std::vector<float> dcol(dx ? col.size() : 0);
  for (int i = 0; i < n; ++i) {
    const float* g = dy + size_t(i) * s.out_size();
    im2col(s, x + size_t(i) * s.in_size(), col.data());
    gemm(false, true, s.out_c, patch, pixels, 1.0f, g, pixels, col.data(), pixels, 1.0f, dw, patch);
    for (int c = 0; c < s.out_c; ++c)
      for (int p = 0; p < pixels; ++p) db[c] += g[size_t(c) * pixels + p];
    if (!dx) continue;
    gemm(true, false, patch, pixels, s.out_c, 1.0f, w, patch, g, pixels, 0.0f, dcol.data(), pixels);
    col2im(s, dcol.data(), dx + size_t(i) * s.in_size());
  }
}

void maxpool_forward(int c, int h, int w, const float* x, int n, float* y, uint32_t* argmax) {
  const int oh = h / 2, ow = w / 2;
  for (size_t plane = 0; plane < size_t(n) * c; ++plane) {
    const float* in = x + plane * h * w;
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        uint32_t best = uint32_t(2 * oy * w + 2 * ox);
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx) {
            const uint32_t at = uint32_t((2 * oy + dy) * w + 2 * ox + dx);
            if (in[at] > in[best]) best = at;
          }
        const size_t out = plane * oh * ow + size_t(oy) * ow + ox;
        y[out] = in[best];
        argmax[out] = best;
      }
  }
}

void maxpool_backward(int c, int h, int w, const uint32_t* argmax, const float* dy, int n,
                      float* dx) {
  const size_t out_plane = size_t(h / 2) * (w / 2);
  std::fill(dx, dx + size_t(n) * c * h * w, 0.0f);
  for (size_t plane = 0; plane < size_t(n) * c; ++plane)
    for (size_t o = 0; o < out_plane; ++o)
      dx[plane * h * w + argmax[plane * out_plane + o]] += dy[plane * out_plane + o];
}

}  // namespace train
}  // namespace octet
