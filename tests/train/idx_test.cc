// The idx reader against good, truncated and corrupted files (in memory and gzipped on disk):
// every bad input is one octet::Error naming the file, never a crash or a partial array.
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "octet/error.h"
#include "train/idx.h"
#include "train/rng.h"

namespace octet {
namespace train {
namespace {

std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims, uint8_t fill = 7) {
  std::vector<uint8_t> b{0, 0, 0x08, uint8_t(dims.size())};
  size_t total = 1;
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(d >> s));
    total *= d;
  }
  b.insert(b.end(), total, fill);
  return b;
}

ErrorCode parse_code(const std::vector<uint8_t>& b) {
  try {
    parse_idx(b.data(), b.size(), "x");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("x: ", 0), 0u) << e.what();
    return e.code();
  }
  return ErrorCode::kOk;
}

TEST(Idx, ParsesDimsAndData) {
  const IdxArray a = parse_idx(idx_bytes({3, 28, 28}).data(), idx_bytes({3, 28, 28}).size(), "x");
  EXPECT_EQ(a.dims, (std::vector<uint32_t>{3, 28, 28}));
  EXPECT_EQ(a.data.size(), 3u * 784);
}

TEST(Idx, RejectsBadHeaders) {
  std::vector<uint8_t> b = idx_bytes({2, 3});
  EXPECT_EQ(parse_code({}), ErrorCode::kTruncatedPayload);
  EXPECT_EQ(parse_code({0, 0, 8}), ErrorCode::kTruncatedPayload);
  auto with = [&](size_t at, uint8_t v) {
    std::vector<uint8_t> c = b;
    c[at] = v;
    return parse_code(c);
  };
  EXPECT_EQ(with(0, 1), ErrorCode::kCorruptPayload);     // magic
  EXPECT_EQ(with(2, 0x0d), ErrorCode::kCorruptPayload);  // float elements
  EXPECT_EQ(with(3, 0), ErrorCode::kCorruptPayload);     // rank 0
  EXPECT_EQ(with(3, 9), ErrorCode::kCorruptPayload);     // rank 9
  EXPECT_EQ(with(7, 0), ErrorCode::kCorruptPayload);     // dimension 0
  EXPECT_EQ(with(4, 0x7f), ErrorCode::kCorruptPayload);  // more than 1 GiB
  EXPECT_EQ(with(7, 9), ErrorCode::kTruncatedPayload);   // more data than present
  std::vector<uint8_t> longer = b;
  longer.push_back(0);
  EXPECT_EQ(parse_code(longer), ErrorCode::kCorruptPayload);  // trailing bytes
}

// Every prefix and many random corruptions of a valid file: an error or a valid array whose size
// matches its dimensions, never anything else.
TEST(Idx, FuzzPrefixesAndCorruptions) {
  const std::vector<uint8_t> b = idx_bytes({4, 5, 6});
  for (size_t n = 0; n < b.size(); ++n)
    EXPECT_NE(parse_code(std::vector<uint8_t>(b.begin(), b.begin() + n)), ErrorCode::kOk) << n;
  Rng rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> c = b;
    c[rng.below(16)] = uint8_t(rng.next());
    try {
      const IdxArray a = parse_idx(c.data(), c.size(), "x");
      size_t total = 1;
      for (uint32_t d : a.dims) total *= d;
      EXPECT_EQ(a.data.size(), total);
    } catch (const Error& e) {
      EXPECT_NE(e.code(), ErrorCode::kOk);
    }
  }
}

class IdxFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("octet_idx_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write_gz(const std::string& name, const std::vector<uint8_t>& b, size_t cut = 0) {
    const std::string path = (dir_ / name).string();
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, b.data(), unsigned(b.size()));
    gzclose(f);
    if (cut) std::filesystem::resize_file(path, std::filesystem::file_size(path) - cut);
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(IdxFiles, ReadsGzipAndChecksSplits) {
  std::vector<uint8_t> labels = idx_bytes({3}, 9);
  write_gz("train-images-idx3-ubyte.gz", idx_bytes({3, 28, 28}, 255));
  write_gz("train-labels-idx1-ubyte.gz", labels);
  write_gz("t10k-images-idx3-ubyte.gz", idx_bytes({2, 28, 28}));
  write_gz("t10k-labels-idx1-ubyte.gz", idx_bytes({2}, 1));
  const Dataset d = load_fashion_mnist(dir_.string(), 2, 0);
  EXPECT_EQ(d.train.count, 2u);
  EXPECT_EQ(d.test.count, 2u);
  EXPECT_EQ(d.train.images[0], 1.0f);
  labels.back() = 10;  // not a class
  write_gz("train-labels-idx1-ubyte.gz", labels);
  EXPECT_THROW(load_fashion_mnist(dir_.string(), 0, 0), Error);
  write_gz("train-labels-idx1-ubyte.gz", idx_bytes({4}, 1));  // 3 images, 4 labels
  EXPECT_THROW(load_fashion_mnist(dir_.string(), 0, 0), Error);
}

TEST_F(IdxFiles, TruncatedGzipAndMissingFile) {
  const std::string path = write_gz("a.gz", idx_bytes({100, 28, 28}), 20);
  try {
    read_idx(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  try {
    load_fashion_mnist((dir_ / "none").string(), 0, 0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("dataset-fashion-mnist"), std::string::npos);
  }
}

}  // namespace
}  // namespace train
}  // namespace octet
