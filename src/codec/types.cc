// Names and properties of the data types, and the rule for valid options.
#include <algorithm>
#include <string>

#include "codec/payload.h"
#include "codec/tables.h"
#include "octet/codec.h"
#include "octet/detail/quoted.h"

namespace octet {

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
              "unknown data type " + detail::quoted(name) +
                  " (dynamic, linear, mantissa, static_tree, dynamic_unsigned, dynamic4)");
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

uint32_t validate_options(const CodecOptions& o) {
  const int t = static_cast<int>(o.type);
  if (t < 1 || t > static_cast<int>(DataType::kDynamic4))
    throw Error(ErrorCode::kInvalidArgument, "unknown data type " + std::to_string(t));
  const uint32_t b = o.block_size == 0 ? default_block_size(o.type) : o.block_size;
  if (b < kMinBlockSize || b > kMaxBlockSize || (b & (b - 1)) != 0)
    throw Error(ErrorCode::kInvalidArgument,
                "block size " + std::to_string(b) + " must be a power of two in [64, 65536]");
  if (o.mantissa_exponent_offset < 0 || o.mantissa_exponent_offset > 8)
    throw Error(ErrorCode::kInvalidArgument, "mantissa exponent offset must be in 0..8");
  if (o.type != DataType::kMantissa && o.mantissa_exponent_offset != 0)
    throw Error(ErrorCode::kInvalidArgument,
                "an exponent offset applies to the mantissa type only");
  return b;
}

namespace {
size_t encoded_size_with(size_t count, const CodecOptions& o, bool every_block_special) {
  const uint32_t b = validate_options(o);
  if (count > codec::kMaxCount) throw Error(ErrorCode::kInvalidArgument, "count too large");
  const uint64_t blocks = every_block_special ? (count + b - 1) / b : 0;
  return codec::make_layout(count, b, data_type_bits(o.type), static_cast<uint32_t>(blocks),
                            o.checksum)
      .size;
}
}  // namespace

size_t encoded_size(size_t count, const CodecOptions& o) {
  return encoded_size_with(count, o, false);
}

size_t max_encoded_size(size_t count, const CodecOptions& o) {
  return encoded_size_with(count, o, true);
}

}  // namespace octet
