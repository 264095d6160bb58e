#include "codec/value_plan.h"

#include <cmath>

#include "codec/plan_cache.h"
#include "codec/tables.h"

namespace octet {
namespace codec {
namespace {

using detail::float_bits;

constexpr int kZeroSlot = 7;

int slot_of(uint32_t level) {
  return static_cast<int>(float_bits(static_cast<float>(2 * level + 1)) >> 23) & 7;
}

// hi + lo = c to about 2^-48 relative.
void split(double c, int s, ValuePlan& p) {
  p.hi[s] = static_cast<float>(c);
  p.lo[s] = static_cast<float>(c - static_cast<double>(p.hi[s]));
}

// tables.cc's dynamic tree with 7 rungs: rung i = slot i, K = 18 L + 9 - 16 * 2^i, constant
// 10^(i-6) / (20 * 2^i).
ValuePlan dynamic_tree() {
  ValuePlan p{};
  p.factor = 18.0f;
  for (int i = 0; i < 7; ++i) {
    const int n = 1 << i;
    p.offset[i] = static_cast<float>(9 - 16 * n);
    split(pow10_neg(6 - i) / (20.0 * n), i, p);
  }
  return p;
}

// Linear: K = L, constant 1/128 in every slot but the zero slot.
ValuePlan linear() {
  ValuePlan p{};
  p.factor = 1.0f;
  for (int s = 0; s < 8; ++s)
    if (s != kZeroSlot) split(1.0 / 128.0, s, p);
  return p;
}

bool reproduces(const ValuePlan& p, const detail::QuantTable& t) {
  for (uint32_t c = 0; c < 256; ++c)
    if (float_bits(plan_value(p, c)) != float_bits(t.value[c])) return false;
  return true;
}

ValuePlan build_value_plan(const detail::QuantTable& t) {
  if (t.bits != 8 || !t.is_signed || t.sign_code != 0x80 || t.spare_code != 0x80) return {};
  for (ValuePlan p : {dynamic_tree(), linear()}) {
    p.usable = true;
    if (reproduces(p, t)) return p;
  }
  return {};
}

}  // namespace

float plan_value(const ValuePlan& p, uint32_t code) {
  const uint32_t level = code & 0x7f;
  const int s = slot_of(level);
  const float k = std::fma(static_cast<float>(level), p.factor, p.offset[s]);
  float y = std::fma(k, p.hi[s], k * p.lo[s]);
  if (code == 0x80) y = -1.0f;
  return (code & 0x80) ? -y : y;
}

const ValuePlan& value_plan(const detail::QuantTable& t) {
  return cached_plan<ValuePlan, build_value_plan>(t);
}

}  // namespace codec
}  // namespace octet
