// Fashion-MNIST from idx files (the format of LeCun's MNIST: a big-endian magic 0x0000 <type>
// <rank>, one big-endian uint32 per dimension, then the data), plain or gzipped. Every check
// fails with one octet::Error naming the file: kInvalidArgument (cannot open or read),
// kCorruptPayload (bad magic, dimensions, labels, trailing bytes), kTruncatedPayload (fewer
// bytes than the header says).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace octet {
namespace train {

// Where Debian's dataset-fashion-mnist puts the files.
constexpr const char* kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;  // row-major, product(dims) bytes
};

// Parses an idx file of unsigned bytes (type 0x08) held in memory; `name` goes into errors.
IdxArray parse_idx(const uint8_t* bytes, size_t size, const std::string& name);
// Reads `path` (gzip or plain: zlib reads both) and parses it.
IdxArray read_idx(const std::string& path);

constexpr int kImageSide = 28;
constexpr int kPixels = kImageSide * kImageSide;
constexpr int kClasses = 10;

struct Split {
  size_t count = 0;
  std::vector<float> images;    // count x kPixels, scaled to [0, 1]
  std::vector<uint8_t> labels;  // count, each < kClasses
};

struct Dataset {
  Split train, test;
};

// Images and labels of one split, checked against each other; `limit` > 0 keeps the first
// `limit` samples (after validating the whole files).
Split make_split(const IdxArray& images, const IdxArray& labels, size_t limit,
                 const std::string& what);

// Loads <dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz].
Dataset load_fashion_mnist(const std::string& dir, size_t train_limit, size_t test_limit);

}  // namespace train
}  // namespace octet
