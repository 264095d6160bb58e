// Stochastic rounding (unbiased, reproducible, chunk-independent) and error feedback.
#include <gtest/gtest.h>

#include <cmath>

#include "codec/backend.h"
#include "octet/error_feedback.h"
#include "test_util.h"

namespace octet {
namespace {

using testing_util::normal_data;

CodecOptions stochastic(DataType type, uint64_t seed) {
  CodecOptions o;
  o.type = type;
  o.block_size = 64;
  o.stochastic = true;
  o.seed = seed;
  return o;
}

TEST(Stochastic, IsUnbiased) {
  // One block: the extreme 1.0 fixes the scale; the other elements sit between levels.
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i == 0) ? 1.0f : -0.9f + 1.8f * float(i) / 64.0f;
  for (DataType type : {DataType::kDynamic, DataType::kLinear, DataType::kDynamic4}) {
    const int draws = 16000;
    std::vector<double> sum(x.size(), 0.0), nearest_err(x.size(), 0.0);
    for (int s = 0; s < draws; ++s) {
      const std::vector<float> y = decode(encode(x, stochastic(type, s)));
      for (size_t i = 0; i < x.size(); ++i) sum[i] += y[i];
    }
    CodecOptions rn = stochastic(type, 0);
    rn.stochastic = false;
    const std::vector<float> yn = decode(encode(x, rn));
    double worst_bias = 0, mean_nearest = 0;
    for (size_t i = 1; i < x.size(); ++i) {
      worst_bias = std::max(worst_bias, std::fabs(sum[i] / draws - x[i]));
      mean_nearest += std::fabs(double(yn[i]) - x[i]) / double(x.size() - 1);
    }
    // One draw's error has a standard deviation of at most gap / 2 <= bound: 5 sigma of the mean.
    const double tolerance = 5.0 * bound_fraction(type) / std::sqrt(double(draws));
    EXPECT_LT(worst_bias, tolerance) << data_type_name(type);
    EXPECT_GT(mean_nearest, 2 * tolerance) << "the test must be able to tell biased rounding";
  }
}

TEST(Stochastic, StaysWithinTwiceTheNearestBound) {
  const std::vector<float> x = normal_data(10000, 3);
  for (DataType type : all_data_types()) {
    std::vector<float> in = x;
    if (type == DataType::kDynamicUnsigned)
      for (auto& v : in) v = std::fabs(v);
    const std::vector<float> y = decode(encode(in, stochastic(type, 99)));
    EXPECT_EQ(testing_util::first_bound_violation(in, y, 64, 2 * bound_fraction(type)), in.size())
        << data_type_name(type);
  }
}

TEST(Stochastic, IsReproducibleAndIndependentOfChunking) {
  const std::vector<float> x = normal_data(1000, 4);
  const CodecOptions o = stochastic(DataType::kDynamic, 1234);
  EXPECT_EQ(encode(x, o), encode(x, o));
  CodecOptions other = o;
  other.seed = 1235;
  EXPECT_NE(encode(x, o), encode(x, other));
  // Encoding [0, 640) and [640, 1000) with index_offset gives the same decoded values.
  const std::vector<float> whole = decode(encode(x, o));
  std::vector<float> a(x.begin(), x.begin() + 640), b(x.begin() + 640, x.end());
  CodecOptions second = o;
  second.index_offset = 640;
  const std::vector<float> ya = decode(encode(a, o)), yb = decode(encode(b, second));
  for (size_t i = 0; i < 640; ++i) ASSERT_EQ(ya[i], whole[i]);
  for (size_t i = 640; i < x.size(); ++i) ASSERT_EQ(yb[i - 640], whole[i]);
}

TEST(Stochastic, ScalarAndSimdAgree) {
  const std::vector<float> x = normal_data(3001, 8);
  const CodecOptions o = stochastic(DataType::kDynamic, 5);
  octet::codec::set_force_scalar(true);
  const std::vector<uint8_t> a = encode(x, o);
  octet::codec::set_force_scalar(false);
  EXPECT_EQ(a, encode(x, o));
}

// A constant gradient, compressed every step: with error feedback the sum of what was sent tracks
// the sum of the true gradients to within one step's error; without it the error grows.
TEST(ErrorFeedback, BoundsTheAccumulatedError) {
  const std::vector<float> g = normal_data(4096, 6, 0.01f);
  CodecOptions o;
  o.type = DataType::kDynamic4;  // coarse, so the drift is visible
  ErrorFeedback ef;
  std::vector<uint8_t> buf(max_encoded_size(g.size(), o));
  std::vector<double> sent_ef(g.size(), 0.0), sent_plain(g.size(), 0.0);
  const int steps = 200;
  for (int s = 0; s < steps; ++s) {
    const size_t n = ef.encode("grad", g.data(), g.size(), o, buf.data(), buf.size());
    std::vector<float> y(g.size());
    decode(buf.data(), n, y.data(), y.size());
    const std::vector<float> yp = decode(encode(g, o));
    for (size_t i = 0; i < g.size(); ++i) {
      sent_ef[i] += y[i];
      sent_plain[i] += yp[i];
    }
  }
  double worst_ef = 0, worst_plain = 0, absmax = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    worst_ef = std::max(worst_ef, std::fabs(sent_ef[i] - steps * double(g[i])));
    worst_plain = std::max(worst_plain, std::fabs(sent_plain[i] - steps * double(g[i])));
    absmax = std::max(absmax, std::fabs(double(g[i])));
  }
  // The residual is at most one step's quantization error of (g + residual), whose absmax is
  // at most 2 absmax(g): the accumulated error stays below that, whatever the step count.
  EXPECT_LT(worst_ef, 2.0 * 2.0 * bound_fraction(o.type) * absmax);
  EXPECT_GT(worst_plain, 10 * worst_ef);
  EXPECT_EQ(ef.residual("grad").size(), g.size());
  ef.reset("grad");
  EXPECT_TRUE(ef.residual("grad").empty());
}

TEST(ErrorFeedback, NonFiniteInputsLeaveAZeroResidual) {
  std::vector<float> g = normal_data(128, 1);
  g[5] = std::numeric_limits<float>::infinity();
  ErrorFeedback ef;
  CodecOptions o;
  o.block_size = 64;
  std::vector<uint8_t> buf(max_encoded_size(g.size(), o));
  ef.encode("t", g.data(), g.size(), o, buf.data(), buf.size());
  const std::vector<float> r = ef.residual("t");
  for (float v : r) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(r[5], 0.0f);
}

}  // namespace
}  // namespace octet
