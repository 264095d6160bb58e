// The edges of the float range through the codec (docs/codec.md, "Special values"; the whole
// story for the collectives is docs/algorithms.md, "Edges of the float range"): signed zeros,
// blocks whose absmax is near FLT_MAX, tiny values next to a huge absmax, and every SIMD target
// against the scalar reference on such data.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>

#include <hwy/targets.h>

#include "codec/backend.h"
#include "codec/payload.h"
#include "codec/tables.h"
#include "octet/error_feedback.h"
#include "test_util.h"

namespace octet {
namespace {

using testing_util::first_bound_violation;
using testing_util::normal_data;
using testing_util::options_for;

constexpr float kInf = std::numeric_limits<float>::infinity();

uint32_t bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

bool is_negative_zero(float v) {
  return bits_of(v) == 0x80000000u;
}

// The stored scale of block b.
float scale_of(const std::vector<uint8_t>& payload, uint64_t b) {
  return codec::load_f32(payload.data() + 32 + 4 * b);
}

// Block 0: all -0. Block 1: -0 and NaN/+-Inf. Block 2: -0 and one +0. Block 3: -0 and nonzero
// values. Block 4: all +0.
std::vector<float> signed_zero_blocks(uint32_t block, bool non_negative) {
  std::vector<float> x(5 * block, -0.0f);
  x[block + 3] = std::numeric_limits<float>::quiet_NaN();
  x[block + 4] = kInf;
  x[block + 5] = -kInf;
  x[2 * block + 7] = 0.0f;
  for (uint32_t i = 3 * block; i < 4 * block; i += 2) x[i] = non_negative ? 0.5f * i : -0.25f * i;
  for (uint32_t i = 4 * block; i < 5 * block; ++i) x[i] = 0.0f;
  return x;
}

TEST(FloatEdges, ABlockOfNegativeZerosComesBackNegativeZero) {
  for (DataType type : all_data_types())
    for (uint32_t block : {64u, 2048u}) {
      SCOPED_TRACE(std::string(data_type_name(type)) + " block " + std::to_string(block));
      const std::vector<float> x = signed_zero_blocks(block, type == DataType::kDynamicUnsigned);
      const std::vector<uint8_t> p = encode(x, options_for(type, block));
      EXPECT_TRUE(is_negative_zero(scale_of(p, 0)));
      EXPECT_TRUE(is_negative_zero(scale_of(p, 1)));
      EXPECT_EQ(bits_of(scale_of(p, 2)), 0u);
      EXPECT_EQ(bits_of(scale_of(p, 4)), 0u);
      const std::vector<float> y = decode(p);
      for (uint32_t i = 0; i < block; ++i) ASSERT_TRUE(is_negative_zero(y[i])) << i;
      for (uint32_t i = block; i < 2 * block; ++i) {
        if (i == block + 3) {
          EXPECT_TRUE(std::isnan(y[i]));
        } else if (i == block + 4 || i == block + 5) {
          EXPECT_EQ(y[i], i == block + 4 ? kInf : -kInf);
        } else {
          ASSERT_TRUE(is_negative_zero(y[i])) << i;
        }
      }
      // A -0 that shares its block with a +0 or a nonzero value has no code of its own: +0.
      for (uint32_t i = 2 * block; i < 5 * block; ++i) {
        if (x[i] != 0.0f) continue;
        ASSERT_EQ(bits_of(y[i]), 0u) << i;
      }
      EXPECT_EQ(first_bound_violation(x, y, block, bound_fraction(type)), x.size());

      // Accumulating adds the decoded zeros as fp32 does: -0 + -0 = -0, +0 + -0 = +0.
      std::vector<float> acc(x.size(), -0.0f);
      for (uint32_t i = 0; i < block / 2; ++i) acc[i] = 0.0f;
      decode(p.data(), p.size(), acc.data(), acc.size(), DecodeMode::kAccumulate);
      for (uint32_t i = 0; i < block; ++i)
        ASSERT_EQ(bits_of(acc[i]), i < block / 2 ? 0u : 0x80000000u) << i;
    }
}

// The same data (and the huge blocks below) through every SIMD target against the scalar
// reference, encode and decode in both modes.
TEST(FloatEdges, EverySimdTargetAgreesWithTheScalarReference) {
  std::vector<float> x = signed_zero_blocks(64, false);
  std::vector<float> big = normal_data(6 * 64, 3, 5e37f);  // absmax mostly >= 2^126
  big[1] = FLT_MAX;
  big[64] = -FLT_MAX;
  x.insert(x.end(), big.begin(), big.end());
  x.resize(x.size() + 37, -0.0f);  // a tail block of -0 shorter than a vector
  std::set<std::string> seen;
  const uint64_t supported = static_cast<uint64_t>(hwy::SupportedTargets());
  for (DataType type : {DataType::kDynamic, DataType::kLinear, DataType::kDynamic4}) {
    const CodecOptions o = options_for(type, 64);
    codec::set_force_scalar(true);
    const std::vector<uint8_t> want = encode(x, o);
    std::vector<float> want_y(x.size(), -0.0f), want_acc(x.size(), -0.0f);
    decode(want.data(), want.size(), want_y.data(), x.size());
    decode(want.data(), want.size(), want_acc.data(), x.size(), DecodeMode::kAccumulate);
    codec::set_force_scalar(false);
    for (uint64_t bit = 1; bit != 0 && bit <= supported; bit <<= 1) {
      if (!(supported & bit)) continue;
      hwy::SetSupportedTargetsForTest(static_cast<int64_t>(bit));
      seen.insert(simd_target());
      SCOPED_TRACE(std::string(data_type_name(type)) + " " + simd_target());
      EXPECT_EQ(encode(x, o), want);
      std::vector<float> y(x.size(), 1.0f), acc(x.size(), -0.0f);
      decode(want.data(), want.size(), y.data(), x.size());
      decode(want.data(), want.size(), acc.data(), x.size(), DecodeMode::kAccumulate);
      for (size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(want_y[i])) continue;
        ASSERT_EQ(bits_of(y[i]), bits_of(want_y[i])) << i;
        ASSERT_EQ(bits_of(acc[i]), bits_of(want_acc[i])) << i;
      }
    }
    hwy::SetSupportedTargetsForTest(0);
  }
  EXPECT_FALSE(seen.empty());
}

// 1/absmax is denormal for |absmax| >= 2^126 (about 8.5e37): the codec rescales such blocks by
// 2^-32 first, so that they round exactly as the same block scaled down by a power of two does
// (round to nearest, ties away from zero, from a full-precision reciprocal). Probes sit at and
// around every midpoint between adjacent levels, where a less precise reciprocal picks the far
// level.
TEST(FloatEdges, BlocksNearFltMaxRoundLikeAnyOtherExponent) {
  for (DataType type : all_data_types()) {
    const std::vector<float> m = codec::type_magnitudes(type, 0);
    for (float absmax : {FLT_MAX, 3e38f, 1.7e38f, 8.6e37f, 0x1p126f}) {
      SCOPED_TRACE(std::string(data_type_name(type)) + " absmax " + std::to_string(absmax));
      std::vector<float> probes;
      for (size_t k = 0; k + 1 < m.size(); ++k) {
        const float mid = static_cast<float>(0.5 * (double(m[k]) + double(m[k + 1])));
        float lo = mid, hi = mid;
        probes.push_back(mid);
        for (int j = 0; j < 12; ++j) {
          lo = std::nextafter(lo, 0.0f);
          hi = std::nextafter(hi, 2.0f);
          probes.push_back(lo);
          probes.push_back(hi);
        }
      }
      // Blocks of 64: the absmax first, then 63 probes times the absmax (alternating signs for
      // signed types).
      std::vector<float> x, small;
      for (size_t i = 0; i < probes.size(); ++i) {
        if (x.size() % 64 == 0) x.push_back(absmax);
        const bool negative = type != DataType::kDynamicUnsigned && (i & 1);
        x.push_back((negative ? -1.0f : 1.0f) * probes[i] * absmax);
      }
      for (float v : x) small.push_back(std::ldexp(v, -100));  // exact: nothing gets denormal
      const CodecOptions o = options_for(type, 64);
      const std::vector<uint8_t> p = encode(x, o), q = encode(small, o);
      const codec::Layout l = codec::make_layout(x.size(), 64, data_type_bits(type), 0, false);
      ASSERT_EQ(p.size(), q.size());
      EXPECT_TRUE(std::equal(p.begin() + l.codes, p.end(), q.begin() + l.codes))
          << "codes differ from those of the same block scaled by 2^-100";
      const std::vector<float> y = decode(p);
      EXPECT_EQ(first_bound_violation(x, y, 64, bound_fraction(type)), x.size());
      for (float v : y) ASSERT_TRUE(std::isfinite(v));
      for (size_t b = 0; b < x.size(); b += 64) ASSERT_EQ(y[b], absmax);
    }
  }
}

// Finite values never become infinite, and a block extreme of either sign near FLT_MAX comes back
// exactly; values far below their block's absmax (denormals next to normal values included) come
// back 0, within the bound.
TEST(FloatEdges, FltMaxAndUnderflowInOneBlock) {
  for (DataType type : all_data_types()) {
    const bool non_negative = type == DataType::kDynamicUnsigned;
    std::vector<float> x(128, 0.0f);
    x[0] = non_negative ? FLT_MAX : -FLT_MAX;
    x[1] = non_negative ? 1e-30f : -1e-30f;
    x[2] = 1e-40f;  // denormal
    x[3] = non_negative ? 3.3e38f : -3.3e38f;
    x[64] = FLT_MAX;
    x[65] = non_negative ? FLT_MAX : -FLT_MAX;  // both signs of the extreme: -m is not exact
    x[66] = 1e-45f;
    const std::vector<float> y = decode(encode(x, options_for(type, 64)));
    SCOPED_TRACE(data_type_name(type));
    EXPECT_EQ(y[0], x[0]);
    EXPECT_EQ(y[64], FLT_MAX);
    EXPECT_EQ(bits_of(y[1]), 0u);
    EXPECT_EQ(bits_of(y[2]), 0u);
    EXPECT_EQ(bits_of(y[66]), 0u);
    for (float v : y) ASSERT_TRUE(std::isfinite(v));
    EXPECT_EQ(first_bound_violation(x, y, 64, bound_fraction(type)), x.size());
  }
}

// Error feedback adds the residual before encoding: next to FLT_MAX that sum may overflow, and
// is then sent as FLT_MAX, never as Inf; and a -0 input stays -0 from one call to the next.
TEST(FloatEdges, ErrorFeedbackKeepsFiniteInputsFiniteAndNegativeZeros) {
  ErrorFeedback ef;
  const CodecOptions o = options_for(DataType::kDynamic, 64);
  std::vector<float> x(128, 1.0f);
  for (size_t i = 64; i < 128; ++i) x[i] = -0.0f;
  x[0] = FLT_MAX;
  x[1] = 0.996f * FLT_MAX;   // rounds down to 0.99297 FLT_MAX: a positive residual
  x[2] = -0.996f * FLT_MAX;  // and a negative one
  x[3] = -FLT_MAX;
  std::vector<uint8_t> out(max_encoded_size(x.size(), o));
  std::vector<float> y(x.size());
  size_t n = ef.encode("k", x.data(), x.size(), o, out.data(), out.size());
  decode(out.data(), n, y.data(), y.size());
  ASSERT_GT(ef.residual("k")[1], 0.0f);
  ASSERT_LT(ef.residual("k")[2], 0.0f);
  for (size_t i = 64; i < 128; ++i) ASSERT_TRUE(is_negative_zero(y[i])) << i;
  x[1] = FLT_MAX;  // FLT_MAX + a positive residual: overflows in fp32
  x[2] = -FLT_MAX;
  for (int step = 0; step < 3; ++step) {
    n = ef.encode("k", x.data(), x.size(), o, out.data(), out.size());
    decode(out.data(), n, y.data(), y.size());
    EXPECT_EQ(y[1], FLT_MAX) << "step " << step;
    EXPECT_EQ(y[2], -0.992968738f * FLT_MAX) << "step " << step;  // the largest negative level
    for (float v : y) ASSERT_TRUE(std::isfinite(v)) << "step " << step;
    for (size_t i = 64; i < 128; ++i) ASSERT_TRUE(is_negative_zero(y[i])) << i;
  }
}

}  // namespace
}  // namespace octet
