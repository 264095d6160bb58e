// The Octet codec: fp32 tensor <-> self-describing payload of 8-bit (or 4-bit) codes with one
// signed absmax scale per block. The payload layout is in docs/wire-format.md, the code tables and
// error bounds in docs/codec.md.
//
// All functions are thread-safe and throw octet::Error on bad input; they never read or write
// outside the spans they are given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "octet/error.h"
#include "octet/export.h"

namespace octet {

// Numeric values are part of the wire format: never renumber.
enum class DataType : uint8_t {
  kDynamic = 1,          // signed dynamic tree (default), 8 bit
  kLinear = 2,           // signed linear, 8 bit, step 1/128 of absmax
  kMantissa = 3,         // sign, 3-bit exponent (with offset), 4-bit mantissa
  kStaticTree = 4,       // sign, 3-bit base-10 exponent, 4-bit bisection-tree fraction
  kDynamicUnsigned = 5,  // unsigned dynamic tree (every block must be single-signed)
  kDynamic4 = 6,         // signed dynamic tree, 4 bit (two codes a byte)
};

// Parses "dynamic", "linear", "mantissa", "static_tree" (or "static-tree"), "dynamic_unsigned",
// "dynamic4"; throws kInvalidArgument otherwise.
OCTET_API DataType parse_data_type(std::string_view name);
OCTET_API const char* data_type_name(DataType type) noexcept;
// All data types, in enum order.
OCTET_API const std::vector<DataType>& all_data_types();
OCTET_API int data_type_bits(DataType type) noexcept;           // 8 or 4
OCTET_API uint32_t default_block_size(DataType type) noexcept;  // 2048 for 8-bit, 128 for 4-bit

constexpr uint32_t kMinBlockSize = 64;
constexpr uint32_t kMaxBlockSize = 65536;

struct CodecOptions {
  DataType type = DataType::kDynamic;
  uint32_t block_size = 0;    // 0: default_block_size(type); else a power of two in [64, 65536]
  bool stochastic = false;    // unbiased stochastic rounding instead of round-to-nearest
  uint64_t seed = 0;          // stochastic stream; use a new seed per step
  uint64_t index_offset = 0;  // counter of element 0, so that chunks of a tensor encoded apart
                              // draw the same random numbers as the whole tensor
  bool checksum = false;      // append a CRC32 of the body (verified by decode)
  int threads = 0;            // 0: all cores for large tensors; 1: the calling thread only
  int mantissa_exponent_offset = 0;  // kMantissa only: shifts its exponent range down, 0..8
};

// Throws kInvalidArgument when the options are inconsistent; returns the effective block size.
OCTET_API uint32_t validate_options(const CodecOptions& options);

// Size of encode()'s output for `count` elements when no element is NaN/Inf (each block that
// holds one adds 4 + block_size/4 bytes).
OCTET_API size_t encoded_size(size_t count, const CodecOptions& options);
// Upper bound of encode()'s output whatever the data (every block holding NaN/Inf): the capacity
// to allocate before encoding.
OCTET_API size_t max_encoded_size(size_t count, const CodecOptions& options);

// Encodes count fp32 values (any alignment) into out; returns the bytes written.
// Throws kInvalidArgument if out_capacity < the payload size (nothing useful is written then).
OCTET_API size_t encode(const float* in, size_t count, const CodecOptions& options, uint8_t* out,
                        size_t out_capacity);
OCTET_API std::vector<uint8_t> encode(const std::vector<float>& in,
                                      const CodecOptions& options = {});

// What a payload's header says; inspect() validates the header (magic, version, type, block size,
// CRC) and that `size` bytes are present, without touching the body.
struct PayloadInfo {
  DataType type = DataType::kDynamic;
  uint32_t block_size = 0;
  uint64_t count = 0;
  uint32_t special_blocks = 0;  // blocks that carry NaN/Inf positions
  bool has_checksum = false;
  bool stochastic = false;
  int mantissa_exponent_offset = 0;
  size_t size = 0;  // total payload bytes, header included
};
OCTET_API PayloadInfo inspect(const uint8_t* payload, size_t length);

enum class DecodeMode { kOverwrite, kAccumulate };  // out = x  or  out += x

// Decodes a whole payload (length must equal its size) into out[0, count). count must equal the
// payload's element count. Validates everything first: on error, out is untouched.
OCTET_API void decode(const uint8_t* payload, size_t length, float* out, size_t count,
                      DecodeMode mode = DecodeMode::kOverwrite, int threads = 0);
OCTET_API std::vector<float> decode(const std::vector<uint8_t>& payload);

// Error bound of one element after a round trip with round-to-nearest: |x - decode(encode(x))|
// <= bound_fraction(type) * absmax(block). Stochastic rounding: twice that.
OCTET_API double bound_fraction(DataType type, int mantissa_exponent_offset = 0);

// The decoded value of every code (index = code), for a unit scale. 256 entries for 8-bit types,
// 16 for kDynamic4. Used by tests, docs and the CUDA kernels.
OCTET_API std::vector<float> code_values(DataType type, int mantissa_exponent_offset = 0);

// Which SIMD target the codec runs ("AVX3_DL", "AVX3", "AVX2", "SSE4", "SCALAR" ...): the runtime
// dispatch's pick, or the one $OCTET_SIMD_TARGET names (read once, at the first codec call). Throws
// where that variable names none of simd_targets().
OCTET_API std::string simd_target();

// The SIMD targets this CPU and build can run, best first: what $OCTET_SIMD_TARGET accepts.
OCTET_API std::vector<std::string> simd_targets();

}  // namespace octet
