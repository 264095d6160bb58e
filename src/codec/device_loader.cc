// The device backend: liboctet_cuda.so, loaded with dlopen on first use so that liboctet itself
// never links the CUDA runtime. include/octet/cuda.h's functions forward to it.
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "codec/backend.h"
#include "octet/config.h"
#include "octet/cuda.h"

namespace octet {
namespace codec {
namespace {

constexpr const char* kLibrary = "liboctet_cuda.so." OCTET_VERSION_STRING;

// The directory liboctet was loaded from, with a trailing '/', so that the device library is
// found beside it in the build tree and in an installation alike.
std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || !info.dli_fname) return "";
  const std::string path(info.dli_fname);
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

struct Loaded {
  const CodecBackend* backend = nullptr;
  std::string why;
};

Loaded load() {
  Loaded l;
  if (!OCTET_HAVE_CUDA) {
    l.why =
        "this build of Octet has no CUDA support (configure with nvcc and -DOCTET_WITH_CUDA=ON)";
    return l;
  }
  // OCTET_CUDA_LIBRARY names the library explicitly; else beside liboctet, else the search path.
  const char* env = std::getenv("OCTET_CUDA_LIBRARY");
  std::vector<std::string> candidates;
  if (env && *env)
    candidates = {env};
  else
    candidates = {own_directory() + kLibrary, kLibrary};
  void* handle = nullptr;
  std::string tried;
  for (const std::string& name : candidates) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    const char* e = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(e ? e : name.c_str());
  }
  if (!handle) {
    l.why = std::string("the device codec library cannot be loaded: ") + tried;
    return l;
  }
  auto entry = reinterpret_cast<DeviceEntryPoint>(dlsym(handle, kDeviceEntryPoint));
  l.backend = entry ? entry(OCTET_VERSION_STRING) : nullptr;
  if (!l.backend)
    l.why = std::string("liboctet_cuda does not match this liboctet ") + OCTET_VERSION_STRING;
  return l;  // the handle stays open for the life of the process
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const CodecBackend& device_backend() {
  const Loaded& l = loaded();
  if (!l.backend) throw Error(ErrorCode::kUnavailable, l.why);
  std::string why;
  if (!l.backend->available(&why)) throw Error(ErrorCode::kUnavailable, why);
  return *l.backend;
}

}  // namespace codec

bool cuda_device_available(std::string* why) {
  const codec::Loaded& l = codec::loaded();
  if (!l.backend) {
    if (why) *why = l.why;
    return false;
  }
  return l.backend->available(why);
}

size_t encode_device(const float* d_in, size_t count, const CodecOptions& options, uint8_t* out,
                     size_t out_capacity, void* stream) {
  const codec::ResolvedOptions r = codec::resolve(options);  // bad options: kInvalidArgument
  return codec::device_backend().encode(r, d_in, count, out, out_capacity, stream);
}

void encode_device_async(const float* d_in, size_t count, const CodecOptions& options,
                         uint8_t* d_out, size_t out_capacity, uint64_t* d_size, void* stream) {
  const codec::ResolvedOptions r = codec::resolve(options);  // bad options: kInvalidArgument
  codec::device_backend().encode_async(r, d_in, count, d_out, out_capacity, d_size, stream);
}

void decode_device_async(const uint8_t* d_payload, size_t capacity, const CodecOptions& expected,
                         float* d_out, size_t count, uint32_t* d_status, DecodeMode mode,
                         void* stream) {
  const codec::ResolvedOptions r = codec::resolve(expected);  // bad options: kInvalidArgument
  codec::device_backend().decode_async(r, d_payload, capacity, d_out, count, mode, d_status,
                                       stream);
}

void decode_device(const uint8_t* payload, size_t length, float* d_out, size_t count,
                   DecodeMode mode, void* stream) {
  codec::device_backend().decode(payload, length, d_out, count, mode, 1, stream);
}

}  // namespace octet
