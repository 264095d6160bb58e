// libFuzzer target: the text grammars a user types (built with ASan and UBSan).
//  * Octet's size grammar (include/octet/units.h) against an independent exact evaluation in
//    128-bit arithmetic: every string is accepted exactly when it names a whole number of bytes
//    up to 2^62, with that value; the C API agrees.
//  * The predictor's quantities (bandwidth, time, size): a finite value whose magnitude is in the
//    documented range, or a clean octet::Error.
//  * The shims' OCTET_* configuration from "NAME=value" lines: never more than its buffers, a
//    terminated error text, and a valid configuration only with valid fields.
// The first byte picks the grammar; the rest is the text.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

#include "octet/error.h"
#include "octet/octet_c.h"
#include "octet/units.h"
#include "predictor/predictor.h"
#include "shim_config.h"

namespace {

using u128 = unsigned __int128;
constexpr u128 kMaxBytes = u128{1} << 62;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// log2 of a unit's multiplier (any letter case), or -1.
int unit_shift(std::string_view unit) {
  std::string u(unit);
  for (char& c : u)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (u.empty() || u == "b") return 0;
  const char* prefixes = "kmgt";
  for (int i = 0; i < 4; ++i) {
    const std::string p(1, prefixes[i]);
    if (u == p || u == p + "b" || u == p + "ib") return 10 * (i + 1);
  }
  return -1;
}

// Whether text names a size by the grammar, its value in *bytes. A fraction of more than 13
// digits is refused ("too many decimals", units.h's implementation limit).
bool reference_size(std::string_view text, u128* bytes) {
  size_t i = 0;
  u128 whole = 0, frac = 0, scale = 1;
  for (; i < text.size() && is_digit(text[i]); ++i)
    if ((whole = whole * 10 + static_cast<u128>(text[i] - '0')) > (u128{1} << 100)) return false;
  if (i == 0) return false;
  if (i < text.size() && text[i] == '.') {
    const size_t begin = ++i;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      if (i - begin >= 13) return false;
      frac = frac * 10 + static_cast<u128>(text[i] - '0');
      scale *= 10;
    }
    if (i == begin) return false;
  }
  if (i < text.size() && text[i] == ' ') ++i;
  const int shift = unit_shift(text.substr(i));
  if (shift < 0) return false;
  if ((frac << shift) % scale != 0) return false;
  *bytes = (whole << shift) + (frac << shift) / scale;
  return *bytes <= kMaxBytes;
}

void check_size(const std::string& text) {
  u128 expected = 0;
  const bool valid = reference_size(text, &expected);
  uint64_t c_bytes = 0;
  const bool c_valid = octet_parse_size(text.c_str(), &c_bytes) == OCTET_OK;
  try {
    const uint64_t bytes = octet::parse_size(text);
    if (!valid || bytes != expected) __builtin_trap();
    if (text.find('\0') == std::string::npos && (!c_valid || c_bytes != bytes)) __builtin_trap();
  } catch (const octet::Error& e) {
    if (valid) __builtin_trap();
    if (std::strchr(e.what(), '\n') != nullptr) __builtin_trap();  // one line
  }
}

void check_quantity(const std::string& text, double (*parse)(const std::string&), double most) {
  try {
    const double v = parse(text);
    // Signs are the caller's to check (validate() refuses non-positive fields by name).
    if (!std::isfinite(v) || std::fabs(v) > most) __builtin_trap();
  } catch (const octet::Error&) {
  }
}

std::map<std::string, std::string> g_env;

const char* lookup(const char* name) {
  const auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

void check_shim_config(std::string_view text) {
  g_env.clear();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos)
      g_env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    pos = end + 1;
  }
  octet_shim_config c;
  std::memset(&c, 0x5a, sizeof c);  // every field must be written
  octet_shim_config_parse(&c, lookup);
  if (std::memchr(c.error, '\0', sizeof c.error) == nullptr) __builtin_trap();
  if (std::memchr(c.report, '\0', sizeof c.report) == nullptr) __builtin_trap();
  if (std::memchr(c.calibration, '\0', sizeof c.calibration) == nullptr) __builtin_trap();
  if (c.valid != 0 && c.valid != 1) __builtin_trap();
  if (c.valid && (c.error[0] != '\0' || c.ops >= (1u << OCTET_SHIM_OP_COUNT))) __builtin_trap();
  if (!c.valid && c.error[0] == '\0') __builtin_trap();
  if (std::strchr(c.error, '\n') != nullptr) __builtin_trap();  // one line, whatever the value
  int64_t fields[OCTET_SHIM_CONFIG_FIELDS];
  octet_shim_config_fields(&c, fields);
  char ops[128];
  octet_shim_ops_string(c.ops, ops, sizeof ops);
  if (std::memchr(ops, '\0', sizeof ops) == nullptr) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  namespace pr = octet::predictor;
  switch (data[0] % 5) {
    case 0:
      check_size(text);
      break;
    case 1:
      check_quantity(text, pr::parse_bandwidth, 1e18);
      break;
    case 2:
      check_quantity(text, pr::parse_time, 1e9);
      break;
    case 3:
      check_quantity(text, pr::parse_size, 4611686018427387904.0);
      break;
    default:
      check_shim_config(text);
  }
  return 0;
}
