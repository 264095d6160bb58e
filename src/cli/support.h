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

// A number of seconds in [lo, hi] ("0.02", "1e-3"), with the same kind of one-line error.
CLI::Validator seconds_between(double lo, double hi);

// Bytes the CLI reads files into and encodes or decodes into. Unlike a std::vector it is not
// zero-filled first (read() or the codec writes every byte anyway), and large ones ask for
// transparent huge pages: on this project's VMs a 4 KiB page fault costs ~5 us, 0.3 s per 256 MiB,
// against ~0.05 s with 2 MiB pages. Growing it moves pages (mremap), it never copies them.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t size);
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const uint8_t* begin() const { return data_; }
  const uint8_t* end() const { return data_ + size_; }
  // Keeps the first min(size, n) bytes; bytes beyond the old size are undefined.
  void resize(size_t n);

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

// The whole file (regular file, pipe, device: /dev/stdin), read with read() calls of up to 1 GiB
// into an owned Buffer. Not mmap: a file truncated by another process while mapped would kill
// this one with SIGBUS; read() just returns what is there. Throws kInvalidArgument
// "cannot open|read <path>: <reason>", or check_memory's for a file over half of the memory.
Buffer read_file(const std::string& path);

// Writes `n` bytes to `path` with write() calls of up to 1 GiB. A file is written under a
// temporary name beside it and renamed into place: never a partial file, even after a crash (a
// symbolic link stays a link: its target is replaced). /dev/stdout, /dev/stderr, /dev/fd/N and
// /proc/self/fd/N are written to that open descriptor; a device, a FIFO or another link into /dev
// or /proc is opened and written in place. On failure throws kInvalidArgument
// "cannot write <path>: <reason>".
void write_file(const std::string& path, const void* data, size_t n);
void write_file(const std::string& path, const std::string& text);

// Prints the one line main prints for an error: "octet: error (<code>): <message>".
void print_error(const Error& e);

// Throws kInvalidArgument, naming `what`, when `bytes` exceed half of this machine's memory (the
// rule `octet bench` applies per rank), instead of failing to allocate or meeting the OOM killer.
void check_memory(double bytes, const std::string& what);

}  // namespace cli
}  // namespace octet
