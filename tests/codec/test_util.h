// Helpers shared by the codec tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "octet/codec.h"

namespace octet {
namespace testing_util {

inline std::vector<float> normal_data(size_t n, uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> x(n);
  for (auto& v : x) v = d(rng);
  return x;
}

// Largest finite |x| of the block that holds element i.
inline float block_absmax(const std::vector<float>& x, size_t i, uint32_t block) {
  const size_t b0 = i / block * block, b1 = std::min(x.size(), b0 + block);
  float m = 0.0f;
  for (size_t j = b0; j < b1; ++j)
    if (std::isfinite(x[j])) m = std::max(m, std::fabs(x[j]));
  return m;
}

// Checks |x - y| <= bound * absmax(block) (+ one denormal ulp) for every finite element.
// Returns the index of the first violation, or x.size().
inline size_t first_bound_violation(const std::vector<float>& x, const std::vector<float>& y,
                                    uint32_t block, double fraction) {
  float absmax = 0.0f;
  for (size_t i = 0; i < x.size(); ++i) {
    if (i % block == 0) absmax = block_absmax(x, i, block);
    if (!std::isfinite(x[i])) continue;
    const double limit = fraction * absmax + 1.5e-45;
    if (std::fabs(double(x[i]) - double(y[i])) > limit) return i;
  }
  return x.size();
}

inline CodecOptions options_for(DataType type, uint32_t block = 0) {
  CodecOptions o;
  o.type = type;
  o.block_size = block;
  return o;
}

}  // namespace testing_util
}  // namespace octet
