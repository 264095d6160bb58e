// Round trips: error bounds per type and block size, exact extremes, special values, SIMD vs
// scalar bit identity, threads, unaligned pointers.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#if !defined(_WIN32)
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <hwy/targets.h>

#include "codec/backend.h"
#include "codec/worker_pool.h"
#include "test_util.h"

namespace octet {
namespace {

using testing_util::first_bound_violation;
using testing_util::normal_data;
using testing_util::options_for;

// x with a mix of scales per block, so that blocks differ.
std::vector<float> mixed_data(size_t n, uint64_t seed) {
  std::vector<float> x = normal_data(n, seed);
  for (size_t i = 0; i < n; ++i) x[i] *= std::ldexp(1.0f, int(i / 97 % 40) - 20);
  return x;
}

struct RoundTripCase {
  DataType type;
  uint32_t block;
};

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTrip, StaysWithinTheDocumentedBound) {
  const auto [type, block] = GetParam();
  for (size_t n :
       {size_t{1}, size_t{63}, size_t{block} - 1, size_t{block} + 1, size_t{3} * block + 17}) {
    std::vector<float> x = mixed_data(n, n);
    if (type == DataType::kDynamicUnsigned)
      for (auto& v : x) v = std::fabs(v);
    const std::vector<float> y = decode(encode(x, options_for(type, block)));
    ASSERT_EQ(y.size(), x.size());
    const size_t bad = first_bound_violation(x, y, block, bound_fraction(type));
    ASSERT_EQ(bad, x.size()) << "n=" << n << " x=" << x[bad] << " y=" << y[bad];
  }
}

TEST_P(RoundTrip, BlockExtremeComesBackExactlyWhateverItsSign) {
  const auto [type, block] = GetParam();
  std::vector<float> x = normal_data(2 * block, 3);
  x[5] = -100.0f;         // negative extreme of block 0
  x[block + 9] = 77.25f;  // positive extreme of block 1
  if (type == DataType::kDynamicUnsigned) {
    for (size_t i = 0; i < block; ++i) x[i] = -std::fabs(x[i]);  // single-signed blocks
    for (size_t i = block; i < 2 * block; ++i) x[i] = std::fabs(x[i]);
  }
  const std::vector<float> y = decode(encode(x, options_for(type, block)));
  EXPECT_EQ(y[5], -100.0f);
  EXPECT_EQ(y[block + 9], 77.25f);
}

std::vector<RoundTripCase> round_trip_cases() {
  std::vector<RoundTripCase> cases;
  for (DataType t : all_data_types())
    for (uint32_t b : {64u, 128u, 2048u, 65536u}) cases.push_back({t, b});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(TypesAndBlocks, RoundTrip, ::testing::ValuesIn(round_trip_cases()),
                         [](const auto& info) {
                           return std::string(data_type_name(info.param.type)) + "_" +
                                  std::to_string(info.param.block);
                         });

TEST(Codec, BothSignsOfTheExtremeStayInsideTheBound) {
  std::vector<float> x(64, 0.25f);
  x[0] = 2.0f;
  x[1] = -2.0f;
  const std::vector<float> y = decode(encode(x, options_for(DataType::kDynamic, 64)));
  EXPECT_EQ(y[0], 2.0f) << "ties between +m and -m keep +m exact";
  EXPECT_LE(std::fabs(y[1] + 2.0f), bound_fraction(DataType::kDynamic) * 2.0);
}

TEST(Codec, NonFiniteValuesComeBackWhereTheyWere) {
  for (DataType type : all_data_types()) {
    std::vector<float> x = normal_data(300, 11);
    if (type == DataType::kDynamicUnsigned)
      for (auto& v : x) v = std::fabs(v);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[4] = std::numeric_limits<float>::infinity();
    x[150] = -std::numeric_limits<float>::infinity();
    x[299] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<uint8_t> p = encode(x, options_for(type, 64));
    EXPECT_EQ(inspect(p.data(), p.size()).special_blocks, 3u);
    const std::vector<float> y = decode(p);
    EXPECT_TRUE(std::isnan(y[3]));
    EXPECT_EQ(y[4], std::numeric_limits<float>::infinity());
    EXPECT_EQ(y[150], -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(y[299]));
    EXPECT_EQ(first_bound_violation(x, y, 64, bound_fraction(type)), x.size())
        << data_type_name(type);
  }
}

TEST(Codec, AllZeroAndAllNonFiniteBlocksDecodeExactly) {
  std::vector<float> x(200, 0.0f);
  x[7] = -0.0f;
  for (size_t i = 128; i < 192; ++i) x[i] = std::numeric_limits<float>::infinity();
  const std::vector<float> y = decode(encode(x, options_for(DataType::kDynamic, 64)));
  for (size_t i = 0; i < 128; ++i) ASSERT_EQ(y[i], 0.0f);
  for (size_t i = 128; i < 192; ++i) ASSERT_EQ(y[i], std::numeric_limits<float>::infinity());
  for (size_t i = 192; i < 200; ++i) ASSERT_EQ(y[i], 0.0f);
}

TEST(Codec, DenormalBlocksKeepTheirRelativeBound) {
  std::vector<float> x = normal_data(256, 5);
  for (auto& v : x) v *= 1e-39f;  // all denormal: 1 / absmax would overflow without rescaling
  x[10] = -3e-39f;
  for (DataType type : {DataType::kDynamic, DataType::kLinear, DataType::kDynamic4}) {
    const std::vector<float> y = decode(encode(x, options_for(type, 64)));
    EXPECT_EQ(first_bound_violation(x, y, 64, bound_fraction(type)), x.size())
        << data_type_name(type);
  }
  EXPECT_EQ(decode(encode(x, options_for(DataType::kDynamic, 64)))[10], -3e-39f);
}

TEST(Codec, EmptyTensorRoundTrips) {
  const std::vector<uint8_t> p = encode(std::vector<float>{}, CodecOptions{});
  EXPECT_EQ(p.size(), 32u);
  EXPECT_TRUE(decode(p).empty());
}

TEST(Codec, CompressionRatioIsNearFourForEightBitTypes) {
  const std::vector<float> x = normal_data(1 << 16, 1);
  EXPECT_GT(4.0 * x.size() / encode(x, CodecOptions{}).size(), 3.99);
  EXPECT_GT(4.0 * x.size() / encode(x, options_for(DataType::kDynamic4)).size(), 7.5);
}

TEST(Codec, UnsignedTypeRejectsMixedSignBlocks) {
  std::vector<float> x(64, 1.0f);
  x[3] = -1.0f;
  try {
    encode(x, options_for(DataType::kDynamicUnsigned, 64));
    FAIL() << "mixed signs must be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

TEST(Codec, BadOptionsAreRejected) {
  const std::vector<float> x(10, 1.0f);
  for (uint32_t block : {1u, 32u, 100u, 131072u})
    EXPECT_THROW(encode(x, options_for(DataType::kDynamic, block)), Error) << block;
  CodecOptions o;
  o.type = static_cast<DataType>(42);
  EXPECT_THROW(encode(x, o), Error);
  o = CodecOptions{};
  o.mantissa_exponent_offset = 3;  // only for the mantissa type
  EXPECT_THROW(encode(x, o), Error);
  std::vector<uint8_t> small(40);
  EXPECT_THROW(encode(x.data(), x.size(), CodecOptions{}, small.data(), small.size()), Error);
}

// The SIMD path must produce the scalar reference's bytes, for every size and alignment.
class SimdVsScalar : public ::testing::TestWithParam<DataType> {};

// Compares the SIMD path (whatever target the dispatch picked) with the scalar reference.
void expect_simd_equals_scalar(DataType type) {
  std::vector<float> base = mixed_data(5000, 9);
  base[77] = std::numeric_limits<float>::quiet_NaN();
  base[1000] = 1e-40f;
  if (type == DataType::kDynamicUnsigned)
    for (auto& v : base) v = std::fabs(v);
  std::vector<uint8_t> storage(base.size() * 4 + 8);
  for (uint32_t block : {64u, 2048u})
    for (size_t n : {0, 1, 7, 8, 15, 16, 17, 63, 64, 65, 100, 1023, 1024, 1025, 4999}) {
      for (size_t misalign : {0, 1, 3}) {
        float* x = reinterpret_cast<float*>(storage.data() + misalign);
        std::memcpy(x, base.data(), n * 4);
        CodecOptions o = options_for(type, block);
        o.mantissa_exponent_offset = type == DataType::kMantissa ? 2 : 0;
        o.stochastic = misalign == 1;  // stochastic rounding has a SIMD path too
        o.seed = n;
        o.index_offset = (uint64_t{1} << 32) - 100;  // crosses the 2^32 boundary of the stream
        std::vector<uint8_t> simd(max_encoded_size(n, o)), scalar(simd.size());
        octet::codec::set_force_scalar(true);
        const size_t ns = encode(x, n, o, scalar.data(), scalar.size());
        octet::codec::set_force_scalar(false);
        const size_t nv = encode(x, n, o, simd.data(), simd.size());
        ASSERT_EQ(ns, nv);
        ASSERT_EQ(0, std::memcmp(simd.data(), scalar.data(), ns))
            << "n=" << n << " " << simd_target();
        std::vector<uint8_t> out(n * 4 + 8);
        float* yv = reinterpret_cast<float*>(out.data() + misalign);
        std::vector<float> ys(n, 0.5f);
        for (size_t i = 0; i < n; ++i) std::memcpy(yv + i, &ys[i], 4);
        octet::codec::set_force_scalar(true);
        decode(scalar.data(), ns, ys.data(), n, DecodeMode::kAccumulate);
        octet::codec::set_force_scalar(false);
        decode(simd.data(), nv, yv, n, DecodeMode::kAccumulate);
        ASSERT_TRUE(n == 0 || std::memcmp(yv, ys.data(), n * 4) == 0)
            << "n=" << n << " " << simd_target();
      }
    }
}

// Every SIMD target this CPU supports (AVX3_DL, AVX3, AVX2, SSE4 ... as compiled into the
// library) is forced in turn, so one machine checks all the code paths a binary may take.
TEST_P(SimdVsScalar, PayloadsAndDecodesAreBitIdenticalOnEveryTarget) {
  std::set<std::string> seen;
  const uint64_t supported = static_cast<uint64_t>(hwy::SupportedTargets());
  for (uint64_t bit = 1; bit != 0 && bit <= supported; bit <<= 1) {
    if (!(supported & bit)) continue;
    hwy::SetSupportedTargetsForTest(static_cast<int64_t>(bit));
    seen.insert(simd_target());
    expect_simd_equals_scalar(GetParam());
  }
  hwy::SetSupportedTargetsForTest(0);  // back to the real CPU
  EXPECT_FALSE(seen.empty());
  std::string names;
  for (const auto& s : seen) names += s + " ";
  RecordProperty("simd_targets", names);
  std::printf("SIMD targets checked: %s\n", names.c_str());
}

INSTANTIATE_TEST_SUITE_P(AllTypes, SimdVsScalar, ::testing::ValuesIn(all_data_types()),
                         [](const auto& info) { return std::string(data_type_name(info.param)); });

TEST(Codec, ThreadsDoNotChangeTheBytes) {
  const std::vector<float> x = mixed_data((1 << 20) + 333, 4);
  CodecOptions one, many;
  one.threads = 1;
  many.threads = 4;
  const std::vector<uint8_t> a = encode(x, one), b = encode(x, many);
  ASSERT_EQ(a, b);
  std::vector<float> ya(x.size()), yb(x.size());
  decode(a.data(), a.size(), ya.data(), ya.size(), DecodeMode::kOverwrite, 1);
  decode(b.data(), b.size(), yb.data(), yb.size(), DecodeMode::kOverwrite, 4);
  EXPECT_EQ(0, std::memcmp(ya.data(), yb.data(), 4 * x.size()));
}

// A decode whose output is larger than the last-level cache writes it with non-temporal stores:
// the same floats as the scalar reference, at a 4-byte-aligned but not 32-byte-aligned address as
// well, on one thread and on several, with the non-finite values restored after those stores.
TEST(Codec, DecodesLargerThanTheCachesGiveTheSameFloats) {
  const uint64_t threshold = octet::codec::streaming_decode_bytes();
  if (threshold > (uint64_t{64} << 20)) GTEST_SKIP() << "last-level cache above 64 MiB";
  const size_t n = static_cast<size_t>(threshold / 4) + 3 * 2048 + 5;
  std::vector<float> x = normal_data(n, 21);
  x[7] = std::numeric_limits<float>::quiet_NaN();
  x[n - 2] = -std::numeric_limits<float>::infinity();
  const std::vector<uint8_t> p = encode(x, CodecOptions{});
  std::vector<float> expect(n);
  octet::codec::set_force_scalar(true);
  decode(p.data(), p.size(), expect.data(), n, DecodeMode::kOverwrite, 1);
  octet::codec::set_force_scalar(false);
  std::vector<float> y(n + 8);
  for (int threads : {1, 2}) {
    for (size_t shift : {0, 1}) {
      std::fill(y.begin(), y.end(), 0.25f);
      decode(p.data(), p.size(), y.data() + shift, n, DecodeMode::kOverwrite, threads);
      ASSERT_EQ(0, std::memcmp(y.data() + shift, expect.data(), 4 * n))
          << threads << " threads, shift " << shift;
      ASSERT_EQ(y[shift + n], 0.25f);
    }
  }
  EXPECT_TRUE(std::isnan(expect[7]));
  EXPECT_EQ(expect[n - 2], -std::numeric_limits<float>::infinity());
}

// Payloads and decodes for a tensor of a few million elements, with NaN/Inf in several ranges,
// whatever the thread count (1: calling thread only; 0: auto; 7 > cores: more ranges than workers).
TEST(Codec, EveryThreadCountGivesTheSameBytesAndFloats) {
  std::vector<float> x = mixed_data((size_t{3} << 20) + 333, 6);
  for (size_t i : {size_t{5}, x.size() / 3, x.size() / 2 + 1, x.size() - 1})
    x[i] = std::numeric_limits<float>::quiet_NaN();
  for (DataType type : {DataType::kDynamic, DataType::kDynamic4}) {
    CodecOptions o = options_for(type);
    o.stochastic = type == DataType::kDynamic4;
    o.threads = 1;
    const std::vector<uint8_t> expected = encode(x, o);
    std::vector<float> expected_y(x.size());
    decode(expected.data(), expected.size(), expected_y.data(), x.size(), DecodeMode::kOverwrite,
           1);
    for (int threads : {0, 1, 2, 3, 7}) {
      o.threads = threads;
      ASSERT_EQ(encode(x, o), expected) << data_type_name(type) << " threads=" << threads;
      std::vector<float> y(x.size());
      decode(expected.data(), expected.size(), y.data(), y.size(), DecodeMode::kOverwrite, threads);
      ASSERT_EQ(0, std::memcmp(y.data(), expected_y.data(), 4 * x.size()))
          << data_type_name(type) << " threads=" << threads;
    }
  }
}

// Several application threads (an MPI_THREAD_MULTIPLE program on several communicators) share
// the worker pool.
TEST(Codec, ConcurrentCallersGetTheSingleThreadedBytes) {
  const std::vector<float> x = mixed_data(size_t{1} << 21, 7);
  CodecOptions one;
  one.threads = 1;
  const std::vector<uint8_t> expected = encode(x, one);
  constexpr int kCallers = 4, kRounds = 5;
  std::vector<int> mismatches(kCallers, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      CodecOptions o;
      o.threads = 0;
      std::vector<float> y(x.size());
      for (int r = 0; r < kRounds; ++r) {
        const std::vector<uint8_t> p = encode(x, o);
        if (p != expected) ++mismatches[c];
        decode(p.data(), p.size(), y.data(), y.size(), DecodeMode::kOverwrite, 0);
        if (y != decode(expected)) ++mismatches[c];
      }
    });
  for (auto& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(mismatches[c], 0) << "caller " << c;
}

TEST(WorkerPool, RethrowsTheFirstExceptionOnceNoPartRuns) {
  std::atomic<int> running{0}, ran{0};
  auto part = [&](int p) {
    ++running;
    ++ran;
    if (p == 2) {
      --running;
      throw std::runtime_error("part 2");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --running;
  };
  try {
    codec::WorkerPool::instance().run(8, part);
    FAIL() << "the exception of part 2 must reach the caller";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 2");
  }
  EXPECT_EQ(running.load(), 0);
  EXPECT_GE(ran.load(), 3);  // parts 0-2 ran; later ones may have been skipped
  std::atomic<int> sum{0};
  auto add = [&](int p) { sum += p; };
  codec::WorkerPool::instance().run(8, add);  // the pool still works
  EXPECT_EQ(sum.load(), 28);
}

// A part that submits a job itself (as a caller thread could) must not deadlock the pool.
TEST(WorkerPool, NestedJobsFinish) {
  std::atomic<int> leaves{0};
  auto outer = [&](int) {
    auto inner = [&](int) { ++leaves; };
    codec::WorkerPool::instance().run(5, inner);
  };
  codec::WorkerPool::instance().run(6, outer);
  EXPECT_EQ(leaves.load(), 30);
}

// A child forked while the parent's pool is running (its mutex may be held by a worker that does
// not exist in the child) still encodes multi-threaded and gets the same bytes.
TEST(Codec, ForkedChildEncodesWithThreads) {
#if defined(_WIN32)
  GTEST_SKIP() << "no fork() on this platform";
#else
  const std::vector<float> x = mixed_data(size_t{1} << 21, 8);
  CodecOptions o;
  o.threads = 3;
  const std::vector<uint8_t> expected = encode(x, o);  // starts the pool in this process
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop) encode(x, o);
  });
  for (int round = 0; round < 10; ++round) {
    const pid_t pid = fork();
    if (pid < 0) {
      stop = true;
      busy.join();
      GTEST_SKIP() << "fork failed: " << std::strerror(errno);
    }
    if (pid == 0) {
      // The child reports through its exit status only; _exit skips gtest's and the parent's
      // atexit work.
      bool same = false;
      try {
        same = encode(x, o) == expected && encode(x, o) == expected;
      } catch (...) {
      }
      _exit(same ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "round " << round;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "round " << round;
  }
  stop = true;
  busy.join();
#endif
}

TEST(Codec, AccumulateAddsTheDecodedValues) {
  const std::vector<float> x = normal_data(1000, 2);
  const std::vector<uint8_t> p = encode(x, CodecOptions{});
  const std::vector<float> d = decode(p);
  std::vector<float> acc(x.size(), 1.0f);
  decode(p.data(), p.size(), acc.data(), acc.size(), DecodeMode::kAccumulate);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(acc[i], 1.0f + d[i]);
}

}  // namespace
}  // namespace octet
