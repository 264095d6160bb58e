// The edges of the float range through the collectives (docs/algorithms.md, "Edges of the float
// range"): sums that overflow fp32, averages of values near FLT_MAX, signed zeros, sums near the
// overflow threshold, denormals and values far below their block's absmax. Every rank runs on a
// thread of the in-process transport; every case is run compressed and (where fp32 has an exact
// answer) uncompressed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "octet/collectives.h"
#include "thread_ranks.h"
#include "verify/verify.h"

namespace octet {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
// The smallest real number fp32 rounds to +Inf: FLT_MAX + half an ulp, 2^128 - 2^103.
const double kOverflow = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);

uint32_t bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

using Inputs = std::vector<std::vector<float>>;

// Runs fn(comm, in, out) on one thread per rank; returns every rank's output.
Inputs run_ranks(
    const Inputs& in,
    const std::function<void(Comm&, const std::vector<float>&, std::vector<float>&)>& fn) {
  const int p = static_cast<int>(in.size());
  Inputs out(p);
  const auto errors = test::run_on_threads(p, [&](Comm& c) { fn(c, in[c.rank()], out[c.rank()]); });
  for (int r = 0; r < p; ++r)
    if (errors[r]) std::rethrow_exception(errors[r]);
  return out;
}

CollectiveOptions options(bool compressed, bool average = false) {
  CollectiveOptions o;
  o.policy = Policy::kAlways;
  o.codec.block_size = 64;
  o.chunk_bytes = 4 * 256;
  o.min_bytes = compressed ? 0 : (size_t{1} << 40);
  o.average = average;
  return o;
}

Inputs allreduce_of(const Inputs& in, const CollectiveOptions& o) {
  return run_ranks(in, [&](Comm& c, const std::vector<float>& x, std::vector<float>& y) {
    y.assign(x.size(), 7.0f);
    allreduce(c, x.data(), y.data(), x.size(), o);
  });
}

// reduce_scatter of in (P * count elements per rank), every rank's result concatenated.
std::vector<float> reduce_scatter_of(const Inputs& in, const CollectiveOptions& o) {
  const size_t count = in[0].size() / in.size();
  const Inputs out =
      run_ranks(in, [&](Comm& c, const std::vector<float>& x, std::vector<float>& y) {
        y.assign(count, 7.0f);
        reduce_scatter(c, x.data(), y.data(), count, o);
      });
  std::vector<float> all;
  for (const auto& y : out) all.insert(all.end(), y.begin(), y.end());
  return all;
}

// Rank r's input: the usual test data, to which the cases write their edge values.
Inputs base_inputs(int p, size_t n) {
  Inputs in;
  for (int r = 0; r < p; ++r) in.push_back(verify::input(r, n, 4));
  return in;
}

// in with its NaN/Inf replaced by 0: the references' bounds come from the finite values, as the
// codec's block scales do.
Inputs finite_only(Inputs in) {
  for (auto& x : in)
    for (float& v : x)
      if (!std::isfinite(v)) v = 0.0f;
  return in;
}

void expect_bit_identical(const Inputs& out) {
  for (size_t r = 1; r < out.size(); ++r)
    EXPECT_EQ(0, std::memcmp(out[r].data(), out[0].data(), out[0].size() * sizeof(float)))
        << "rank " << r << " differs from rank 0";
}

// Elements of got outside want's bound, except at `skip`.
size_t wrong_except(const std::vector<float>& got, const verify::Reference& want,
                    const std::vector<size_t>& skip) {
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::find(skip.begin(), skip.end(), i) != skip.end()) continue;
    if (!(std::fabs(double(got[i]) - want.exact[i]) <= want.bound[i])) {
      ++wrong;
      ADD_FAILURE() << "element " << i << ": " << got[i] << " exact " << want.exact[i] << " bound "
                    << want.bound[i];
    }
  }
  return wrong;
}

// The owner's fp32 sum overflows: the result is +-Inf on every rank, as in fp32, and the other
// elements of the same blocks keep their bound.
TEST(CollectiveFloatEdges, SumThatOverflowsFp32IsInfiniteOnEveryRank) {
  for (int p : {2, 3})
    for (bool compressed : {true, false}) {
      SCOPED_TRACE("P=" + std::to_string(p) + (compressed ? " compressed" : " fp32"));
      const size_t n = 300;
      Inputs in = base_inputs(p, n);
      for (auto& x : in) {
        x[10] = 3e38f;
        x[11] = -3e38f;
        x[70] = FLT_MAX;
        x[71] = 2e38f;
        x[200] = -FLT_MAX;
      }
      const Inputs out = allreduce_of(in, options(compressed));
      expect_bit_identical(out);
      for (const auto& y : out) {
        EXPECT_EQ(y[10], kInf);
        EXPECT_EQ(y[11], -kInf);
        EXPECT_EQ(y[70], kInf);
        EXPECT_EQ(y[71], kInf);
        EXPECT_EQ(y[200], -kInf);
      }
      const auto want = verify::allreduce_reference(verify::source(in), p, n,
                                                    verify::quantization(options(compressed), n));
      EXPECT_EQ(wrong_except(out[0], want, {10, 11, 70, 71, 200}), 0u);

      std::vector<float> ys = reduce_scatter_of(in, options(compressed));
      EXPECT_EQ(ys[10], kInf);
      EXPECT_EQ(ys[11], -kInf);
    }
}

// With average, a sum that overflows is recomputed as sum_r (x_r / P): the average of finite
// values stays finite (fp32 sum-then-divide would give Inf), non-finite inputs still give Inf/NaN.
TEST(CollectiveFloatEdges, AverageOfFiniteValuesNearFltMaxStaysFinite) {
  for (int p : {2, 3, 4})
    for (bool compressed : {true, false}) {
      SCOPED_TRACE("P=" + std::to_string(p) + (compressed ? " compressed" : " fp32"));
      const size_t n = 64 * p;
      Inputs in = base_inputs(p, n);
      for (int r = 0; r < p; ++r) {
        auto& x = in[r];
        x[1] = 3e38f;
        x[2] = FLT_MAX;
        x[3] = -FLT_MAX;
        x[4] = r == 0 ? -3e38f : 3e38f;
        x[5] = r == p - 1 ? kInf : 3e38f;  // genuine infinity: stays
        x[6] = r == 1 ? kNaN : 3e38f;
        x[7] = r == 0 ? kInf : r == 1 ? -kInf : 1.0f;
        x[64] = 2e38f;  // the next block (another owner when P > 1)
      }
      const std::vector<size_t> special = {5, 6, 7};
      const Inputs finite = finite_only(in);
      const auto want = verify::allreduce_reference(
          verify::source(finite), p, n, verify::quantization(options(compressed), n), true);
      const Inputs out = allreduce_of(in, options(compressed, true));
      expect_bit_identical(out);
      const std::vector<float>& y = out[0];
      for (size_t i : {1, 2, 3, 4, 64}) EXPECT_TRUE(std::isfinite(y[i])) << i << ": " << y[i];
      EXPECT_EQ(y[5], kInf);
      EXPECT_TRUE(std::isnan(y[6]));
      EXPECT_TRUE(std::isnan(y[7]));
      EXPECT_EQ(wrong_except(y, want, special), 0u);

      std::vector<float> ys = reduce_scatter_of(in, options(compressed, true));
      const auto want_rs =
          verify::reduce_scatter_reference(verify::source(finite), p, 0, n / p,
                                           verify::quantization(options(compressed), n / p), true);
      for (size_t i : {1, 2, 3, 4}) EXPECT_TRUE(std::isfinite(ys[i])) << i << ": " << ys[i];
      EXPECT_EQ(ys[5], kInf);
      EXPECT_TRUE(std::isnan(ys[6]));
      EXPECT_TRUE(std::isnan(ys[7]));
      ys.resize(n / p);
      EXPECT_EQ(wrong_except(ys, want_rs, special), 0u);
    }
}

// Rank r's input: block 0 all -0; block 1 all -0 except on rank 1, where it is all +0; block 2
// the usual data with a -0 at element 130 on every rank.
Inputs signed_zero_inputs(int p) {
  Inputs in = base_inputs(p, 192);
  for (int r = 0; r < p; ++r) {
    for (size_t i = 0; i < 128; ++i) in[r][i] = (r == 1 && i >= 64) ? 0.0f : -0.0f;
    in[r][130] = -0.0f;
  }
  return in;
}

// The sign bits of a sum of signed_zero_inputs over its first 128 elements.
uint32_t zero_sum_bits(size_t i) {
  return i < 64 ? 0x80000000u : 0u;
}

// IEEE: -0 + -0 = -0 and -0 + +0 = +0. The owner's sum starts from -0 (the additive identity) and
// a block of -0 is encoded with the scale -0, so a sum of -0 is -0 on every rank.
TEST(CollectiveFloatEdges, SumOfNegativeZerosIsNegativeZero) {
  for (int p : {2, 3})
    for (bool average : {false, true})
      for (bool compressed : {true, false}) {
        SCOPED_TRACE("P=" + std::to_string(p) + (compressed ? " compressed" : " fp32") +
                     (average ? " average" : ""));
        const Inputs in = signed_zero_inputs(p);
        const Inputs out = allreduce_of(in, options(compressed, average));
        expect_bit_identical(out);
        for (const auto& y : out) {
          for (size_t i = 0; i < 128; ++i) ASSERT_EQ(bits_of(y[i]), zero_sum_bits(i)) << i;
          // A -0 in a block with nonzero values has no code: +0 (fp32 would keep -0).
          EXPECT_EQ(bits_of(y[130]), compressed ? 0u : 0x80000000u);
        }
        Inputs rs = in;
        for (auto& x : rs) x.resize(64 * p, -0.0f);
        const std::vector<float> ys = reduce_scatter_of(rs, options(compressed, average));
        for (size_t i = 0; i < 128; ++i) ASSERT_EQ(bits_of(ys[i]), zero_sum_bits(i)) << i;
      }
}

TEST(CollectiveFloatEdges, AllgatherAndBroadcastKeepABlockOfNegativeZeros) {
  const int p = 3;
  const Inputs in = signed_zero_inputs(p);
  const size_t n = in[0].size();
  for (bool compressed : {true, false}) {
    const Inputs gathered =
        run_ranks(in, [&](Comm& c, const std::vector<float>& x, std::vector<float>& y) {
          y.assign(n * p, 7.0f);
          allgather(c, x.data(), y.data(), n, options(compressed));
        });
    expect_bit_identical(gathered);
    for (int r = 0; r < p; ++r)
      for (size_t i = 0; i < 128; ++i)
        ASSERT_EQ(bits_of(gathered[0][r * n + i]), (r == 1 && i >= 64) ? 0u : 0x80000000u)
            << "rank " << r << " element " << i;
    const Inputs broadcast_out =
        run_ranks(in, [&](Comm& c, const std::vector<float>& x, std::vector<float>& y) {
          y = c.rank() == 0 ? x : std::vector<float>(n, 7.0f);
          broadcast(c, y.data(), n, 0, options(compressed));
        });
    expect_bit_identical(broadcast_out);
    for (size_t i = 0; i < 128; ++i) ASSERT_EQ(bits_of(broadcast_out[1][i]), 0x80000000u) << i;
  }
}

// An exact sum S within the bound B of the overflow threshold can come back either way: a finite
// result is within B of S (so its magnitude is at least threshold - B), and |S| >= threshold + B
// always gives +-Inf with the sign of S.
TEST(CollectiveFloatEdges, SumsNearTheOverflowThresholdAreInfiniteOrWithinTheBound) {
  const int p = 3;
  const size_t n = 4096;
  Inputs in(p, std::vector<float>(n));
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> magnitude(1.0e38, 3.4e38);
  for (auto& x : in)
    for (auto& v : x) v = static_cast<float>((rng() & 1 ? -1 : 1) * magnitude(rng));
  const CollectiveOptions o = options(true);
  const Inputs out = allreduce_of(in, o);
  expect_bit_identical(out);
  const auto want =
      verify::allreduce_reference(verify::source(in), p, n, verify::quantization(o, n));
  size_t finite_beyond = 0, infinite = 0;
  for (size_t i = 0; i < n; ++i) {
    const double s = want.exact[i], b = want.bound[i];
    const float y = out[0][i];
    if (std::isfinite(y)) {
      ASSERT_LE(std::fabs(double(y) - s), b) << i;
      if (std::fabs(s) >= kOverflow) ++finite_beyond;  // fp32 of S is Inf: inside the band
    } else {
      ++infinite;
      ASSERT_TRUE(std::isinf(y)) << i;
    }
    if (std::fabs(s) >= kOverflow + b) {
      ASSERT_EQ(y, s > 0 ? kInf : -kInf) << i;
    }
  }
  EXPECT_GT(infinite, 0u);
  RecordProperty("finite_where_fp32_of_the_exact_sum_is_inf", static_cast<int>(finite_beyond));
}

// Values far below their block's absmax (denormals among them) come back 0, within the bound;
// blocks of denormals on every rank keep their relative bound (plus a denormal ulp per rounding).
TEST(CollectiveFloatEdges, DenormalsAndTinyValuesNextToHugeOnes) {
  const int p = 2;
  const size_t n = 192;
  Inputs in = base_inputs(p, n);
  for (int r = 0; r < p; ++r) {
    in[r][0] = 1e30f;
    in[r][1] = 1e-30f;
    in[r][2] = 1e-40f;
    for (size_t i = 64; i < 128; ++i) in[r][i] *= 1e-41f;  // a block of denormals
    in[r][128] = FLT_MAX;                                  // the extreme of its block
    in[r][129] = r == 0 ? -FLT_MAX : FLT_MAX;
  }
  const CollectiveOptions o = options(true);
  const Inputs out = allreduce_of(in, o);
  expect_bit_identical(out);
  const std::vector<float>& y = out[0];
  EXPECT_EQ(bits_of(y[1]), 0u);
  EXPECT_EQ(bits_of(y[2]), 0u);
  EXPECT_EQ(y[128], kInf);
  const auto want =
      verify::allreduce_reference(verify::source(in), p, n, verify::quantization(o, n));
  for (size_t i = 0; i < n; ++i) {
    if (i == 128) continue;
    EXPECT_LE(std::fabs(double(y[i]) - want.exact[i]), want.bound[i] + 3 * 1.5e-45) << i;
  }
}

}  // namespace
}  // namespace octet
