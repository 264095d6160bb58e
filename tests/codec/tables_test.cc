// Code tables: sizes, order, symmetry, and the bucket lookup against a brute-force nearest level.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codec/tables.h"
#include "octet/codec.h"

namespace octet {
namespace {

using detail::QuantTable;

class TablesTest : public ::testing::TestWithParam<DataType> {};

TEST_P(TablesTest, MagnitudesAreStrictlyAscendingFromZeroToOne) {
  const std::vector<float> m = codec::type_magnitudes(GetParam(), 0);
  const size_t expect = GetParam() == DataType::kDynamicUnsigned ? 256
                        : GetParam() == DataType::kDynamic4      ? 9
                                                                 : 129;
  ASSERT_EQ(m.size(), expect);
  EXPECT_EQ(m.front(), 0.0f);
  EXPECT_EQ(m.back(), 1.0f);
  for (size_t i = 1; i < m.size(); ++i) EXPECT_LT(m[i - 1], m[i]) << "level " << i;
}

TEST_P(TablesTest, CodeValuesCoverEveryCodeAndAreSignSymmetric) {
  const DataType type = GetParam();
  const std::vector<float> v = code_values(type);
  const QuantTable& t = codec::quant_table(type);
  ASSERT_EQ(v.size(), size_t{1} << data_type_bits(type));
  if (!t.is_signed) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
    return;
  }
  EXPECT_EQ(v[t.spare_code], 1.0f) << "the '-0' code means +1";
  EXPECT_EQ(v[0], 0.0f);
  for (uint32_t c = 1; c < t.sign_code; ++c) {
    EXPECT_GT(v[c], 0.0f);
    EXPECT_EQ(v[c | t.sign_code], -v[c]) << "code " << c;
  }
  // Every value except 0 appears once: 2^bits distinct codes.
  std::vector<float> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

// Brute force: index of the nearest level to a, ties to the larger level (exact, in double).
uint32_t brute_nearest(const QuantTable& t, float a) {
  uint32_t best = 0;
  for (uint32_t k = 1; k <= t.top; ++k) {
    const double dk = std::fabs(double(a) - t.magnitude[k]);
    const double db = std::fabs(double(a) - t.magnitude[best]);
    if (dk <= db) best = k;
  }
  return best;
}

TEST_P(TablesTest, BucketLookupEqualsBruteForceNearest) {
  const QuantTable& t = codec::quant_table(GetParam());
  std::vector<float> probes;
  // Every level and midpoint, a few ulps either side: where a lookup would go wrong.
  for (uint32_t k = 0; k <= t.top; ++k) {
    float points[2] = {t.magnitude[k],
                       k < t.top ? float((double(t.magnitude[k]) + t.magnitude[k + 1]) / 2) : 1.0f};
    for (float p : points) {
      float lo = p, hi = p;
      for (int u = 0; u < 4; ++u) {
        probes.push_back(lo);
        probes.push_back(hi);
        lo = std::nextafter(lo, 0.0f);
        hi = std::nextafter(hi, 2.0f);
      }
    }
  }
  // Every bucket boundary.
  for (uint32_t b = 0; b < t.lut_size; ++b)
    probes.push_back(detail::bits_float(((t.lo_bits >> t.shift) + b) << t.shift));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  for (int i = 0; i < 200000; ++i) probes.push_back(uni(rng));
  for (int i = 0; i < 200000; ++i) probes.push_back(std::ldexp(uni(rng), -int(rng() % 30)));
  probes.push_back(0.0f);
  probes.push_back(1e-30f);
  probes.push_back(1.0f);
  for (float a : probes) {
    if (a > 1.0f || a < 0.0f) continue;
    ASSERT_EQ(detail::nearest_level(t, detail::float_bits(a)), brute_nearest(t, a)) << "a = " << a;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, TablesTest, ::testing::ValuesIn(all_data_types()),
                         [](const auto& info) { return std::string(data_type_name(info.param)); });

TEST(Tables, DynamicTreeIsTheBitsandbytesConstruction) {
  // create_dynamic_map(signed=True): rung i has 2^i linear fractions times 10^(i-6).
  const std::vector<float> m = codec::type_magnitudes(DataType::kDynamic, 0);
  EXPECT_FLOAT_EQ(m[1], 0.55e-6f);                // the only value of the smallest rung
  EXPECT_FLOAT_EQ(m[2], 0.325e-5f);               // rung 1: (0.1+0.55)/2 * 1e-5
  EXPECT_FLOAT_EQ(m[127], 1.0f - 0.9f / 128.0f);  // largest fraction of the top rung
  EXPECT_FLOAT_EQ(m[64], 0.1f + 0.9f / 128.0f);   // smallest fraction of the top rung
  const std::vector<float> m4 = codec::type_magnitudes(DataType::kDynamic4, 0);
  EXPECT_FLOAT_EQ(m4[1], 0.0055f);
  EXPECT_FLOAT_EQ(m4[7], 0.8875f);
}

TEST(Tables, TablesAreTheSameOnEveryMachine) {
  // FNV-1a over the bits of every type's code values. The tables are computed from exact formulas
  // in IEEE double; a different value here means a platform computes them differently.
  uint64_t h = 1469598103934665603ull;
  for (DataType type : all_data_types())
    for (float v : code_values(type)) {
      uint32_t u = detail::float_bits(v);
      for (int i = 0; i < 4; ++i) h = (h ^ ((u >> (8 * i)) & 0xff)) * 1099511628211ull;
    }
  EXPECT_EQ(h, 4946779561714401204ull) << h;
}

TEST(Tables, BoundFractionsAreSmallAndOrdered) {
  EXPECT_NEAR(bound_fraction(DataType::kDynamic), 0.9 / 128, 1e-6);
  // Negative values stop at 127/128: the "-0" code is +1.
  EXPECT_NEAR(bound_fraction(DataType::kLinear), 1.0 / 128, 1e-6);
  EXPECT_GT(bound_fraction(DataType::kDynamic4), bound_fraction(DataType::kDynamic));
}

}  // namespace
}  // namespace octet
