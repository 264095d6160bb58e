#include "train/idx.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "octet/error.h"

namespace octet {
namespace train {
namespace {

// Larger than any idx file this reads (Fashion-MNIST's largest is 47 MB): a bigger (or endless)
// stream is refused rather than read into memory.
constexpr size_t kMaxFileBytes = size_t{1} << 30;
constexpr size_t kMaxDims = 4;

[[noreturn]] void fail(ErrorCode code, const std::string& name, const std::string& why) {
  throw Error(code, name + ": " + why);
}

uint32_t big_endian32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

std::vector<uint8_t> read_all(const std::string& path) {
  errno = 0;
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(path.c_str(), "rb"), &gzclose);
  if (!f)
    fail(ErrorCode::kInvalidArgument, path,
         std::string("cannot open: ") + std::strerror(errno ? errno : ENOMEM));
  std::vector<uint8_t> data;
  uint8_t buf[1 << 16];
  for (;;) {
    const int n = gzread(f.get(), buf, sizeof buf);
    if (n < 0) {
      int err = 0;
      const char* msg = gzerror(f.get(), &err);
      fail(err == Z_ERRNO ? ErrorCode::kInvalidArgument : ErrorCode::kCorruptPayload, path,
           std::string("cannot read: ") + (err == Z_ERRNO ? std::strerror(errno) : msg));
    }
    if (n == 0) break;
    if (data.size() + size_t(n) > kMaxFileBytes)
      fail(ErrorCode::kCorruptPayload, path, "more than 1 GiB of data (not an idx file)");
    data.insert(data.end(), buf, buf + n);
  }
  int err = 0;
  std::string msg = gzerror(f.get(), &err);  // a gzip stream cut short reads as Z_BUF_ERROR
  if (msg.rfind(path + ": ", 0) == 0) msg.erase(0, path.size() + 2);  // zlib names the file too
  if (err != Z_OK && err != Z_STREAM_END)
    fail(ErrorCode::kTruncatedPayload, path, "cannot read: " + msg);
  return data;
}

// The path of an idx file: `<dir>/<name>` if present, else `<dir>/<name>.gz`.
std::string find_file(const std::string& dir, const std::string& name) {
  const std::string plain = dir + "/" + name;
  std::error_code ec;
  return std::filesystem::exists(plain, ec) ? plain : plain + ".gz";
}

}  // namespace

IdxArray parse_idx(const uint8_t* bytes, size_t size, const std::string& name) {
  if (size < 4)
    fail(ErrorCode::kTruncatedPayload, name,
         "truncated: no idx header (" + std::to_string(size) + " bytes)");
  if (bytes[0] != 0 || bytes[1] != 0)
    fail(ErrorCode::kCorruptPayload, name, "bad magic (not an idx file)");
  if (bytes[2] != 0x08)
    fail(ErrorCode::kCorruptPayload, name,
         "element type " + std::to_string(bytes[2]) + ", expected 8 (unsigned byte)");
  const size_t rank = bytes[3];
  if (rank == 0 || rank > kMaxDims)
    fail(ErrorCode::kCorruptPayload, name, "rank " + std::to_string(rank) + ", expected 1 to 4");
  const size_t header = 4 + 4 * rank;
  if (size < header) fail(ErrorCode::kTruncatedPayload, name, "truncated: header cut short");
  IdxArray out;
  size_t total = 1;
  for (size_t i = 0; i < rank; ++i) {
    const uint32_t d = big_endian32(bytes + 4 + 4 * i);
    if (d == 0) fail(ErrorCode::kCorruptPayload, name, "dimension " + std::to_string(i) + " is 0");
    if (total > kMaxFileBytes / d)
      fail(ErrorCode::kCorruptPayload, name, "dimensions describe more than 1 GiB");
    total *= d;
    out.dims.push_back(d);
  }
  const size_t body = size - header;
  if (body < total)
    fail(ErrorCode::kTruncatedPayload, name,
         "truncated: header says " + std::to_string(total) + " data bytes, file has " +
             std::to_string(body));
  if (body > total)
    fail(ErrorCode::kCorruptPayload, name,
         std::to_string(body - total) + " bytes after the " + std::to_string(total) +
             " the header says");
  out.data.assign(bytes + header, bytes + size);
  return out;
}

IdxArray read_idx(const std::string& path) {
  const std::vector<uint8_t> data = read_all(path);
  return parse_idx(data.data(), data.size(), path);
}

Split make_split(const IdxArray& images, const IdxArray& labels, size_t limit,
                 const std::string& what) {
  if (images.dims.size() != 3 || images.dims[1] != kImageSide || images.dims[2] != kImageSide)
    fail(ErrorCode::kCorruptPayload, what, "images are not N x 28 x 28");
  if (labels.dims.size() != 1) fail(ErrorCode::kCorruptPayload, what, "labels are not a vector");
  if (labels.dims[0] != images.dims[0])
    fail(ErrorCode::kCorruptPayload, what,
         std::to_string(images.dims[0]) + " images but " + std::to_string(labels.dims[0]) +
             " labels");
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] >= kClasses)
      fail(ErrorCode::kCorruptPayload, what,
           "label " + std::to_string(labels.data[i]) + " of sample " + std::to_string(i) +
               " is not 0 to 9");
  Split s;
  s.count = limit > 0 && limit < labels.dims[0] ? limit : labels.dims[0];
  s.labels.assign(labels.data.begin(), labels.data.begin() + s.count);
  s.images.resize(s.count * kPixels);
  for (size_t i = 0; i < s.images.size(); ++i) s.images[i] = float(images.data[i]) / 255.0f;
  return s;
}

Dataset load_fashion_mnist(const std::string& dir, size_t train_limit, size_t test_limit) {
  auto split = [&](const std::string& prefix, size_t limit) {
    const std::string images = find_file(dir, prefix + "-images-idx3-ubyte");
    const std::string labels = find_file(dir, prefix + "-labels-idx1-ubyte");
    std::error_code ec;
    for (const std::string& path : {images, labels})
      if (!std::filesystem::exists(path, ec))
        fail(ErrorCode::kInvalidArgument, path,
             "no such file (apt-get install dataset-fashion-mnist, or pass --data DIR)");
    return make_split(read_idx(images), read_idx(labels), limit, images + " + " + labels);
  };
  Dataset d;
  d.train = split("train", train_limit);
  d.test = split("t10k", test_limit);
  return d;
}

}  // namespace train
}  // namespace octet
