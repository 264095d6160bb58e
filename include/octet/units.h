// Octet's one size grammar, used by the command line, the shims' OCTET_* variables and the
// predictor's files (docs/units.md):
//
//   size := number [" "] [unit]     number := digits ["." digits]
//   unit := B | K | KB | KiB | M | MB | MiB | G | GB | GiB | T | TB | TiB   (any letter case)
//
// Sizes are binary, as in nccl-tests and OSU: 1K = 1KB = 1KiB = 1024 bytes. A fraction must
// come to a whole number of bytes ("1.5K" is 1536, "1.1K" is an error). Rates (GB/s, Gbit/s) are
// a different quantity, decimal as network links are quoted: see the predictor.
#pragma once

#include <cstdint>
#include <string_view>

#include "octet/error.h"
#include "octet/export.h"

namespace octet {

// The byte count a size names; throws Error(kInvalidArgument) with a one-line message otherwise
// (empty, negative, unknown unit, not a whole number of bytes, more than 2^62 bytes).
OCTET_API uint64_t parse_size(std::string_view text);

}  // namespace octet
