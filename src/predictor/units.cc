// Quantities with units in configuration files: "6 GB/s", "1.5 us", "64 KiB". Rates and times
// are decimal; sizes are the library's grammar.
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "octet/detail/quoted.h"
#include "octet/units.h"
#include "predictor/internal.h"
#include "predictor/predictor.h"

namespace octet {
namespace predictor {
namespace {

using UnitTable = std::vector<std::pair<const char*, double>>;

const UnitTable kBandwidth = {{"B/s", 1},         {"kB/s", 1e3},        {"KB/s", 1e3},
                              {"MB/s", 1e6},      {"GB/s", 1e9},        {"TB/s", 1e12},
                              {"KiB/s", 1024.0},  {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0},
                              {"bit/s", 0.125},   {"kbit/s", 125.0},    {"Mbit/s", 1.25e5},
                              {"Gbit/s", 1.25e8}, {"Tbit/s", 1.25e11},  {"Mb/s", 1.25e5},
                              {"Gb/s", 1.25e8}};
const UnitTable kTime = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ns", 1e-9}};

std::string unit_list(const UnitTable& table) {
  std::string out;
  for (const auto& u : table) out += (out.empty() ? "" : ", ") + std::string(u.first);
  return out;
}

// A kind of quantity: its units, and the range its magnitude must lie in when not 0.
struct Kind {
  const char* name;
  const UnitTable& units;
  double min, max;
  const char* range;  // the range, said in words
};

const Kind kBandwidthKind = {"bandwidth", kBandwidth, kMinBandwidth, kMaxBandwidth,
                             "between 1 B/s and 1e18 B/s"};
const Kind kTimeKind = {"time", kTime, 0, kMaxSeconds, "at most 1e9 s"};

double in_range(double value, const std::string& text, const Kind& kind) {
  const double magnitude = std::fabs(value);
  if (magnitude > kind.max || (magnitude > 0 && magnitude < kind.min))
    fail(detail::quoted(text),
         std::string("out of range (a ") + kind.name + " is " + kind.range + ")");
  return value;
}

double parse_quantity(const std::string& text, const Kind& kind) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  const std::string name = kind.name;
  if (end == begin || !std::isfinite(value))
    fail(detail::quoted(text), "not a " + name + " (expected e.g. a number and a unit)");
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  while (!unit.empty() && unit.back() == ' ') unit.pop_back();
  if (unit.empty())
    fail(detail::quoted(text),
         "a " + name + " needs a unit (one of " + unit_list(kind.units) + ")");
  for (const auto& u : kind.units)
    if (unit == u.first) return in_range(value * u.second, text, kind);
  fail(detail::quoted(text), "unknown " + name + " unit " + detail::quoted(unit) +
                                 " (expected one of " + unit_list(kind.units) + ")");
}

}  // namespace

double parse_bandwidth(const std::string& text) {
  return parse_quantity(text, kBandwidthKind);
}
double parse_time(const std::string& text) {
  return parse_quantity(text, kTimeKind);
}
// Sizes follow Octet's one size grammar (include/octet/units.h): binary units, 1 KB = 1024 B.
double parse_size(const std::string& text) {
  return static_cast<double>(octet::parse_size(text));
}

}  // namespace predictor
}  // namespace octet
