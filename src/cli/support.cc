#include "cli/support.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "octet/error.h"

namespace octet {
namespace cli {
namespace {

using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

[[noreturn]] void io_error(const char* what, const std::string& path, int err) {
  throw Error(ErrorCode::kInvalidArgument,
              std::string(what) + " " + path + ": " + std::strerror(err));
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(uint64_t{1} << 30));
  return buf;
}

}  // namespace

std::vector<uint8_t> read_file(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) io_error("cannot open", path, errno);
  std::vector<uint8_t> data;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f.get())) > 0;)
    data.insert(data.end(), buf, buf + n);
  if (std::ferror(f.get())) io_error("cannot read", path, errno);  // e.g. a directory
  return data;
}

namespace {

// Writes and closes f; false with *err set when any byte did not reach it (a full disk may show
// only at the last flush).
bool write_all(std::FILE* f, const void* data, size_t n, int* err) {
  bool ok = std::fwrite(data, 1, n, f) == n;
  *err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    *err = errno;
  }
  return ok;
}

}  // namespace

// A regular file (or a new one) is written beside its final name and renamed into place, so a
// failure or a crash never leaves a partial file; a device (/dev/stdout) is written directly.
void write_file(const std::string& path, const void* data, size_t n) {
  std::error_code ec;
  const bool device = std::filesystem::exists(path, ec) &&
                      !std::filesystem::is_regular_file(path, ec) &&
                      !std::filesystem::is_directory(path, ec);
  const std::string target = device ? path : path + ".tmp." + std::to_string(getpid());
  std::FILE* f = std::fopen(target.c_str(), "wb");
  if (!f) io_error("cannot write", path, errno);
  int err = 0;
  bool ok = write_all(f, data, n, &err);
  if (ok && !device && std::rename(target.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (ok) return;
  if (!device) std::filesystem::remove(target, ec);
  io_error("cannot write", path, err);
}

void write_file(const std::string& path, const std::string& text) {
  write_file(path, text.data(), text.size());
}

void print_error(const Error& e) {
  std::fprintf(stderr, "octet: error (%s): %s\n", error_code_name(e.code()), e.what());
}

void check_memory(double bytes, const std::string& what) {
  const double allowed = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE)) / 2;
  if (bytes > allowed)
    throw Error(ErrorCode::kInvalidArgument,
                what + ": needs about " + gib(bytes) + ", more than the " + gib(allowed) +
                    " a command may use (half of this machine's memory)");
}

}  // namespace cli
}  // namespace octet
