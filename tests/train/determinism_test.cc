// The same seed gives the same model bit for bit; dropout masks depend on the sample, not on
// where it sits in the batch (so the rank count does not change them).
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "octet/detail/hash.h"
#include "train/blas.h"
#include "train/layers.h"
#include "train/mlp.h"
#include "train/rng.h"

namespace octet {
namespace train {
namespace {

uint64_t train_steps(uint64_t seed) {
  blas_single_thread();
  Mlp model({{784, 64, 32, 10}, {0.2f, 0.3f, 0.3f}}, seed);
  Rng rng(seed);
  std::vector<float> x(16 * 784);
  for (float& v : x) v = rng.uniform();
  std::vector<uint8_t> y(16);
  std::vector<uint64_t> keys(16);
  for (int i = 0; i < 16; ++i) {
    y[i] = uint8_t(i % 10);
    keys[i] = uint64_t(i);
  }
  for (int step = 0; step < 5; ++step) {
    model.forward_backward(x.data(), y.data(), 16, stream_key({seed, uint64_t(step)}), keys.data(),
                           1.0f / 16);
    model.rmsprop_step({});
  }
  return detail::fnv1a64(model.params().data(), model.params().size() * sizeof(float));
}

TEST(Determinism, SameSeedSameBits) {
  EXPECT_EQ(train_steps(1), train_steps(1));
  EXPECT_NE(train_steps(1), train_steps(2));
}

TEST(Determinism, DropoutMaskFollowsTheSample) {
  const int width = 50;
  std::vector<float> a(2 * width, 1.0f), b(2 * width, 1.0f), ma(a.size()), mb(b.size());
  const uint64_t keys_ab[] = {7, 8}, keys_ba[] = {8, 7};
  dropout_forward(a.data(), 2, width, 0.3f, 5, keys_ab, ma.data());
  dropout_forward(b.data(), 2, width, 0.3f, 5, keys_ba, mb.data());
  EXPECT_EQ(0, std::memcmp(ma.data(), mb.data() + width, width * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(ma.data() + width, mb.data(), width * sizeof(float)));
}

}  // namespace
}  // namespace train
}  // namespace octet
