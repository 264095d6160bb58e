// User text inside an error message (a value from the command line, the environment or a file),
// the one way every layer quotes it: between quotes, control bytes written as \xNN and at most
// kQuotedBytes of it, so that an error stays one readable line whatever the user passed.
// Header-only: the layers above liboctet (predictor, train, shims) use it without an export.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace octet {
namespace detail {

constexpr size_t kQuotedBytes = 64;

inline std::string quoted(std::string_view text, char quote = '\'') {
  size_t n = text.size() <= kQuotedBytes ? text.size() : kQuotedBytes;
  // Cut before a UTF-8 sequence rather than inside it.
  while (n < text.size() && n > 0 && (static_cast<unsigned char>(text[n]) & 0xc0) == 0x80) --n;
  std::string out(1, quote);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += hex;
  }
  if (n < text.size()) out += "...";
  return out + quote;
}

}  // namespace detail
}  // namespace octet
