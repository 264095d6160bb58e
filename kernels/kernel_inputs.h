// Host-side helpers that turn payloads and types into the kernels' arguments (codec_kernels.h),
// for the callers of the launchers: liboctet_cuda's host code, the kernel tests and benchmarks.
#pragma once

#include <array>
#include <cstdint>

#include "codec/payload.h"
#include "codec/tables.h"
#include "codec_kernels.h"
#include "octet/codec.h"

namespace octet {
namespace cuda_detail {

// The offsets of the parts of a payload with this header information (for writing one too: the
// encode kernel's scales and codes).
inline codec::Layout layout_of(const PayloadInfo& info) {
  return codec::make_layout(info.count, info.block_size, data_type_bits(info.type),
                            info.special_blocks, info.has_checksum);
}

// Where the scales, codes and special section of the payload at p (any memory: only the pointer
// arithmetic happens here) are.
inline Contribution contribution_of(const uint8_t* p, const PayloadInfo& info) {
  const codec::Layout l = layout_of(info);
  return {p + l.scales, p + l.codes, p + l.special, info.special_blocks};
}

// The host copy of a type's code table: what a device copy is made from, and table_bytes()'s
// argument.
inline const detail::QuantTable& host_table(DataType type, int mantissa_exponent_offset = 0) {
  return codec::quant_table(type, mantissa_exponent_offset);
}

static_assert(kHeaderBytes == codec::kHeaderSize, "the kernels' header size is the codec's");

// header_kernel's table: deltas[256 * j + v] is what byte j of the special count being v adds to
// the header's CRC (CRC32 is affine: crc(a ^ b) = crc(a) ^ crc(b) ^ crc(0) for equal lengths),
// from the codec's own crc32_of.
inline std::array<uint32_t, 1024> header_crc_deltas() {
  std::array<uint32_t, 1024> deltas{};
  const std::array<uint8_t, codec::kHeaderCrcAt> zeros{};
  const uint32_t zero = codec::crc32_of(zeros.data(), zeros.size());
  for (uint32_t j = 0; j < 4; ++j)
    for (uint32_t v = 0; v < 256; ++v) {
      // A fresh buffer each time: with one buffer whose byte was reset after each CRC, Debian's
      // GCC 12.2 at -O2 dropped that resetting store (its tree-DSE pass; -fno-tree-dse kept it),
      // and the delta of byte 13 being 0 came out non-zero.
      std::array<uint8_t, codec::kHeaderCrcAt> bytes{};
      bytes[codec::kHeaderSpecialsAt + j] = static_cast<uint8_t>(v);
      deltas[256 * j + v] = codec::crc32_of(bytes.data(), bytes.size()) ^ zero;
    }
  return deltas;
}

// FinishArgs for an encode planned by codec::plan_encode, except the device pointers (flags,
// list, specials, status, crc_delta, out, size), which the caller sets.
inline FinishArgs finish_args(const codec::EncodePlan& plan) {
  FinishArgs f{};
  codec::write_plan_header(f.header, plan, 0);
  f.specials_at = codec::kHeaderSpecialsAt;
  f.crc_at = codec::kHeaderCrcAt;
  f.blocks = plan.base.blocks;
  f.base_size = plan.base.size;
  f.entry_bytes = static_cast<uint32_t>(plan.base.special_entry);
  return f;
}

// ValidateArgs with the expected header `header` (no special block), for a payload of `count`
// elements whose layout with no special block is `base`, except the device pointers (payload,
// crc_delta, status, specials) and the capacity, which the caller sets.
inline ValidateArgs validate_args(const uint8_t (&header)[kHeaderBytes], const codec::Layout& base,
                                  uint32_t block, uint64_t count, int bits) {
  ValidateArgs v{};
  for (uint32_t i = 0; i < kHeaderBytes; ++i) v.header[i] = header[i];
  v.specials_at = codec::kHeaderSpecialsAt;
  v.crc_at = codec::kHeaderCrcAt;
  v.blocks = base.blocks;
  v.block = block;
  v.count = count;
  v.bits = bits;
  v.scales = base.scales;
  v.codes = base.codes;
  v.code_bytes = base.code_bytes;
  v.special = base.special;
  v.entry_bytes = static_cast<uint32_t>(base.special_entry);
  v.base_size = base.size;
  return v;
}

// ValidateArgs for a payload of `count` elements encoded with these options.
inline ValidateArgs validate_args(const codec::ResolvedOptions& options, uint64_t count) {
  const codec::EncodePlan plan{
      &options, count,
      codec::make_layout(count, options.block, options.bits, 0, options.options.checksum)};
  uint8_t header[kHeaderBytes];
  codec::write_plan_header(header, plan, 0);
  return validate_args(header, plan.base, options.block, count, options.bits);
}

// ValidateArgs for a payload whose header the host has read and checked (info): its own header
// with no special block is the one expected, so the device checks the body alone.
inline ValidateArgs validate_args(const PayloadInfo& info) {
  PayloadInfo base_info = info;
  base_info.special_blocks = 0;
  uint8_t header[kHeaderBytes];
  codec::write_header(header, base_info);
  return validate_args(header, layout_of(base_info), info.block_size, info.count,
                       data_type_bits(info.type));
}

}  // namespace cuda_detail
}  // namespace octet
