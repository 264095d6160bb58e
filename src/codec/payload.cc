#include "codec/payload.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "codec/backend.h"
#include "octet/detail/quant_math.h"

namespace octet {
namespace codec {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the wire format is little-endian");

constexpr uint8_t kMagic[4] = {'O', 'C', 'T', '8'};

void store_u64(uint8_t* p, uint64_t v) {
  std::memcpy(p, &v, 8);
}
uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

[[noreturn]] void corrupt(const std::string& what) {
  throw Error(ErrorCode::kCorruptPayload, "corrupt payload: " + what);
}

bool known_type(uint8_t t) {
  return t >= static_cast<uint8_t>(DataType::kDynamic) &&
         t <= static_cast<uint8_t>(DataType::kDynamic4);
}

}  // namespace

uint32_t crc32_of(const uint8_t* data, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {  // zlib takes uInt lengths
    const uInt step = n > (1u << 30) ? (1u << 30) : static_cast<uInt>(n);
    crc = crc32(crc, data, step);
    data += step;
    n -= step;
  }
  return static_cast<uint32_t>(crc);
}

uint32_t body_checksum(const uint8_t* payload, const Layout& l) {
  return crc32_of(payload + kHeaderSize, l.checksum - kHeaderSize);
}

ResolvedOptions resolve(const CodecOptions& options) {
  ResolvedOptions r;
  r.block = validate_options(options);
  r.options = options;
  r.options.block_size = r.block;
  r.bits = data_type_bits(options.type);
  return r;
}

EncodePlan plan_encode(const ResolvedOptions& o, const float* in, size_t count, const uint8_t* out,
                       size_t out_capacity) {
  if (count > kMaxCount) throw Error(ErrorCode::kInvalidArgument, "count too large");
  if (in == nullptr && count > 0) throw Error(ErrorCode::kInvalidArgument, "input is null");
  if (out == nullptr) throw Error(ErrorCode::kInvalidArgument, "output is null");
  const EncodePlan plan{&o, count, make_layout(count, o.block, o.bits, 0, o.options.checksum)};
  if (out_capacity < plan.base.size)
    throw Error(ErrorCode::kInvalidArgument,
                "output buffer too small: " + std::to_string(out_capacity) + " < " +
                    std::to_string(plan.base.size) + " bytes");
  return plan;
}

Layout finish_layout(const EncodePlan& plan, uint32_t specials, size_t out_capacity) {
  const ResolvedOptions& o = *plan.options;
  const Layout l = make_layout(plan.count, o.block, o.bits, specials, o.options.checksum);
  if (out_capacity < l.size)
    throw Error(ErrorCode::kInvalidArgument,
                "output buffer too small for the NaN/Inf positions: need " +
                    std::to_string(l.size) + " bytes (max_encoded_size gives a safe bound)");
  return l;
}

void write_plan_header(uint8_t* out, const EncodePlan& plan, uint32_t specials) {
  const CodecOptions& o = plan.options->options;
  PayloadInfo info;
  info.type = o.type;
  info.block_size = plan.options->block;
  info.count = plan.count;
  info.special_blocks = specials;
  info.has_checksum = o.checksum;
  info.stochastic = o.stochastic;
  info.mantissa_exponent_offset = o.mantissa_exponent_offset;
  write_header(out, info);
}

Layout make_layout(uint64_t count, uint32_t block_size, int bits, uint32_t special_blocks,
                   bool checksum) {
  Layout l;
  l.blocks = (count + block_size - 1) / block_size;
  l.scales = kHeaderSize;
  l.codes = l.scales + 4 * l.blocks;
  l.code_bytes = (count * static_cast<uint64_t>(bits) + 7) / 8;
  l.special = l.codes + l.code_bytes;
  l.special_entry = 4 + block_size / 4;
  l.checksum = l.special + special_blocks * l.special_entry;
  l.size = l.checksum + (checksum ? 4 : 0);
  return l;
}

void write_header(uint8_t* out, const PayloadInfo& info) {
  std::memset(out, 0, kHeaderSize);
  std::memcpy(out, kMagic, 4);
  out[4] = kVersion;
  out[5] = static_cast<uint8_t>(info.type);
  out[6] = static_cast<uint8_t>((info.has_checksum ? kFlagChecksum : 0) |
                                (info.stochastic ? kFlagStochastic : 0));
  out[7] = static_cast<uint8_t>(info.mantissa_exponent_offset);
  store_u32(out + 8, info.block_size);
  store_u32(out + kHeaderSpecialsAt, info.special_blocks);
  store_u64(out + 16, info.count);
  store_u32(out + kHeaderCrcAt, crc32_of(out, kHeaderCrcAt));
}

PayloadInfo read_header(const uint8_t* p, size_t length) {
  if (p == nullptr && length > 0)
    throw Error(ErrorCode::kInvalidArgument, "payload pointer is null");
  if (length < kHeaderSize)
    throw Error(ErrorCode::kTruncatedPayload, "truncated payload: " + std::to_string(length) +
                                                  " bytes, the header alone needs 32");
  if (std::memcmp(p, kMagic, 4) != 0) corrupt("bad magic (not an Octet payload)");
  if (p[4] != kVersion) corrupt("unsupported version " + std::to_string(p[4]));
  if (load_u32(p + kHeaderCrcAt) != crc32_of(p, kHeaderCrcAt)) corrupt("header checksum mismatch");
  if (!known_type(p[5])) corrupt("unknown data type " + std::to_string(p[5]));
  if ((p[6] & ~(kFlagChecksum | kFlagStochastic)) != 0) corrupt("unknown flags");
  if (load_u32(p + 24) != 0) corrupt("reserved field is not zero");
  PayloadInfo info;
  info.type = static_cast<DataType>(p[5]);
  info.has_checksum = (p[6] & kFlagChecksum) != 0;
  info.stochastic = (p[6] & kFlagStochastic) != 0;
  info.mantissa_exponent_offset = p[7];
  info.block_size = load_u32(p + 8);
  info.special_blocks = load_u32(p + kHeaderSpecialsAt);
  info.count = load_u64(p + 16);
  const uint32_t b = info.block_size;
  if (b < kMinBlockSize || b > kMaxBlockSize || (b & (b - 1)) != 0)
    corrupt("block size " + std::to_string(b) + " is not a power of two in [64, 65536]");
  if (info.mantissa_exponent_offset > 8 ||
      (info.type != DataType::kMantissa && info.mantissa_exponent_offset != 0))
    corrupt("bad exponent offset");
  if (info.count > kMaxCount) corrupt("element count too large");
  const Layout l = make_layout(info.count, b, data_type_bits(info.type), 0, false);
  if (info.special_blocks > l.blocks) corrupt("more special blocks than blocks");
  info.size =
      make_layout(info.count, b, data_type_bits(info.type), info.special_blocks, info.has_checksum)
          .size;
  if (length < info.size)
    throw Error(ErrorCode::kTruncatedPayload, "truncated payload: " + std::to_string(length) +
                                                  " bytes, header says " +
                                                  std::to_string(info.size));
  return info;
}

Layout checked_layout(const PayloadInfo& info, size_t length, size_t count) {
  if (length != info.size)
    throw Error(ErrorCode::kCorruptPayload, "payload has " + std::to_string(length) +
                                                " bytes, its header says " +
                                                std::to_string(info.size));
  if (count != info.count)
    throw Error(ErrorCode::kMismatch, "payload holds " + std::to_string(info.count) +
                                          " elements, the caller expects " + std::to_string(count));
  return make_layout(info.count, info.block_size, data_type_bits(info.type), info.special_blocks,
                     info.has_checksum);
}

void validate_body(const uint8_t* p, const PayloadInfo& info, const Layout& l) {
  if (info.has_checksum && load_u32(p + l.checksum) != body_checksum(p, l))
    throw Error(ErrorCode::kCorruptPayload, "corrupt payload: body checksum mismatch");
  for (uint64_t b = 0; b < l.blocks; ++b)
    if (!std::isfinite(load_f32(p + l.scales + 4 * b)))
      throw Error(ErrorCode::kCorruptPayload,
                  "corrupt payload: scale of block " + std::to_string(b) + " is not finite");
  int64_t previous = -1;
  for (uint32_t s = 0; s < info.special_blocks; ++s) {
    const uint8_t* entry = p + l.special + s * l.special_entry;
    const uint32_t b = load_u32(entry);
    if (!detail::special_index_is_valid(b, previous, l.blocks))
      throw Error(ErrorCode::kCorruptPayload, "corrupt payload: bad special block index");
    previous = b;
    if (!detail::special_tail_is_valid(entry + 4, b, info.block_size, info.count))
      throw Error(ErrorCode::kCorruptPayload, "corrupt payload: class past the tail block");
  }
  if (l.code_bytes > 0 && !detail::padding_is_valid(data_type_bits(info.type), info.count,
                                                    p[l.codes + l.code_bytes - 1]))
    throw Error(ErrorCode::kCorruptPayload, "corrupt payload: padding nibble is not zero");
}

// Here, with the payload assembly both backends link, so that the interface's one default has
// one definition.
void CodecBackend::encode_async(const ResolvedOptions&, const float*, size_t, uint8_t*, size_t,
                                uint64_t*, void*) const {
  throw Error(ErrorCode::kUnavailable,
              std::string("the ") + name() + " codec backend has no asynchronous encode");
}

void CodecBackend::decode_async(const ResolvedOptions&, const uint8_t*, size_t, float*, size_t,
                                DecodeMode, uint32_t*, void*) const {
  throw Error(ErrorCode::kUnavailable,
              std::string("the ") + name() + " codec backend has no asynchronous decode");
}

}  // namespace codec
}  // namespace octet
