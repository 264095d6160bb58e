// Code tables of every data type, built once per process from exact formulas (docs/codec.md).
#pragma once

#include <vector>

#include "octet/codec.h"
#include "octet/detail/quant_math.h"

namespace octet {
namespace codec {

// The magnitude levels of a type, ascending, [0] = 0 and back() = 1 (docs/codec.md).
std::vector<float> type_magnitudes(DataType type, int mantissa_exponent_offset);

// The table for a type; built on first use, then shared (thread-safe, never freed).
const detail::QuantTable& quant_table(DataType type, int mantissa_exponent_offset = 0);

// 10^-k (k >= 0) as the nearest double, computed the same way on every IEEE machine: the decades
// of the dynamic and static trees.
double pow10_neg(int k);

// Bits of the smallest float >= the exact midpoint of a and b: for a float x,
// x >= threshold <=> x is at least as near to b as to a (ties go to b).
uint32_t midpoint_threshold(float a, float b);

// Builds a table from ascending magnitudes (exposed for tests).
detail::QuantTable build_quant_table(const std::vector<float>& magnitudes, int bits,
                                     bool is_signed);

}  // namespace codec
}  // namespace octet
