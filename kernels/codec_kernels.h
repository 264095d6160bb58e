// Launchers of the device codec kernels (codec_kernels.cu), called by cuda_codec.cc. Every byte
// pointer may have any alignment; every pointer is device memory. The launchers only enqueue work
// on `stream` and return the launch status.
//
// tests/cuda/kernel_emulation_test.cc includes the kernels with OCTET_KERNEL_EMULATION defined
// and its own stand-ins for CUDA's types: then only the argument structs are declared here.
#pragma once

#ifndef OCTET_KERNEL_EMULATION
#include <cuda_runtime.h>
#endif

#include <cstddef>
#include <cstdint>

#include "octet/detail/quant_math.h"

namespace octet {
namespace cuda_detail {

// Per-block flags written by the encode kernel.
enum : uint8_t { kFlagNonFinite = 1, kFlagMixedSign = 2 };

// Bytes of a QuantTable that the kernels read: everything up to the used part of the lut.
inline uint32_t table_bytes(const detail::QuantTable& host_table) {
  return static_cast<uint32_t>(offsetof(detail::QuantTable, lut)) + 4 * host_table.lut_size;
}

struct EncodeArgs {
  const float* in;
  uint64_t count;
  uint32_t block;
  uint64_t blocks;
  const detail::QuantTable* table;  // device copy
  uint32_t table_bytes;             // table_bytes(host copy)
  bool stochastic;
  uint64_t seed;
  uint64_t index_offset;
  uint8_t* scales;  // 4 bytes per block
  uint8_t* codes;   // one byte per element, or one nibble for 4-bit types
  uint8_t* flags;   // one byte per block: kFlag*
  // Device, or null: the OR of every block's flags (the launcher zeroes it first), so that the
  // usual payload without NaN/Inf is known as such without reading a flag per block.
  uint32_t* summary;
  int bits;
  int sms;  // multiprocessors of the device: the grid fills them, then loops over codec blocks
  // Device, `gate_ranks` entries, or null: when this encodes a reduction's result, that
  // reduction's ReduceArgs::statuses (gate_me = its `me`): if another rank's is not kPayloadOk,
  // the reduction wrote nothing and the encode kernels write nothing either.
  const uint32_t* gate = nullptr;
  int gate_ranks = 0;
  int gate_me = 0;
};

// Writes the special section: entry s describes codec block list[s] (u32 index, then a 2-bit
// class per element). The encode kernel has already given every non-finite element code 0.
struct SpecialArgs {
  const float* in;
  uint64_t count;
  uint32_t block;
  const uint32_t* list;  // ascending block indices
  uint32_t specials;
  uint8_t* out;                 // the special section
  const uint32_t* specials_at;  // when not null, the count in device memory (replaces specials)
};

constexpr uint32_t kHeaderBytes = 32;  // codec::kHeaderSize (kernel_inputs.h checks it)

// The end of an encode without a host round trip: after the encode kernel, compact_kernel lists
// the blocks flagged non-finite (ascending) and counts them, special_kernel writes their entries
// (with SpecialArgs::specials_at = specials), and header_kernel writes the header for that count
// and the payload's size.
struct FinishArgs {
  const uint8_t* flags;     // per codec block, from the encode kernel
  const uint32_t* summary;  // device, or null: the encode kernel's EncodeArgs::summary
  uint64_t blocks;
  uint32_t* list;                // workspace of `blocks` entries
  uint32_t* specials;            // device: the count
  uint32_t* status;              // device: nonzero when a block mixed signs (dynamic_unsigned)
  const uint32_t* crc_delta;     // device, [4][256]: kernel_inputs.h's header_crc_deltas()
  uint8_t header[kHeaderBytes];  // the header with no special block (its CRC included)
  uint32_t specials_at;          // offsets in the header: the count, the CRC
  uint32_t crc_at;
  uint64_t base_size;    // the payload's size without special blocks
  uint32_t entry_bytes;  // bytes per special block
  uint8_t* out;          // the payload
  uint64_t* size;        // device: the payload's size, or 0 when a block mixed signs
};

struct DecodeArgs {
  const uint8_t* scales;
  const uint8_t* codes;
  const uint8_t* special;  // the special section (may be null when specials == 0)
  uint32_t specials;
  uint64_t count;
  uint32_t block;
  int bits;
  const detail::QuantTable* table;  // device copy (only value[] is read)
  float* out;
  bool accumulate;
  int sms;
  // For a payload checked on the device (validate_kernel), both device memory, else null: the
  // decode writes nothing unless *status is kPayloadOk, and *specials_at replaces `specials`.
  const uint32_t* status;
  const uint32_t* specials_at;
};
// Where one rank's message for the chunk being reduced keeps its scales, codes and special
// section (device memory, any alignment): the parts of a payload the reduction reads.
struct Contribution {
  const uint8_t* scales;
  const uint8_t* codes;
  const uint8_t* special;  // may be null when specials == 0
  uint32_t specials;
};

// The owner's reduction of one chunk, src/collectives/reduce_chunk.h's rule element by element:
// from -0, in rank order, + own[i] for r == me, else + rank r's decoded value (then + its NaN/Inf
// entry, as an accumulating decode adds it); with `average` (and ranks > 1), the sum / ranks, or,
// where the sum is not finite, sum_r (term_r / ranks) over the same terms. The result is fp32 in
// out: the allreduce re-encodes it with the encode kernel.
struct ReduceArgs {
  const Contribution* from;  // `ranks` entries (device memory); from[me] is not read
  const float* own;          // this rank's exact values
  int me;
  int ranks;
  bool average;
  uint64_t count;
  uint32_t block;
  int bits;
  const detail::QuantTable* table;  // device copy: every contribution has this type
  float* out;
  int sms;
  // Device, `ranks` entries (null: the payloads are known to be valid): validate_kernel's
  // verdicts on the contributions. If one is not kPayloadOk, the reduction (and the fused
  // kernel's encoding) writes nothing; the caller reports the error from the statuses.
  const uint32_t* statuses;
};

// A received payload checked on the device against what the receiver expects (the header it
// would write itself for this call, with any count of NaN/Inf blocks), by the body rules of
// quant_math.h that the host's validate_body applies too: no host round trip, and the kernels
// that follow read the status and the count instead of trusting the bytes.
enum PayloadStatus : uint32_t {
  kPayloadOk = 0,
  kPayloadBadHeader = 1,   // not the expected header (or its CRC), or too many special blocks
  kPayloadBadScale = 2,    // a scale is not finite
  kPayloadBadSpecial = 3,  // special entries not ascending, out of range, or past the tail
  kPayloadBadPadding = 4,  // 4-bit padding nibble not zero
};

struct ValidateArgs {
  const uint8_t* payload;
  uint64_t capacity;             // bytes the buffer holds: the payload must fit
  uint8_t header[kHeaderBytes];  // the expected header with no special block
  uint32_t specials_at, crc_at;  // offsets in the header: the count, the CRC
  const uint32_t* crc_delta;     // device, [4][256]: kernel_inputs.h's header_crc_deltas()
  uint64_t blocks;
  uint32_t block;
  uint64_t count;
  int bits;
  uint64_t scales, codes, code_bytes, special;  // the layout (independent of the count)
  uint32_t entry_bytes;
  uint64_t base_size;  // the size with no special block
  uint32_t* status;    // device: a PayloadStatus, the first rule broken in validate_body's order
  uint32_t* specials;  // device: the payload's count of special blocks if valid, else 0
};

#ifndef OCTET_KERNEL_EMULATION
cudaError_t launch_encode(const EncodeArgs& a, cudaStream_t stream);
cudaError_t launch_write_special(const SpecialArgs& a, cudaStream_t stream);
// compact_kernel, special_kernel (for up to f.blocks entries, the count read on the device) and
// header_kernel: a payload finished on the stream, its size in *f.size.
cudaError_t launch_finish(const FinishArgs& f, const SpecialArgs& s, cudaStream_t stream);
// Decodes every element, then applies the special section (same order as the CPU).
cudaError_t launch_decode(const DecodeArgs& a, cudaStream_t stream);
cudaError_t launch_reduce(const ReduceArgs& a, cudaStream_t stream);
// validate_body_kernel over the grid, then validate_kernel (one thread): writes *a.status (used
// as the body kernels' scratch word first) and *a.specials.
cudaError_t launch_validate(const ValidateArgs& a, cudaStream_t stream);
// The reduction and the encode kernel's work on its result: r.out receives the reduced values
// (the special section's writer reads them), e the scales, codes and flags of encoding them, and
// nothing is written when r.statuses rejects a contribution. e.in must be r.out, with the same
// count, block and bits (else cudaErrorInvalidValue). Codec blocks of a tile or less take
// reduce_kernel, then encode_tile_kernel gated by r.statuses; larger ones one fused kernel.
cudaError_t launch_reduce_encode(const ReduceArgs& r, const EncodeArgs& e, cudaStream_t stream);
#endif

}  // namespace cuda_detail
}  // namespace octet
