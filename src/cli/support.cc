#include "cli/support.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <utility>

#include "octet/detail/quoted.h"
#include "octet/error.h"

namespace octet {
namespace cli {
namespace {

namespace fs = std::filesystem;

constexpr size_t kHugePage = size_t{2} << 20;
// Linux moves at most 2 GiB - 4 KiB per read() or write(); whole GiBs keep every call page-aligned.
constexpr size_t kMaxIo = size_t{1} << 30;
// The first buffer for a pipe or a device, whose size is unknown; it doubles from there.
constexpr size_t kFirstChunk = size_t{1} << 20;

[[noreturn]] void io_error(const char* what, const std::string& path, int err) {
  throw Error(ErrorCode::kInvalidArgument,
              std::string(what) + " " + path + ": " + std::strerror(err));
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(uint64_t{1} << 30));
  return buf;
}

// THP is a hint: where it is off, or no huge page is free, the kernel uses 4 KiB pages.
void advise_huge(void* p, size_t n) {
  if (n >= kHugePage) madvise(p, n, MADV_HUGEPAGE);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

Buffer::Buffer(size_t size) {
  resize(size);
}

Buffer::Buffer(Buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  std::swap(data_, other.data_);  // other frees what this held
  std::swap(size_, other.size_);
  std::swap(capacity_, other.capacity_);
  return *this;
}

Buffer::~Buffer() {
  if (data_) munmap(data_, capacity_);
}

// Pages are mapped when first touched, so the unused capacity costs address space only.
void Buffer::resize(size_t n) {
  if (n > capacity_) {
    void* p = data_ ? mremap(data_, capacity_, n, MREMAP_MAYMOVE)
                    : mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    advise_huge(p, n);
    data_ = static_cast<uint8_t*>(p);
    capacity_ = n;
  }
  size_ = n;
}

namespace {

// A regular file's size is only a first guess (it may grow or shrink while it is read); + 1 lets
// the read that meets its end land without growing the buffer. Pipes, devices and /proc files
// (regular, size 0) report no useful size. Capacity that is never filled costs no memory.
size_t first_capacity(int fd, const std::string& path) {
  struct stat st;
  if (fstat(fd, &st) != 0) return kFirstChunk;
  if (S_ISFIFO(st.st_mode)) fcntl(fd, F_SETPIPE_SZ, int(kFirstChunk));  // 1 MiB reads, a hint
  if (!S_ISREG(st.st_mode)) return kFirstChunk;
  check_memory(double(st.st_size), path);
  return std::max(size_t(st.st_size) + 1, kFirstChunk);
}

}  // namespace

Buffer read_file(const std::string& path) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) io_error("cannot open", path, errno);
  Buffer b(first_capacity(fd.get(), path));
  size_t got = 0;
  for (;;) {
    if (got == b.size()) {
      check_memory(2.0 * double(got), path);  // a pipe that never ends
      b.resize(2 * got);
    }
    const ssize_t r = ::read(fd.get(), b.data() + got, std::min(b.size() - got, kMaxIo));
    if (r == 0) break;
    if (r > 0)
      got += size_t(r);
    else if (errno != EINTR)
      io_error("cannot read", path, errno);  // e.g. EISDIR
  }
  b.resize(got);
  return b;
}

namespace {

// 0, or the errno of the first call that failed.
int write_all(int fd, const void* data, size_t n) {
  for (auto* p = static_cast<const uint8_t*>(data); n > 0;) {
    const ssize_t r = ::write(fd, p, std::min(n, kMaxIo));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r < 0 ? errno : EIO;
    p += r;
    n -= size_t(r);
  }
  return 0;
}

// Creates or truncates `file` and writes it whole; 0 or an errno. close() counts: NFS and quotas
// may report a failed write only there.
int write_whole(const std::string& file, const void* data, size_t n) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return errno;
  int err = write_all(fd, data, n);
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}

// Writes a temporary file beside the final one and renames it into place: readers see the old
// file or the whole new one, never a part. Beside the file a link points to, not beside the link:
// rename() cannot cross file systems, and the link stays a link.
int write_by_rename(const std::string& path, const void* data, size_t n) {
  std::error_code ec;
  fs::path final_path = fs::weakly_canonical(path, ec);
  if (ec) final_path = path;
  const std::string tmp = final_path.string() + ".tmp." + std::to_string(getpid());
  int err = write_whole(tmp, data, n);
  if (err == 0 && std::rename(tmp.c_str(), final_path.c_str()) != 0) err = errno;
  if (err != 0) ::unlink(tmp.c_str());
  return err;
}

bool under_dev_or_proc(const fs::path& p) {
  std::error_code ec;
  const std::string s = fs::absolute(p, ec).lexically_normal().string();
  return s.rfind("/dev/", 0) == 0 || s.rfind("/proc/", 0) == 0;
}

// True for a device or a FIFO, and for a path into /dev or /proc or a link to one (they stand
// for devices and open descriptors): renaming onto /dev/stdout would replace the link itself, not
// the file the shell opened, and leave that file empty.
bool written_in_place(const std::string& path) {
  std::error_code ec;
  const fs::file_status s = fs::status(path, ec);
  if (fs::exists(s) && !fs::is_regular_file(s)) return true;
  fs::path p = path;
  for (int hop = 0; hop < 40; ++hop) {  // 40: Linux's limit of links followed in a path
    if (under_dev_or_proc(p)) return true;
    if (!fs::is_symlink(p, ec)) return false;
    const fs::path target = fs::read_symlink(p, ec);
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return false;
}

// The descriptor that /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name, else -1.
// Writing to it rather than reopening the path keeps a shell's `>> file` appending and works for
// sockets, which cannot be reopened.
int named_descriptor(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const size_t len = std::strlen(prefix);
    if (path.compare(0, len, prefix) != 0 || path.size() == len || path.size() > len + 9) continue;
    if (path.find_first_not_of("0123456789", len) == std::string::npos)
      return std::stoi(path.substr(len));
  }
  return -1;
}

}  // namespace

void write_file(const std::string& path, const void* data, size_t n) {
  std::error_code ec;
  const int fd = named_descriptor(path);
  int err = 0;
  if (fd >= 0)
    err = write_all(fd, data, n);
  else if (fs::is_directory(path, ec))
    err = EISDIR;
  else if (written_in_place(path))
    err = write_whole(path, data, n);
  else
    err = write_by_rename(path, data, n);
  if (err != 0) io_error("cannot write", path, err);
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

CLI::Validator seconds_between(double lo, double hi) {
  char range[64];
  std::snprintf(range, sizeof range, "%g..%g", lo, hi);
  const std::string what = std::string("must be a number of seconds in ") + range;
  return CLI::Validator(
      [lo, hi, what](std::string& s) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(s.c_str(), &end);
        const bool number = !s.empty() && end == s.c_str() + s.size() && errno == 0;
        return number && v >= lo && v <= hi ? "" : what + ", not " + detail::quoted(s);
      },
      "SECONDS");
}

}  // namespace cli
}  // namespace octet
