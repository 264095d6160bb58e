// The size grammar of include/octet/units.h.
#include "octet/units.h"

#include <cctype>
#include <string>

#include "octet/detail/quoted.h"
#include "octet/error.h"

namespace octet {
namespace {

constexpr uint64_t kMaxSize = uint64_t{1} << 62;

[[noreturn]] void bad_size(std::string_view text, const char* why) {
  throw Error(ErrorCode::kInvalidArgument,
              "bad size " + detail::quoted(text) + ": " + why +
                  " (expected a number and an optional unit B, K, M, G, T; 1K = 1024 bytes)");
}

// log2 of the unit's multiplier, or -1 for an unknown unit.
int unit_shift(std::string unit) {
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.empty() || unit == "b") return 0;
  static const char kPrefixes[] = "kmgt";
  for (int i = 0; i < 4; ++i) {
    const std::string p(1, kPrefixes[i]);
    if (unit == p || unit == p + "b" || unit == p + "ib") return 10 * (i + 1);
  }
  return -1;
}

}  // namespace

uint64_t parse_size(std::string_view text) {
  size_t i = 0;
  uint64_t whole = 0, frac = 0, frac_scale = 1;
  const size_t digits_begin = i;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    // Checked before the multiply: a 64-bit product would wrap ("18446744073709551620" to 4).
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (whole > (kMaxSize - digit) / 10) bad_size(text, "too large (at most 2^62 bytes)");
    whole = whole * 10 + digit;
  }
  if (i == digits_begin) bad_size(text, "no number");
  if (i < text.size() && text[i] == '.') {
    const size_t frac_begin = ++i;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      if (frac_scale >= uint64_t{1} << 40) bad_size(text, "too many decimals");
      frac = frac * 10 + static_cast<uint64_t>(text[i] - '0');
      frac_scale *= 10;
    }
    if (i == frac_begin) bad_size(text, "no digits after the point");
  }
  if (i < text.size() && text[i] == ' ') ++i;
  const int shift = unit_shift(std::string(text.substr(i)));
  if (shift < 0) bad_size(text, "unknown unit");
  if (whole > (kMaxSize >> shift)) bad_size(text, "too large (at most 2^62 bytes)");
  // The fraction must come to whole bytes: frac * 2^shift / frac_scale, exact in 128 bits
  // (frac < 2^44, shift <= 40).
  const unsigned __int128 scaled = static_cast<unsigned __int128>(frac) << shift;
  if (scaled % frac_scale != 0) bad_size(text, "not a whole number of bytes");
  const uint64_t bytes = (whole << shift) + static_cast<uint64_t>(scaled / frac_scale);
  if (bytes > kMaxSize) bad_size(text, "too large (at most 2^62 bytes)");
  return bytes;
}

}  // namespace octet
