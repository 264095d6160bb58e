// What the `octet` subcommands share: whole-number options with readable limits, whole-file reads
// and writes that fail with one line (and leave no partial output file), a memory limit, and the
// one line an error prints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "octet/error.h"

namespace octet {
namespace cli {

// The message of a whole-number option of type T that must be >= lo, or "" when `s` is one.
template <typename T>
std::string whole_number_error(const std::string& s, T lo) {
  long long v = 0;
  const bool whole = CLI::detail::lexical_cast(s, v) && v >= static_cast<long long>(lo);
  // strtoll saturates: compare the text's value itself with T's largest.
  const long double max = static_cast<long double>(std::numeric_limits<T>::max());
  if (whole && std::strtold(s.c_str(), nullptr) <= max) return "";
  if (whole)
    return "must be at most " + std::to_string(std::numeric_limits<T>::max()) + ", not '" + s + "'";
  return "must be a whole number >= " + std::to_string(lo) + ", not '" + s + "'";
}

// A whole-number option of type T (int, size_t, uint32_t ...) that must be >= lo, checked before
// CLI11 converts it: CLI11's own ranges print DBL_MAX, and it converts "-1" to an unsigned type
// by wrapping around.
template <typename T>
CLI::Validator at_least(T lo) {
  return CLI::Validator([lo](std::string& s) { return whole_number_error<T>(s, lo); },
                        "INT>=" + std::to_string(lo));
}

// The whole file; throws kInvalidArgument "cannot open|read <path>: <reason>".
std::vector<uint8_t> read_file(const std::string& path);

// Writes `n` bytes to `path` (a file, or a device such as /dev/stdout). A file is written under a
// temporary name and renamed into place: never a partial file, even after a crash. On failure
// throws kInvalidArgument "cannot write <path>: <reason>".
void write_file(const std::string& path, const void* data, size_t n);
void write_file(const std::string& path, const std::string& text);

// Prints the one line main prints for an error: "octet: error (<code>): <message>".
void print_error(const Error& e);

// Throws kInvalidArgument, naming `what`, when `bytes` exceed half of this machine's memory (the
// rule `octet bench` applies per rank), instead of failing to allocate or meeting the OOM killer.
void check_memory(double bytes, const std::string& what);

}  // namespace cli
}  // namespace octet
