// The payload layout (docs/wire-format.md): header, scales, codes, special blocks, checksum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "octet/codec.h"

namespace octet {
namespace codec {

constexpr uint32_t kHeaderSize = 32;
constexpr uint32_t kHeaderSpecialsAt = 12;  // u32: blocks holding NaN/Inf
constexpr uint32_t kHeaderCrcAt = 28;       // u32: CRC32 of the header's first 28 bytes
constexpr uint8_t kVersion = 1;
constexpr uint8_t kFlagChecksum = 1;
constexpr uint8_t kFlagStochastic = 2;
constexpr uint64_t kMaxCount = uint64_t{1} << 48;

// Byte offsets and sizes of the payload's sections, derived from the header fields alone.
struct Layout {
  uint64_t blocks = 0;
  size_t scales = 0;  // offset of the scales (kHeaderSize)
  size_t codes = 0;   // offset of the codes
  size_t code_bytes = 0;
  size_t special = 0;        // offset of the special-block section
  size_t special_entry = 0;  // bytes per special block: u32 index + 2-bit class per element
  size_t checksum = 0;       // offset of the body CRC (if any)
  size_t size = 0;           // total
};

Layout make_layout(uint64_t count, uint32_t block_size, int bits, uint32_t special_blocks,
                   bool checksum);

void write_header(uint8_t* out, const PayloadInfo& info);
// Validates and parses the header; throws kTruncatedPayload / kCorruptPayload.
PayloadInfo read_header(const uint8_t* payload, size_t length);

// The checks of a parsed header against the caller's view: exactly `length` bytes
// (kCorruptPayload otherwise) holding `count` elements (kMismatch). Returns the layout.
Layout checked_layout(const PayloadInfo& info, size_t length, size_t count);

// The body checks decode runs before writing any output: body CRC (if flagged), finite scales,
// special section (ascending indices, no classes past a tail), 4-bit padding. Throws
// kCorruptPayload. p holds at least l.size bytes (read_header checked it).
void validate_body(const uint8_t* p, const PayloadInfo& info, const Layout& l);

uint32_t crc32_of(const uint8_t* data, size_t n);
// The body CRC of a payload (everything between the header and the checksum field).
uint32_t body_checksum(const uint8_t* payload, const Layout& l);

// CodecOptions checked once, with the block size resolved: what the codec's internal entry points,
// its backends and the collectives take, so that nothing is validated twice.
struct ResolvedOptions {
  CodecOptions options;  // options.block_size is the effective block size
  uint32_t block = 0;
  int bits = 8;
};
// Throws kInvalidArgument for inconsistent options (the rule of octet::validate_options).
ResolvedOptions resolve(const CodecOptions& options);

// The part of an encode that does not depend on where its bytes live, shared by the host and
// device backends: the argument checks, the layout before and after the blocks holding NaN/Inf
// are known, and the header.
struct EncodePlan {
  const ResolvedOptions* options;
  uint64_t count;
  Layout base;  // the layout without special blocks: where the scales and codes go
};
// Checks the arguments (null pointers, count, capacity for the NaN/Inf-free size).
EncodePlan plan_encode(const ResolvedOptions& options, const float* in, size_t count,
                       const uint8_t* out, size_t out_capacity);
// The final layout once `specials` blocks are known to hold NaN/Inf; throws if it does not fit.
Layout finish_layout(const EncodePlan& plan, uint32_t specials, size_t out_capacity);
// Writes the payload header (kHeaderSize bytes) for the plan.
void write_plan_header(uint8_t* out, const EncodePlan& plan, uint32_t specials);

// Little-endian field access at any alignment. Inline: the decoders read a block's scale through
// load_f32, and a call there would make them keep their table registers in memory.
inline void store_u32(uint8_t* p, uint32_t v) {
  std::memcpy(p, &v, 4);
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void store_f32(uint8_t* p, float v) {
  std::memcpy(p, &v, 4);
}
inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace codec
}  // namespace octet
