// The one size grammar (include/octet/units.h, docs/units.md) and its C API twin.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <cstdint>
#include <string>

#include "octet/codec.h"
#include "octet/octet_c.h"
#include "octet/units.h"

namespace octet {
namespace {

TEST(ParseSize, BinaryUnitsInAnyCase) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("8"), 8u);
  EXPECT_EQ(parse_size("8B"), 8u);
  for (const char* k : {"64K", "64k", "64KB", "64kb", "64KiB", "64 KiB", "64 K"})
    EXPECT_EQ(parse_size(k), 65536u) << k;
  EXPECT_EQ(parse_size("1M"), uint64_t{1} << 20);
  EXPECT_EQ(parse_size("2 GiB"), uint64_t{2} << 30);
  EXPECT_EQ(parse_size("3T"), uint64_t{3} << 40);
  EXPECT_EQ(parse_size("1.5K"), 1536u);
  EXPECT_EQ(parse_size("0.25M"), uint64_t{1} << 18);
  EXPECT_EQ(parse_size("4611686018427387904"), uint64_t{1} << 62);
}

TEST(ParseSize, RejectsWithOneLine) {
  for (const char* bad :
       {"", " ", "K", "-1", "+1", "1e6", "0x10", "1.", ".5K", "1.1K", "64  K", "64 parsecs", "1KK",
        "5000000000T", "4611686018427387905", "99999999999999999999999",
        // 2^64 + 4 and 10 * 2^64 + 40960: a wrapping 64-bit accumulator read them as 4 and 40 KiB
        "18446744073709551620", "184467440737095516200K",
        "00000000000000000004611686018427387905"}) {
    try {
      parse_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      const std::string m = e.what();
      EXPECT_NE(m.find(std::string("'") + bad + "'"), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
}

// User text is quoted into the message (octet/detail/quoted.h): control bytes escaped, long text
// cut, so that the error stays one line.
TEST(ParseSize, QuotesWhatTheUserTypedOnOneLine) {
  try {
    parse_size("64\nK");
    ADD_FAILURE() << "accepted a newline";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'64\\x0aK'"), std::string::npos) << e.what();
  }
  try {
    parse_size(std::string(100, '7') + "Q");
    ADD_FAILURE() << "accepted 100 digits";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'" + std::string(64, '7') + "...'"), std::string::npos)
        << e.what();
  }
}

TEST(ParseSize, CApiAgrees) {
  uint64_t bytes = 0;
  EXPECT_EQ(octet_parse_size("64KB", &bytes), OCTET_OK);
  EXPECT_EQ(bytes, 65536u);
  EXPECT_EQ(octet_parse_size("64 parsecs", &bytes), OCTET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error_message()).find("unknown unit"), std::string::npos);
  EXPECT_EQ(octet_parse_size(nullptr, &bytes), OCTET_ERR_INVALID_ARGUMENT);
}

TEST(CApiRules, TypeNamesBlockRuleAndSizes) {
  octet_data_type t{};
  EXPECT_EQ(octet_data_type_from_name("Static-Tree", &t), OCTET_OK);
  EXPECT_EQ(t, OCTET_TYPE_STATIC_TREE);
  EXPECT_STREQ(octet_data_type_to_name(t), "static_tree");
  EXPECT_EQ(octet_data_type_from_name("bogus", &t), OCTET_ERR_INVALID_ARGUMENT);
  octet_options o;
  octet_options_init(&o);
  uint32_t block = 0;
  EXPECT_EQ(octet_options_validate(&o, &block), OCTET_OK);
  EXPECT_EQ(block, 2048u);
  o.block_size = 1000;
  EXPECT_EQ(octet_options_validate(&o, &block), OCTET_ERR_INVALID_ARGUMENT);
  o.block_size = 0;
  size_t bytes = 0;
  EXPECT_EQ(octet_encoded_size(4096, &o, &bytes), OCTET_OK);
  EXPECT_GT(bytes, 4096u);
  EXPECT_LT(bytes, 4096u + 64);
  EXPECT_STREQ(octet_status_string(OCTET_ERR_MISMATCH), "mismatch across ranks");
}

// The SIMD targets as the C API lists them: the C++ list joined by spaces, the running target in
// it, Highway's fallback last; the length of the whole list whatever the buffer, and a truncated
// copy that is still terminated.
TEST(CApiRules, SimdTargetsListWhatTheCodecCanRun) {
  std::string joined;
  for (const std::string& name : octet::simd_targets())
    joined += (joined.empty() ? "" : " ") + name;
  ASSERT_EQ(octet_simd_targets(nullptr, 0), joined.size());
  std::vector<char> full(joined.size() + 1, 'x');
  EXPECT_EQ(octet_simd_targets(full.data(), full.size()), joined.size());
  EXPECT_EQ(std::string(full.data()), joined);
  EXPECT_NE((" " + joined + " ").find(" " + octet::simd_target() + " "), std::string::npos);
  const std::string last = joined.substr(joined.find_last_of(' ') + 1);
  EXPECT_TRUE(last == "SCALAR" || last == "EMU128") << joined;  // Highway's fallback
  char small[4] = {'x', 'x', 'x', 'x'};
  EXPECT_EQ(octet_simd_targets(small, sizeof small), joined.size());
  EXPECT_EQ(std::string(small), joined.substr(0, 3));
}

// The codec through the C API (what the PMPI shim's point-to-point uses): the same bytes as the
// C++ API, exact size checks, a bad payload rejected without touching the output.
TEST(CApi, EncodeDecodeRoundTripAndErrors) {
  std::vector<float> x(5000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.01f * static_cast<float>(i));
  octet_options o;
  octet_options_init(&o);
  size_t capacity = 0, written = 0;
  ASSERT_EQ(octet_max_encoded_size(x.size(), &o, &capacity), OCTET_OK);
  std::vector<uint8_t> payload(capacity);
  ASSERT_EQ(octet_encode(x.data(), x.size(), &o, payload.data(), capacity, &written), OCTET_OK);
  EXPECT_EQ(payload.size(), capacity);
  payload.resize(written);
  EXPECT_EQ(payload, encode(x, CodecOptions{}));
  std::vector<float> y(x.size(), 7.0f);
  ASSERT_EQ(octet_decode(payload.data(), payload.size(), y.data(), y.size()), OCTET_OK);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 0.01) << i;
  EXPECT_EQ(octet_encode(x.data(), x.size(), &o, payload.data(), 10, &written),
            OCTET_ERR_INVALID_ARGUMENT);
  std::vector<float> untouched(x.size(), 7.0f);
  EXPECT_NE(octet_decode(payload.data(), payload.size() - 1, untouched.data(), x.size()),
            OCTET_OK);  // a truncated payload
  EXPECT_EQ(untouched, std::vector<float>(x.size(), 7.0f));
  EXPECT_EQ(octet_decode(payload.data(), payload.size(), y.data(), x.size() - 1),
            OCTET_ERR_MISMATCH);
}

}  // namespace
}  // namespace octet
