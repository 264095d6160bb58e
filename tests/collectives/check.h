// Test helpers shared by the thread and MPI tests: deterministic inputs, the error bound of each
// operation derived from bound_fraction, and a hash for bit-identity across ranks.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "octet/codec.h"

namespace collcheck {

inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Rank r's input: values in [-1, 1) times a scale that changes every 1000 elements, so that
// blocks see different magnitudes.
inline std::vector<float> input(int rank, size_t n, uint64_t seed = 1) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t h = mix(seed * 0x100000001b3ull ^ (uint64_t(rank) << 48) ^ i);
    const double u = double(h >> 11) / double(uint64_t{1} << 53) * 2.0 - 1.0;
    const double scale = 1.0 + double(mix(seed ^ (i / 1000) ^ (uint64_t(rank) << 40)) % 100);
    x[i] = float(u * scale);
  }
  return x;
}

// max |x[k]| over |k - i| < block: a bound of the absmax of any block (of that size, wherever it
// starts) that contains element i.
inline std::vector<double> window_max(const std::vector<float>& x, size_t block) {
  const size_t n = x.size();
  std::vector<double> out(n, 0.0);
  std::deque<size_t> q;  // indices with decreasing |x|
  size_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t hi = std::min(n, i + block);  // window [i - block + 1, i + block - 1]
    for (; next < hi; ++next) {
      while (!q.empty() && std::fabs(x[q.back()]) <= std::fabs(x[next])) q.pop_back();
      q.push_back(next);
    }
    while (q.front() + block <= i) q.pop_front();
    out[i] = std::fabs(x[q.front()]);
  }
  return out;
}

// Per-element bound of a sum over ranks where each of `quantized` contributions (in ranks) was
// quantized once and, if `twice`, the sum once more: bf * sum_j M_j + bf * (1 + bf) * sum_j M_j
// (the reduced block's absmax is at most (1 + bf) sum_j M_j), plus fp32 rounding of the sum.
inline std::vector<double> sum_bound(const std::vector<std::vector<float>>& inputs,
                                     const std::vector<bool>& quantized, bool twice, double bf,
                                     size_t block, double divide = 1.0) {
  const size_t n = inputs.empty() ? 0 : inputs[0].size();
  std::vector<double> q(n, 0.0), all(n, 0.0);
  for (size_t r = 0; r < inputs.size(); ++r) {
    const std::vector<double> m = window_max(inputs[r], block);
    for (size_t i = 0; i < n; ++i) {
      all[i] += m[i];
      if (quantized[r]) q[i] += m[i];
    }
  }
  std::vector<double> b(n);
  const double eps = 1e-6 * double(inputs.size() + 2);
  for (size_t i = 0; i < n; ++i)
    b[i] = (bf * q[i] + (twice ? bf * (1 + bf) * all[i] : 0.0) + eps * all[i]) / divide;
  return b;
}

inline std::vector<double> exact_sum(const std::vector<std::vector<float>>& inputs) {
  const size_t n = inputs.empty() ? 0 : inputs[0].size();
  std::vector<double> s(n, 0.0);
  for (const auto& x : inputs)
    for (size_t i = 0; i < n; ++i) s[i] += x[i];
  return s;
}

// Indices where |got - want| > bound (NaN counts as wrong).
inline size_t count_wrong(const float* got, const std::vector<double>& want,
                          const std::vector<double>& bound, size_t offset = 0) {
  size_t wrong = 0;
  for (size_t i = 0; i < bound.size(); ++i) {
    const double e = std::fabs(double(got[i]) - want[offset + i]);
    if (!(e <= bound[i])) ++wrong;
  }
  return wrong;
}

inline uint64_t hash_bytes(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

}  // namespace collcheck
