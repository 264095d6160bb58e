// Names and properties of the data types.
#include <algorithm>
#include <string>

#include "codec/tables.h"
#include "octet/codec.h"

namespace octet {

const char* error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kCorruptPayload:
      return "corrupt payload";
    case ErrorCode::kTruncatedPayload:
      return "truncated payload";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kMismatch:
      return "mismatch across ranks";
    case ErrorCode::kTransport:
      return "transport error";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "unknown error";
}

namespace {
struct TypeName {
  DataType type;
  const char* name;
};
constexpr TypeName kNames[] = {
    {DataType::kDynamic, "dynamic"},
    {DataType::kLinear, "linear"},
    {DataType::kMantissa, "mantissa"},
    {DataType::kStaticTree, "static_tree"},
    {DataType::kDynamicUnsigned, "dynamic_unsigned"},
    {DataType::kDynamic4, "dynamic4"},
};
}  // namespace

DataType parse_data_type(std::string_view name) {
  std::string n(name);
  std::replace(n.begin(), n.end(), '-', '_');
  for (const auto& t : kNames)
    if (n == t.name) return t.type;
  throw Error(ErrorCode::kInvalidArgument,
              "unknown data type '" + std::string(name) +
                  "' (dynamic, linear, mantissa, static_tree, dynamic_unsigned, dynamic4)");
}

const char* data_type_name(DataType type) noexcept {
  for (const auto& t : kNames)
    if (t.type == type) return t.name;
  return "unknown";
}

const std::vector<DataType>& all_data_types() {
  static const std::vector<DataType> types = [] {
    std::vector<DataType> v;
    for (const auto& t : kNames) v.push_back(t.type);
    return v;
  }();
  return types;
}

int data_type_bits(DataType type) noexcept {
  return type == DataType::kDynamic4 ? 4 : 8;
}

uint32_t default_block_size(DataType type) noexcept {
  return data_type_bits(type) == 4 ? 128 : 2048;
}

double bound_fraction(DataType type, int offset) {
  const detail::QuantTable& t = codec::quant_table(type, offset);
  double bound = 0.0;
  for (uint32_t k = 0; k < t.top; ++k)
    bound = std::max(bound, (double(t.magnitude[k + 1]) - double(t.magnitude[k])) / 2.0);
  // Negative values cannot use the +1 code: their largest level is magnitude[top - 1].
  if (t.is_signed) bound = std::max(bound, 1.0 - double(t.magnitude[t.top - 1]));
  // fp32 rounding of x * (1/scale) and of value * scale: a few units in the last place.
  return bound + 4.0 / 16777216.0;
}

std::vector<float> code_values(DataType type, int offset) {
  const detail::QuantTable& t = codec::quant_table(type, offset);
  return std::vector<float>(t.value, t.value + (size_t{1} << t.bits));
}

}  // namespace octet
