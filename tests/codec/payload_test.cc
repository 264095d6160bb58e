// Payload validation: every truncation and corruption gives a clear error, never a crash or an
// out-of-bounds read (run under ASan by the fuzz build), and decode leaves the output untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "test_util.h"

namespace octet {
namespace {

std::vector<uint8_t> sample_payload(bool checksum, bool with_nan) {
  std::vector<float> x = testing_util::normal_data(300, 1);
  if (with_nan) x[70] = std::numeric_limits<float>::quiet_NaN();
  CodecOptions o;
  o.block_size = 64;
  o.checksum = checksum;
  return encode(x, o);
}

ErrorCode decode_error(const std::vector<uint8_t>& p, size_t count = 300) {
  std::vector<float> out(count, 42.0f);
  try {
    decode(p.data(), p.size(), out.data(), out.size());
  } catch (const Error& e) {
    for (float v : out) EXPECT_EQ(v, 42.0f) << "decode wrote before failing";
    return e.code();
  }
  return ErrorCode::kOk;
}

TEST(Payload, HeaderDescribesTheEncoding) {
  const std::vector<uint8_t> p = sample_payload(true, true);
  const PayloadInfo info = inspect(p.data(), p.size());
  EXPECT_EQ(info.type, DataType::kDynamic);
  EXPECT_EQ(info.block_size, 64u);
  EXPECT_EQ(info.count, 300u);
  EXPECT_EQ(info.special_blocks, 1u);
  EXPECT_TRUE(info.has_checksum);
  EXPECT_EQ(info.size, p.size());
  EXPECT_EQ(0, std::memcmp(p.data(), "OCT8", 4));
}

TEST(Payload, EveryTruncationIsAnError) {
  const std::vector<uint8_t> p = sample_payload(false, true);
  for (size_t len = 0; len < p.size(); ++len) {
    const std::vector<uint8_t> cut(p.begin(), p.begin() + len);
    const ErrorCode c = decode_error(cut);
    EXPECT_TRUE(c == ErrorCode::kTruncatedPayload || c == ErrorCode::kCorruptPayload)
        << "length " << len;
  }
}

TEST(Payload, TrailingBytesAndWrongCountsAreErrors) {
  std::vector<uint8_t> p = sample_payload(false, false);
  EXPECT_EQ(decode_error(p, 299), ErrorCode::kMismatch);
  p.push_back(0);
  EXPECT_EQ(decode_error(p), ErrorCode::kCorruptPayload);
}

TEST(Payload, HeaderCorruptionIsDetected) {
  const std::vector<uint8_t> p = sample_payload(false, false);
  for (size_t byte = 0; byte < 32; ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> q = p;
      q[byte] ^= uint8_t(1u << bit);
      EXPECT_NE(decode_error(q), ErrorCode::kOk) << "byte " << byte << " bit " << bit;
    }
}

TEST(Payload, NonFiniteScaleIsCorrupt) {
  std::vector<uint8_t> p = sample_payload(false, false);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(p.data() + 32 + 4, &nan, 4);
  EXPECT_EQ(decode_error(p), ErrorCode::kCorruptPayload);
}

TEST(Payload, BadSpecialSectionIsCorrupt) {
  std::vector<uint8_t> p = sample_payload(false, true);
  const size_t special = 32 + 4 * 5 + 300;  // header, 5 scales, 300 codes
  uint32_t index;
  std::memcpy(&index, p.data() + special, 4);
  ASSERT_EQ(index, 1u);
  std::vector<uint8_t> q = p;
  const uint32_t bad = 5;  // past the last block
  std::memcpy(q.data() + special, &bad, 4);
  EXPECT_EQ(decode_error(q), ErrorCode::kCorruptPayload);
  // A NaN class past the end of the (44-element) tail block.
  std::vector<uint8_t> r = p;
  const uint32_t last = 4;
  std::memcpy(r.data() + special, &last, 4);
  r[special + 4 + 60 / 4] = 1;
  EXPECT_EQ(decode_error(r), ErrorCode::kCorruptPayload);
}

TEST(Payload, ChecksumCatchesBodyCorruption) {
  const std::vector<uint8_t> p = sample_payload(true, false);
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    std::vector<uint8_t> q = p;
    q[32 + rng() % (q.size() - 32)] ^= uint8_t(1u << (rng() % 8));
    EXPECT_EQ(decode_error(q), ErrorCode::kCorruptPayload);
  }
}

TEST(Payload, RandomBytesNeverCrash) {
  std::mt19937 rng(5);
  const std::vector<uint8_t> p = sample_payload(false, true);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> q = p;
    const int flips = 1 + int(rng() % 8);
    for (int f = 0; f < flips; ++f) q[rng() % q.size()] = uint8_t(rng());
    try {
      const PayloadInfo info = inspect(q.data(), q.size());
      if (info.count > 1000) continue;
      std::vector<float> out(info.count);
      decode(q.data(), q.size(), out.data(), out.size());
    } catch (const Error&) {
    }
  }
}

TEST(Payload, NullPointersAreRejected) {
  EXPECT_THROW(inspect(nullptr, 10), Error);
  EXPECT_THROW(encode(nullptr, 10, CodecOptions{}, nullptr, 0), Error);
}

}  // namespace
}  // namespace octet
