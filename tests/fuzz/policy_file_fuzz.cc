// libFuzzer target: any byte string given to parse_policy_curves() must end in a clean
// octet::Error or a parsed file that formats and parses back to the same sets, never a crash, a
// hang or an out-of-bounds access (built with ASan).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "octet/policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto sets = octet::parse_policy_curves(text, "fuzz");
    const auto again = octet::parse_policy_curves(octet::format_policy_curves(sets), "again");
    if (again.size() != sets.size()) __builtin_trap();
  } catch (const octet::Error&) {
  }
  return 0;
}
