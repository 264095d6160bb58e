// libFuzzer target: any bytes given to the idx reader (`octet train`'s Fashion-MNIST files,
// src/train/idx.h) must end in a clean octet::Error of one line or an array whose data is exactly
// its dimensions' product; parsed as images and labels (the input cut in two: its first two bytes
// give the images' length), make_split checks them against each other the same way. Built with ASan
// and UBSan.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

#include "octet/error.h"
#include "train/idx.h"

namespace {

namespace tr = octet::train;

void check(const tr::IdxArray& a) {
  size_t product = 1;
  for (uint32_t d : a.dims) product *= d;
  if (a.dims.empty() || a.dims.size() > 4 || a.data.size() != product) __builtin_trap();
}

void expect_clean(const std::function<void()>& f) {
  try {
    f();
  } catch (const octet::Error& e) {
    if (std::strchr(e.what(), '\n') != nullptr) __builtin_trap();  // one line
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  expect_clean([&] { check(tr::parse_idx(data, size, "fuzz")); });
  if (size < 2) return 0;
  // The first two bytes (little-endian) are the images file's length; the labels file follows.
  const size_t cut = std::min(size, 2 + (size_t{data[0]} | size_t{data[1]} << 8));
  expect_clean([&] {
    const tr::IdxArray images = tr::parse_idx(data + 2, cut - 2, "images");
    const tr::IdxArray labels = tr::parse_idx(data + cut, size - cut, "labels");
    const tr::Split s = tr::make_split(images, labels, 0, "split");
    if (s.labels.size() != s.count || s.images.size() != s.count * tr::kPixels) __builtin_trap();
  });
  return 0;
}
