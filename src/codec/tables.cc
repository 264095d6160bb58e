#include "codec/tables.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>

namespace octet {
namespace codec {
double pow10_neg(int k) {
  double p = 1.0;
  for (int i = 0; i < k; ++i) p *= 10.0;
  return 1.0 / p;
}

namespace {

using detail::QuantTable;

// The dynamic exponent map of bitsandbytes' create_dynamic_map: for exponent rung i (0 = the
// smallest), 2^(i + extra) linear fractions, the means of linspace(0.1, 1, n + 1), times
// 10^(i - rungs + 1); plus 0 and 1. Computed in double, rounded once to float.
std::vector<float> dynamic_magnitudes(int rungs, int extra_fraction_bits) {
  std::vector<float> m{0.0f};
  for (int i = 0; i < rungs; ++i) {
    const int n = 1 << (i + extra_fraction_bits);
    const double decade = pow10_neg(rungs - 1 - i);
    for (int j = 0; j < n; ++j) {
      const double lo = 0.1 + 0.9 * j / n;
      const double hi = 0.1 + 0.9 * (j + 1) / n;
      m.push_back(static_cast<float>(decade * ((lo + hi) / 2.0)));
    }
  }
  m.push_back(1.0f);
  return m;
}

// Linear: k/128 for k = 0..127, then 1.
std::vector<float> linear_magnitudes() {
  std::vector<float> m;
  for (int k = 0; k < 128; ++k) m.push_back(static_cast<float>(k) / 128.0f);
  m.push_back(1.0f);
  return m;
}

// Paper 001's mantissa type on block-normalised data: 3 exponent bits e, 4 mantissa bits f,
// (1 + f/16) * 2^(e - 8 - offset); the smallest pattern is zero instead. Then 1.
std::vector<float> mantissa_magnitudes(int offset) {
  std::vector<float> m;
  for (int e = 0; e < 8; ++e)
    for (int f = 0; f < 16; ++f)
      m.push_back(std::ldexp(1.0f + static_cast<float>(f) / 16.0f, e - 8 - offset));
  m[0] = 0.0f;
  m.push_back(1.0f);
  return m;
}

// Paper 001's static tree: 3 fixed base-10 exponent bits e and a 4-level bisection tree over
// [0.1, 1] whose leaves are the midpoints 0.1 + 0.9 (2j + 1) / 32; 10^-e times that. The smallest
// pattern is zero instead. Then 1.
std::vector<float> static_tree_magnitudes() {
  std::vector<float> m;
  for (int e = 7; e >= 0; --e)
    for (int j = 0; j < 16; ++j)
      m.push_back(static_cast<float>(pow10_neg(e) * (0.1 + 0.9 * (2 * j + 1) / 32.0)));
  m[0] = 0.0f;
  m.push_back(1.0f);
  return m;
}

// Largest power of two strictly below x (x > 0 normal).
uint32_t power_of_two_below(uint32_t x_bits) {
  uint32_t p = x_bits & detail::kExpMask;
  if (p == x_bits) p -= 1u << 23;
  return p;
}

bool fill_buckets(QuantTable& t, const std::vector<uint32_t>& thresholds, uint32_t shift) {
  const uint32_t first = t.lo_bits >> shift;
  const uint32_t count = (detail::kOneBits >> shift) - first + 1;
  if (count > detail::kMaxLutEntries) return false;
  size_t below = 0;  // thresholds <= bucket start
  for (uint32_t b = 0; b < count; ++b) {
    const uint32_t start = (first + b) << shift;
    const uint32_t end = start + (1u << shift);
    while (below < thresholds.size() && thresholds[below] <= start) ++below;
    size_t inside = below;
    while (inside < thresholds.size() && thresholds[inside] < end) ++inside;
    if (inside - below > 1) return false;
    const uint32_t offset = inside > below ? thresholds[below] - start : (1u << shift);
    t.lut[b] = static_cast<uint32_t>(below) << detail::kThresholdBits | offset;
  }
  t.lut_size = count;
  t.shift = shift;
  return true;
}

void fill_values(QuantTable& t, const std::vector<float>& m) {
  const uint32_t codes = 1u << t.bits;
  for (uint32_t c = 0; c < codes; ++c) {
    if (!t.is_signed) {
      t.value[c] = m[c];
    } else if (c == t.spare_code) {
      t.value[c] = 1.0f;
    } else {
      const uint32_t level = c & (t.sign_code - 1);
      t.value[c] = (c & t.sign_code) ? -m[level] : m[level];
    }
    const uint32_t bits = detail::float_bits(t.value[c]);
    for (int k = 0; k < 4; ++k) t.value_bytes[k][c] = static_cast<uint8_t>(bits >> (8 * k));
  }
}

}  // namespace

uint32_t midpoint_threshold(float a, float b) {
  const double mid = (static_cast<double>(a) + static_cast<double>(b)) / 2.0;  // exact
  float f = static_cast<float>(mid);
  if (static_cast<double>(f) < mid) f = std::nextafter(f, 2.0f);
  return detail::float_bits(f);
}

QuantTable build_quant_table(const std::vector<float>& m, int bits, bool is_signed) {
  const size_t levels = m.size();
  const size_t expect = is_signed ? (size_t{1} << (bits - 1)) + 1 : (size_t{1} << bits);
  if ((bits != 8 && bits != 4) || levels != expect || m.front() != 0.0f || m.back() != 1.0f ||
      !std::is_sorted(m.begin(), m.end()) || std::adjacent_find(m.begin(), m.end()) != m.end())
    throw Error(ErrorCode::kInternal, "code table: magnitudes must be 0 < ... < 1, sized per type");
  QuantTable t{};
  t.bits = static_cast<uint32_t>(bits);
  t.is_signed = is_signed ? 1 : 0;
  t.top = static_cast<uint32_t>(levels - 1);
  t.sign_code = is_signed ? 1u << (bits - 1) : 0;
  t.spare_code = t.sign_code;
  std::copy(m.begin(), m.end(), t.magnitude);
  std::vector<uint32_t> thresholds;
  for (size_t k = 0; k + 1 < levels; ++k) thresholds.push_back(midpoint_threshold(m[k], m[k + 1]));
  t.lo_bits = power_of_two_below(thresholds.front());
  bool ok = false;
  for (uint32_t shift = 23; shift >= 8 && !ok; --shift) ok = fill_buckets(t, thresholds, shift);
  if (!ok) throw Error(ErrorCode::kInternal, "code table: levels too dense for a bucket table");
  fill_values(t, m);
  return t;
}

std::vector<float> type_magnitudes(DataType type, int offset) {
  switch (type) {
    case DataType::kDynamic:
      return dynamic_magnitudes(7, 0);
    case DataType::kLinear:
      return linear_magnitudes();
    case DataType::kMantissa:
      return mantissa_magnitudes(offset);
    case DataType::kStaticTree:
      return static_tree_magnitudes();
    case DataType::kDynamicUnsigned:
      return dynamic_magnitudes(7, 1);
    case DataType::kDynamic4:
      return dynamic_magnitudes(3, 0);
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown data type " + std::to_string(int(type)));
}

const QuantTable& quant_table(DataType type, int offset) {
  constexpr int kTypes = 7, kOffsets = 9;
  static std::array<std::unique_ptr<QuantTable>, kTypes * kOffsets> tables;
  static std::array<std::once_flag, kTypes * kOffsets> once;
  const int t = static_cast<int>(type);
  if (t < 1 || t >= kTypes) throw Error(ErrorCode::kInvalidArgument, "unknown data type");
  if (type != DataType::kMantissa) offset = 0;
  if (offset < 0 || offset >= kOffsets)
    throw Error(ErrorCode::kInvalidArgument, "mantissa exponent offset must be in 0..8");
  const int slot = t * kOffsets + offset;
  std::call_once(once[slot], [&] {
    const bool is_signed = type != DataType::kDynamicUnsigned;
    tables[slot] = std::make_unique<QuantTable>(
        build_quant_table(type_magnitudes(type, offset), data_type_bits(type), is_signed));
  });
  return *tables[slot];
}

}  // namespace codec
}  // namespace octet
