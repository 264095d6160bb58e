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

void write_file(const std::string& path, const void* data, size_t n) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) io_error("cannot write", path, errno);
  bool ok = std::fwrite(data, 1, n, f) == n;
  int err = errno;
  if (std::fclose(f) != 0 && ok) {  // a full disk may show only here, at the last flush
    ok = false;
    err = errno;
  }
  if (ok) return;
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);
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
