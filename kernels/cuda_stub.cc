// include/octet/cuda.h in a build without CUDA (OCTET_HAVE_CUDA == 0): the API stays linkable,
// says why it cannot run, and throws kUnavailable.
#include "octet/cuda.h"

namespace octet {
namespace {

constexpr const char* kWhy =
    "this build of Octet has no CUDA support (configure with nvcc and "
    "-DOCTET_WITH_CUDA=ON or AUTO)";

}  // namespace

bool cuda_device_available(std::string* why) {
  if (why) *why = kWhy;
  return false;
}

size_t encode_device(const float*, size_t, const CodecOptions& options, uint8_t*, size_t, void*) {
  validate_options(options);  // bad options are kInvalidArgument with or without CUDA
  throw Error(ErrorCode::kUnavailable, kWhy);
}

void decode_device(const uint8_t*, size_t, float*, size_t, DecodeMode, void*) {
  throw Error(ErrorCode::kUnavailable, kWhy);
}

}  // namespace octet
