// libFuzzer target: any byte string given to inspect()/decode() must end in a clean octet::Error
// or a successful decode, never a crash, a hang or an out-of-bounds access (built with ASan).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "octet/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const octet::PayloadInfo info = octet::inspect(data, size);
    if (info.count > (size_t{1} << 22)) return 0;  // valid header, but too large to allocate here
    std::vector<float> out(info.count);
    octet::decode(data, size, out.data(), out.size());
    octet::decode(data, size, out.data(), out.size(), octet::DecodeMode::kAccumulate, 1);
  } catch (const octet::Error&) {
  }
  return 0;
}
