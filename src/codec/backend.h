// Where the codec runs: a backend encodes and decodes whole payloads on its own memory. The host
// backend (codec.cc) works on CPU memory with SIMD and threads; the device backend lives in
// liboctet_cuda.so (kernels/) and is loaded on first use, so that liboctet and everything that
// preloads it load and work where CUDA is not installed. Both take ResolvedOptions and share the
// payload assembly of payload.h; the collectives encode and decode their chunks through this
// interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "codec/payload.h"

namespace octet {
namespace codec {

class CodecBackend {
 public:
  virtual ~CodecBackend() = default;
  virtual const char* name() const = 0;
  // True when the backend can run here; otherwise false and *why says what is missing.
  virtual bool available(std::string* why) const = 0;
  // Encodes count values at `in` into out (out_capacity bytes); returns the payload size.
  // `stream`: the device backend's CUDA stream (nullptr: the default stream); `threads`: the
  // host backend's worker threads (0: automatic, 1: the calling thread).
  virtual size_t encode(const ResolvedOptions& options, const float* in, size_t count, uint8_t* out,
                        size_t out_capacity, void* stream) const = 0;
  // encode without a host round trip (octet/cuda.h, encode_device_async): the payload at out, its
  // size (or 0 for mixed signs in dynamic_unsigned) at *size, both in the backend's memory.
  // Only the device backend has it; the default throws kUnavailable.
  virtual void encode_async(const ResolvedOptions& options, const float* in, size_t count,
                            uint8_t* out, size_t out_capacity, uint64_t* size, void* stream) const;
  // decode without a host round trip (octet/cuda.h, decode_device_async): the payload checked
  // on the backend against `options` and count, the verdict at *status. Only the device backend
  // has it; the default throws kUnavailable.
  virtual void decode_async(const ResolvedOptions& options, const uint8_t* payload, size_t capacity,
                            float* out, size_t count, DecodeMode mode, uint32_t* status,
                            void* stream) const;
  // Decodes a whole payload into out[0, count); validates everything before writing.
  virtual void decode(const uint8_t* payload, size_t length, float* out, size_t count,
                      DecodeMode mode, int threads, void* stream) const = 0;
};

const CodecBackend& host_backend();
// The device backend, loaded from liboctet_cuda.so on first use; throws kUnavailable with the
// reason when there is none (no CUDA in this build, library not found, no device).
const CodecBackend& device_backend();

// The host backend's work, without the virtual call.
size_t encode_host(const ResolvedOptions& options, const float* in, size_t count, uint8_t* out,
                   size_t out_capacity);
void decode_host(const uint8_t* payload, size_t length, float* out, size_t count, DecodeMode mode,
                 int threads);

// Output size (bytes) from which decode_host's overwriting decodes write around the caches
// (BlockKernels::decode_stream).
uint64_t streaming_decode_bytes();

// Forces the scalar reference path instead of SIMD (tests and benchmarks compare the two);
// returns the previous setting.
bool set_force_scalar(bool force);

// The name of liboctet_cuda's entry point, and the ABI version both sides must agree on (the
// device library is built with liboctet from the same sources).
constexpr const char* kDeviceEntryPoint = "octet_cuda_backend_v1";
using DeviceEntryPoint = const CodecBackend* (*)(const char* liboctet_version);

}  // namespace codec
}  // namespace octet
