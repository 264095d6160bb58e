// Each layer's backward against central finite differences of its forward pass.
//
// Tolerance: the forwards run in float, so a difference quotient (L(p+h) - L(p-h)) / 2h carries a
// rounding error of about |L| * 6e-8 / h. The dense, ReLU and dropout checks probe the layer with
// a linear loss L = sum(c * y) (accumulated in double) and use h = 1e-2: those layers are linear
// in each input on the side of every ReLU kink we stay on (inputs are kept 0.1 away from 0), so
// the quotient has no truncation error, and the rounding term is ~1e-5. Softmax cross-entropy and
// the whole network are smooth (or piecewise linear) with h = 1e-3: truncation ~h^2 = 1e-6,
// rounding ~1e-4. Hence |analytic - numeric| <= 2e-3 * max(1, |numeric|), ten times the worst
// expected error and far below the size of any real mistake (a wrong sign or a missing term).
#include <cmath>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "train/conv.h"
#include "train/layers.h"
#include "train/mlp.h"
#include "train/rng.h"
#include "train/stem.h"

namespace octet {
namespace train {
namespace {

std::vector<float> random_values(size_t n, uint64_t key, float lo = -1, float hi = 1) {
  Rng rng(key);
  std::vector<float> v(n);
  for (float& x : v) x = lo + (hi - lo) * rng.uniform();
  return v;
}

// Values away from 0 (so a ReLU never switches side within h).
std::vector<float> away_from_zero(size_t n, uint64_t key) {
  std::vector<float> v = random_values(n, key);
  for (float& x : v) x = x < 0 ? x - 0.1f : x + 0.1f;
  return v;
}

double probe(const std::vector<float>& y, const std::vector<float>& c) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += double(c[i]) * y[i];
  return s;
}

// Checks grad against finite differences of loss() over every element of x.
void expect_gradient(std::vector<float>& x, const std::vector<float>& grad,
                     const std::function<double()>& loss, float h, const char* what) {
  ASSERT_EQ(x.size(), grad.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float keep = x[i];
    x[i] = keep + h;
    const double up = loss();
    x[i] = keep - h;
    const double down = loss();
    x[i] = keep;
    const double numeric = (up - down) / (double(keep + h) - double(keep - h));
    EXPECT_NEAR(grad[i], numeric, 2e-3 * std::max(1.0, std::fabs(numeric))) << what << " " << i;
  }
}

TEST(GradientCheck, Dense) {
  const int n = 3, in = 5, out = 4;
  std::vector<float> w = random_values(in * out, 1), b = random_values(out, 2);
  std::vector<float> x = random_values(n * in, 3), c = random_values(n * out, 4), y(n * out);
  auto view = [&] { return DenseView{in, out, w.data(), b.data()}; };
  auto loss = [&] {
    dense_forward(view(), x.data(), n, y.data());
    return probe(y, c);
  };
  std::vector<float> dw(w.size()), db(b.size()), dx(x.size());
  dense_backward(view(), x.data(), c.data(), n, dw.data(), db.data(), dx.data());
  expect_gradient(w, dw, loss, 1e-2f, "dw");
  expect_gradient(b, db, loss, 1e-2f, "db");
  expect_gradient(x, dx, loss, 1e-2f, "dx");
}

TEST(GradientCheck, Relu) {
  std::vector<float> x = away_from_zero(40, 5), c = random_values(40, 6), y;
  auto loss = [&] {
    y = x;
    relu_forward(y.data(), y.size());
    return probe(y, c);
  };
  loss();
  std::vector<float> dx = c;
  relu_backward(y.data(), dx.data(), dx.size());
  expect_gradient(x, dx, loss, 1e-2f, "relu");
}

TEST(GradientCheck, Dropout) {
  const int n = 4, width = 10;
  const std::vector<uint64_t> keys{11, 12, 13, 14};
  std::vector<float> x = random_values(n * width, 7), c = random_values(n * width, 8), y,
                     mask(n * width);
  auto loss = [&] {
    y = x;
    dropout_forward(y.data(), n, width, 0.3f, 99, keys.data(), mask.data());
    return probe(y, c);
  };
  loss();
  std::vector<float> dx = c;
  dropout_backward(mask.data(), dx.data(), dx.size());
  expect_gradient(x, dx, loss, 1e-2f, "dropout");
  int dropped = 0;
  for (float m : mask) dropped += m == 0;
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, n * width);
}

TEST(GradientCheck, SoftmaxCrossEntropy) {
  const int n = 3, classes = 10;
  std::vector<float> z = random_values(n * classes, 9, -3, 3), g(z.size());
  const std::vector<uint8_t> labels{0, 4, 9};
  softmax_xent(z.data(), labels.data(), n, classes, 1.0f, g.data());
  auto loss = [&] { return softmax_xent(z.data(), labels.data(), n, classes, 1.0f, nullptr); };
  expect_gradient(z, g, loss, 1e-3f, "logits");
}

// The whole network, dropout included (its masks are fixed by the keys), every parameter.
TEST(GradientCheck, WholeMlp) {
  Mlp model({{6, 5, 4, 3}, {0.2f, 0.3f, 0.3f}}, 3);
  const int n = 4;
  std::vector<float> x = random_values(n * 6, 10, 0, 1);
  const std::vector<uint8_t> labels{0, 1, 2, 1};
  const std::vector<uint64_t> keys{1, 2, 3, 4};
  auto loss = [&] { return model.forward_backward(x.data(), labels.data(), n, 5, keys.data(), 1); };
  loss();
  const std::vector<float> grad = model.grads();
  expect_gradient(model.params(), grad, loss, 1e-3f, "mlp");
}

// The Mlp's gradient of its input (what the stem receives), through the input's dropout.
TEST(GradientCheck, MlpInput) {
  Mlp model({{6, 5, 4, 3}, {0.2f, 0.3f, 0.3f}}, 3);
  const int n = 4;
  std::vector<float> x = random_values(n * 6, 10, 0, 1), dx(x.size());
  const std::vector<uint8_t> labels{0, 1, 2, 1};
  const std::vector<uint64_t> keys{1, 2, 3, 4};
  model.forward_backward(x.data(), labels.data(), n, 5, keys.data(), 1, dx.data());
  auto loss = [&] { return model.forward_backward(x.data(), labels.data(), n, 5, keys.data(), 1); };
  expect_gradient(x, dx, loss, 1e-3f, "mlp input");
}

TEST(GradientCheck, Conv) {
  const ConvShape s{2, 5, 6, 3, 3, 1};
  const int n = 2;
  std::vector<float> w = random_values(s.weights(), 21), b = random_values(s.out_c, 22);
  std::vector<float> x = random_values(n * s.in_size(), 23),
                     c = random_values(n * s.out_size(), 24);
  std::vector<float> y(c.size()), col;
  auto loss = [&] {
    conv_forward(s, w.data(), b.data(), x.data(), n, y.data(), col);
    return probe(y, c);
  };
  std::vector<float> dw(w.size()), db(b.size()), dx(x.size());
  conv_backward(s, w.data(), x.data(), c.data(), n, dw.data(), db.data(), dx.data(), col);
  expect_gradient(w, dw, loss, 1e-2f, "conv dw");
  expect_gradient(b, db, loss, 1e-2f, "conv db");
  expect_gradient(x, dx, loss, 1e-2f, "conv dx");
  // accumulate adds a second batch's gradient to the first.
  std::vector<float> dw2 = dw, db2 = db;
  conv_backward(s, w.data(), x.data(), c.data(), n, dw2.data(), db2.data(), nullptr, col, true);
  for (size_t i = 0; i < dw.size(); ++i)
    EXPECT_NEAR(dw2[i], 2 * dw[i], 1e-5 * (1 + std::fabs(dw[i])));
  for (size_t i = 0; i < db.size(); ++i)
    EXPECT_NEAR(db2[i], 2 * db[i], 1e-5 * (1 + std::fabs(db[i])));
}

TEST(GradientCheck, MaxPool) {
  const int n = 2, c = 3, h = 4, w = 6;
  // A shuffled staircase: every value 0.05 from the next, so h = 1e-2 keeps each window's winner.
  std::vector<float> x(n * c * h * w);
  Rng rng(25);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.05f * float(i);
  for (size_t i = x.size(); i > 1; --i) std::swap(x[i - 1], x[rng.below(i)]);
  std::vector<float> probe_c = random_values(x.size() / 4, 26), y(probe_c.size());
  std::vector<uint32_t> argmax(y.size());
  auto loss = [&] {
    maxpool_forward(c, h, w, x.data(), n, y.data(), argmax.data());
    return probe(y, probe_c);
  };
  loss();
  std::vector<float> dx(x.size());
  maxpool_backward(c, h, w, argmax.data(), probe_c.data(), n, dx.data());
  expect_gradient(x, dx, loss, 1e-2f, "maxpool");
}

// A small stem end to end (two conv-ReLU-pool stages), every parameter.
TEST(GradientCheck, WholeStem) {
  StemShape shape;
  shape.convs.push_back({1, 8, 8, 3, 3, 1});
  shape.convs.push_back({3, 4, 4, 4, 3, 1});
  ConvStem stem(shape, 4);
  const int n = 2;
  const std::vector<float> x = random_values(n * 64, 29, 0, 1);
  const std::vector<float> c = random_values(size_t(n) * stem.features(), 28);
  auto loss = [&] {
    const float* f = stem.forward(x.data(), n);
    return probe(std::vector<float>(f, f + c.size()), c);
  };
  loss();
  stem.backward(c.data(), n);
  const std::vector<float> grad = stem.grads();
  expect_gradient(stem.params(), grad, loss, 1e-3f, "stem");
}

}  // namespace
}  // namespace train
}  // namespace octet
