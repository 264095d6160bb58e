// Host-side helpers that turn payloads and types into the kernels' arguments (codec_kernels.h),
// for the callers of the launchers: liboctet_cuda's host code, the kernel tests and benchmarks.
#pragma once

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

}  // namespace cuda_detail
}  // namespace octet
