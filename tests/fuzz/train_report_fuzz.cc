// libFuzzer target: any byte string given to octet train's JSON reader (train::from_json) must
// end in a clean octet::Error or runs that write, read back and tabulate the same, never a crash,
// a hang or an out-of-bounds access (built with ASan).
#include <cstddef>
#include <cstdint>
#include <string>

#include "octet/error.h"
#include "train/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto runs = octet::train::from_json(text, "fuzz");
    const auto again = octet::train::from_json(octet::train::to_json(runs, "fuzz"), "again");
    if (again.size() != runs.size()) __builtin_trap();
    if (octet::train::summary_table(again) != octet::train::summary_table(runs)) __builtin_trap();
    octet::train::error_table(runs);
  } catch (const octet::Error&) {
  }
  return 0;
}
