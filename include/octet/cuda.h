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

// Decodes a whole payload (device or host memory; length must equal its size) into d_out, device
// memory of count floats (any alignment). Validates the payload first, as octet::decode does: on
// error d_out is untouched. Finite results equal octet::decode's bit for bit; a NaN result is a NaN
// (its payload bits may differ from the CPU's). Blocks until d_out is written.
OCTET_API void decode_device(const uint8_t* payload, size_t length, float* d_out, size_t count,
                             DecodeMode mode = DecodeMode::kOverwrite, void* stream = nullptr);

}  // namespace octet
