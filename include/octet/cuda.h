// The codec on a CUDA device: the same payload bytes as octet::encode and the same floats as
// octet::decode, with the input (encode) or output (decode) tensor in GPU memory.
//
// This header has no CUDA include, so CPU-only code can include it: streams are passed as void*
// (a cudaStream_t; nullptr is the legacy default stream). In a build without CUDA
// (OCTET_HAVE_CUDA == 0) or on a machine without a usable device, cuda_device_available() returns
// false and every other function throws octet::Error(kUnavailable).
//
// Errors follow the codec: octet::Error with kInvalidArgument / kCorruptPayload / ... for bad
// input (checked before anything is written), kUnavailable for a missing device or driver and
// kInternal for any other CUDA failure; the message carries the CUDA error string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "octet/codec.h"
#include "octet/export.h"

namespace octet {

// True when this build has CUDA and the runtime sees at least one device. Otherwise false, and
// *why (if given) says what is missing, e.g. "no CUDA device: CUDA driver version is
// insufficient for CUDA runtime version". Never throws.
OCTET_API bool cuda_device_available(std::string* why = nullptr);

// Encodes count fp32 values from device memory (any alignment) into out, which may be device
// memory or host memory (pageable or pinned); returns the payload bytes written. The payload is
// byte-identical to octet::encode(same values, options) — options.threads is ignored. Blocks
// until the payload is complete (it synchronises `stream`), because the payload's size depends on
// how many blocks hold NaN/Inf. Throws kInvalidArgument if out_capacity is too small
// (max_encoded_size() is always enough) or d_in is not device memory.
OCTET_API size_t encode_device(const float* d_in, size_t count, const CodecOptions& options,
                               uint8_t* out, size_t out_capacity, void* stream = nullptr);

// encode_device without a host round trip: everything is enqueued on `stream` and the call
// returns at once. d_out (device memory, any alignment) receives the payload and *d_size (device
// memory) its size in bytes, or 0 when the input is not single-signed for dynamic_unsigned (the
// error encode_device throws). The payload's bytes are encode_device's. out_capacity must be at
// least max_encoded_size(count, options), since how many blocks hold NaN/Inf is only known on
// the device. options.checksum is not supported here (kInvalidArgument). No allocation after the
// first call for a stream and size: a workspace is kept per device and stream, growing with the
// largest call, so after one call of the largest size (outside a capture) the call can be
// captured in a CUDA graph. Host threads may share a stream: a call enqueues its kernels under
// the workspace's lock, so calls on one stream run one after another, not interleaved.
OCTET_API void encode_device_async(const float* d_in, size_t count, const CodecOptions& options,
                                   uint8_t* d_out, size_t out_capacity, uint64_t* d_size,
                                   void* stream = nullptr);

// decode_device without a host round trip, for a payload received into device memory: the
// payload at d_payload (a buffer of `capacity` bytes) is checked on the device against what
// encoding `count` values with `expected` gives (the header, the body rules decode checks, the
// fit), then decoded into d_out (device memory, count floats) on `stream`. *d_status (device
// memory) receives 0 when the payload was valid and decoded, else the first broken rule (1: not
// the expected header or too large for the buffer, 2: a scale not finite, 3: bad NaN/Inf
// entries, 4: a non-zero 4-bit padding nibble), and then d_out is untouched. expected.checksum
// is not supported (kInvalidArgument). Allocates nothing after its first call on a stream (the
// workspace of encode_device_async), so it can then be captured in a CUDA graph.
OCTET_API void decode_device_async(const uint8_t* d_payload, size_t capacity,
                                   const CodecOptions& expected, float* d_out, size_t count,
                                   uint32_t* d_status, DecodeMode mode = DecodeMode::kOverwrite,
                                   void* stream = nullptr);

// Decodes a whole payload (device or host memory; length must equal its size) into d_out, device
// memory of count floats (any alignment). Validates the payload first, as octet::decode does: on
// error d_out is untouched. Finite results equal octet::decode's bit for bit; a NaN result is a NaN
// (its payload bits may differ from the CPU's). Blocks until d_out is written.
OCTET_API void decode_device(const uint8_t* payload, size_t length, float* d_out, size_t count,
                             DecodeMode mode = DecodeMode::kOverwrite, void* stream = nullptr);

}  // namespace octet
