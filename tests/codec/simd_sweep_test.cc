// The SIMD block kernels against the scalar reference, element by element, over float bit patterns
// rather than over realistic data: the SIMD encoders compute levels arithmetically and fall back to
// the exact lookup near decision points (AVX-512), or look levels up in a re-encoded bucket table
// (AVX2, bucket_keys.h), so the interesting inputs are the floats right at and around every
// threshold and magnitude, and every float in between.
//
// * On the best target this CPU runs, every float bit pattern from 2^-26 to 2 of both signs
//   (about 4.5 * 10^8 patterns) goes through the round-to-nearest encoder of the dynamic tree: an
//   exhaustive check of the range where its levels are.
// * On any CPU: the re-encoded bucket table against quant_math.h's lookup, for every type, at every
//   bucket's edges and threshold.
// * The same range through the stochastic encoder of the dynamic tree (one uniform per float).
// * On every target: dense sweeps (+-64 ulps) around every threshold, magnitude and power of two,
//   a strided sweep over all finite floats and the special values, for every type, for
//   round-to-nearest and stochastic rounding (several seeds and first indices, and a
//   non-trivial normalisation); for stochastic rounding also inputs placed at the decision itself
//   (lo + u * (hi - lo) +- 4 ulps for each element's own uniform u, in every interval); every code
//   of every type decoded with edge scales (and, on AVX2, by the value plan's arithmetic).
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "codec/block_kernels.h"
#include "codec/bucket_keys.h"
#include "codec/segments.h"
#include "codec/tables.h"
#include "codec/value_plan.h"

namespace octet {
namespace {

using codec::BlockKernels;
using detail::bits_float;
using detail::float_bits;

const detail::BlockScale kUnitScale{1.0f, 1.0f, 1.0f};

// Patterns around every decision point of a table: thresholds, magnitudes, powers of two.
std::vector<uint32_t> decision_points(const detail::QuantTable& t) {
  std::vector<uint32_t> points;
  for (uint32_t k = 0; k <= t.top; ++k) {
    const float m = t.magnitude[k];
    points.push_back(float_bits(m));
    if (k < t.top) {
      const double mid = (double(m) + double(t.magnitude[k + 1])) / 2.0;
      points.push_back(float_bits(static_cast<float>(mid)));
    }
  }
  for (uint32_t e = 90; e <= 128; ++e) points.push_back(e << 23);
  return points;
}

std::vector<float> sweep_inputs(const detail::QuantTable& t) {
  std::vector<uint32_t> bits;
  for (uint32_t p : decision_points(t))
    for (int d = -64; d <= 64; ++d) bits.push_back(p + static_cast<uint32_t>(d));
  for (uint64_t u = 0; u < 0x7f800000u; u += 7919) bits.push_back(static_cast<uint32_t>(u));
  for (uint32_t u : {0x7f800000u, 0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0u, 1u, 0x3f800000u})
    bits.push_back(u);
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) bits.push_back(rng() & 0x3fffffffu);
  std::vector<float> x;
  for (uint32_t u : bits) {
    x.push_back(bits_float(u));
    x.push_back(bits_float(u | 0x80000000u));
  }
  return x;
}

// Index of the first differing byte, or n.
size_t first_difference(const uint8_t* a, const uint8_t* b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return i;
  return n;
}

std::string describe(const std::vector<float>& x, size_t i, const uint8_t* simd,
                     const uint8_t* scalar) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "x=%a (bits %08x) simd code %u, scalar code %u, target %s",
                double(x[i]), float_bits(x[i]), simd[i], scalar[i], codec::simd_target_name());
  return buf;
}

void expect_nearest_equal(const detail::QuantTable& t, const std::vector<float>& x,
                          const detail::BlockScale& s) {
  std::vector<uint8_t> simd(x.size()), scalar(x.size());
  codec::simd_kernels().encode_nearest(t, x.data(), x.size(), s, simd.data());
  codec::scalar_kernels().encode_nearest(t, x.data(), x.size(), s, scalar.data());
  const size_t i = first_difference(simd.data(), scalar.data(), x.size());
  ASSERT_EQ(i, x.size()) << describe(x, i, simd.data(), scalar.data());
}

void expect_stochastic_equal(const detail::QuantTable& t, const std::vector<float>& x,
                             uint64_t seed, uint64_t first,
                             const detail::BlockScale& s = kUnitScale) {
  std::vector<uint8_t> simd(x.size()), scalar(x.size());
  codec::simd_kernels().encode_stochastic(t, x.data(), x.size(), s, seed, first, simd.data());
  codec::scalar_kernels().encode_stochastic(t, x.data(), x.size(), s, seed, first, scalar.data());
  const size_t i = first_difference(simd.data(), scalar.data(), x.size());
  ASSERT_EQ(i, x.size()) << "stochastic, seed " << seed << " first index " << first << ", "
                         << describe(x, i, simd.data(), scalar.data());
}

// Seeds and first indices for the stochastic sweeps: the stream key, the low index bits and the
// lanes' alignment all vary (none of these crosses a multiple of 2^32, where the kernel hands the
// whole call to the scalar reference).
const std::pair<uint64_t, uint64_t> kStreams[] = {{12345, 0},
                                                  {1, 3},
                                                  {0x9876543210ull, (uint64_t{7} << 32) + 100003},
                                                  {~uint64_t{0}, 0xfff00005u}};

// Inputs at the stochastic decision itself: element i (stream index first + i) is
// lo + u_i * (hi - lo) for its own uniform u_i and an interval [lo, hi] of adjacent magnitudes,
// moved by -4..4 ulps, both signs, every interval in turn. These are the lanes the SIMD kernel
// must recognise as too close to call (they go to the exact lookup) or decide exactly as the
// reference's fp32 comparison does.
std::vector<float> stochastic_boundary_inputs(const detail::QuantTable& t, uint64_t seed,
                                              uint64_t first, size_t rounds) {
  std::vector<float> x(18 * size_t{t.top} * rounds);
  for (size_t i = 0; i < x.size(); ++i) {
    const uint32_t k = static_cast<uint32_t>(i / 18) % t.top;
    const int ulps = static_cast<int>(i % 9) - 4;
    const double lo = t.magnitude[k], hi = t.magnitude[k + 1];
    const double u = detail::uniform01(seed, first + i);
    const uint32_t bits = float_bits(static_cast<float>(lo + u * (hi - lo)));
    const uint32_t a = ulps < 0 && bits < 4u ? bits : bits + static_cast<uint32_t>(ulps);
    x[i] = bits_float((i / 9) % 2 ? a | 0x80000000u : a);
  }
  return x;
}

// Every code nine times in one block (2309 codes of an 8-bit type: longer than the default block
// of 2048, from which AVX-512 with VBMI decodes from prescaled tables, as it does without from
// 512), for scales of both signs, zeros, an underflowing product, non-finite ones and those at the
// edge of the AVX2 decoder's arithmetic (value_plan.h's plan_scale_ok).
void expect_decode_equal(const detail::QuantTable& t) {
  std::vector<uint8_t> codes;
  for (int rep = 0; rep < 9; ++rep)
    for (uint32_t c = 0; c < (1u << t.bits); ++c) codes.push_back(static_cast<uint8_t>(c));
  for (uint32_t c = 0; c < 5; ++c)  // a tail shorter than a vector
    codes.push_back(static_cast<uint8_t>((37 * c) & ((1u << t.bits) - 1)));
  // Payloads hold finite scales only (validate_payload); the kernels are checked beyond them.
  const float kInf = std::numeric_limits<float>::infinity();
  for (float scale : {1.0f, -1.0f, 0.0f, -0.0f, 3.7e-3f, -2.5e30f, 1e-40f, -3e38f, -kInf,
                      std::numeric_limits<float>::quiet_NaN(), 0x1p-100f, -0x1p-100f,
                      0x1.fffffep-101f, -0x1p-126f}) {
    for (bool accumulate : {false, true}) {
      // A NaN decoded from a non-finite scale plus a NaN in out is either NaN, by operand order,
      // which the compiler may swap (it did under ASan): not a rule to check.
      if (accumulate && !std::isfinite(scale)) continue;
      // What accumulate adds to: zeros of both signs, non-finite values, denormals, large values.
      const float start[] = {0.25f,
                             -0.0f,
                             0.0f,
                             std::numeric_limits<float>::quiet_NaN(),
                             -std::numeric_limits<float>::infinity(),
                             1e-42f,
                             -3e38f,
                             7.5f,
                             -1.0f};
      std::vector<float> simd(codes.size());
      for (size_t i = 0; i < simd.size(); ++i) simd[i] = start[i % (sizeof start / sizeof *start)];
      std::vector<float> scalar = simd;
      const uint32_t block = static_cast<uint32_t>(codes.size());  // one block, one scale
      const uint8_t* scales = reinterpret_cast<const uint8_t*>(&scale);
      codec::simd_kernels().decode(t, codes.data(), codes.size(), block, scales, simd.data(),
                                   accumulate);
      codec::scalar_kernels().decode(t, codes.data(), codes.size(), block, scales, scalar.data(),
                                     accumulate);
      ASSERT_EQ(0, std::memcmp(simd.data(), scalar.data(), 4 * codes.size()))
          << "scale " << scale << " target " << codec::simd_target_name();
    }
  }
}

std::vector<const detail::QuantTable*> all_tables() {
  std::vector<const detail::QuantTable*> tables;
  for (DataType type : all_data_types()) tables.push_back(&codec::quant_table(type));
  tables.push_back(&codec::quant_table(DataType::kMantissa, 5));
  return tables;
}

// Runs check() once per SIMD target this CPU supports.
template <typename Fn>
void on_every_target(Fn check) {
  const uint64_t supported = static_cast<uint64_t>(hwy::SupportedTargets());
  for (uint64_t bit = 1; bit != 0 && bit <= supported; bit <<= 1) {
    if (!(supported & bit)) continue;
    hwy::SetSupportedTargetsForTest(static_cast<int64_t>(bit));
    check();
    if (::testing::Test::HasFatalFailure()) break;
  }
  hwy::SetSupportedTargetsForTest(0);
}

// The arithmetic path these sweeps are about must actually run for the dynamic tree (the plan
// proves its margins when it is built; an unusable plan would silently test the bucket path).
TEST(SimdSweep, DynamicTreeHasAnArithmeticPlan) {
  EXPECT_TRUE(codec::segment_plan(codec::quant_table(DataType::kDynamic)).usable);
  std::string usable;
  for (DataType type : all_data_types())
    if (codec::segment_plan(codec::quant_table(type)).usable)
      usable += std::string(data_type_name(type)) + " ";
  std::printf("types with an arithmetic plan: %s\n", usable.c_str());
}

// The AVX2 decoder's arithmetic (value_plan.h) must be there for the default type, or its third of
// every vector silently goes back to table loads; where there is a plan, it reproduces every
// code's value bit for bit (value_plan checks that too: this is the check of that check).
TEST(SimdSweep, DynamicAndLinearHaveADecodePlan) {
  for (DataType type : all_data_types()) {
    const detail::QuantTable& t = codec::quant_table(type);
    const codec::ValuePlan& p = codec::value_plan(t);
    const bool expected = type == DataType::kDynamic || type == DataType::kLinear;
    EXPECT_EQ(p.usable, expected) << data_type_name(type);
    if (!p.usable) continue;
    for (uint32_t c = 0; c < 256; ++c)
      ASSERT_EQ(float_bits(codec::plan_value(p, c)), float_bits(t.value[c]))
          << data_type_name(type) << " code " << c;
  }
  EXPECT_FALSE(codec::value_plan(codec::quant_table(DataType::kMantissa, 5)).usable);
  EXPECT_TRUE(codec::plan_scale_ok(0x1p-100f) && codec::plan_scale_ok(-3e38f));
  for (float scale : {0x1.fffffep-101f, 0.0f, -0.0f, 1e-40f, HUGE_VALF, -HUGE_VALF, NAN})
    EXPECT_FALSE(codec::plan_scale_ok(scale)) << scale;
}

// The same for stochastic rounding (segments.h's StochasticPlan).
TEST(SimdSweep, DynamicTreeHasAStochasticPlan) {
  EXPECT_TRUE(codec::stochastic_plan(codec::quant_table(DataType::kDynamic)).usable);
  std::string usable;
  for (DataType type : all_data_types()) {
    const codec::StochasticPlan& p = codec::stochastic_plan(codec::quant_table(type));
    if (p.usable)
      usable += std::string(data_type_name(type)) + " (margin 2^" +
                std::to_string(int(std::log2(p.margin))) + ") ";
  }
  std::printf("types with a stochastic plan: %s\n", usable.c_str());
}

// The AVX2 encoder's table (bucket_keys.h) decides like the bucket table it is made from, on any
// CPU: for every type, the first and last floats of every bucket, its threshold and the floats
// next to it, and every decision point of the sweeps.
TEST(SimdSweep, BucketKeysGiveTheLevelsOfTheBucketLookup) {
  for (const detail::QuantTable* t : all_tables()) {
    const codec::BucketKeys& keys = codec::bucket_keys(*t);
    ASSERT_EQ(keys.key.size(), t->lut_size);
    std::vector<uint32_t> probes;
    const uint32_t first = t->lo_bits >> t->shift, width = 1u << t->shift;
    for (uint32_t b = 0; b < t->lut_size; ++b) {
      const uint32_t start = (first + b) << t->shift;
      const uint32_t offset = t->lut[b] & ((1u << detail::kThresholdBits) - 1u);
      for (uint32_t o : {0u, 1u, offset - 1u, offset, offset + 1u, width - 2u, width - 1u})
        if (o < width) probes.push_back(start + o);
    }
    for (uint32_t p : decision_points(*t))
      for (int d = -2; d <= 2; ++d) probes.push_back(p + static_cast<uint32_t>(d));
    for (uint32_t a : probes) {
      if (a < t->lo_bits || a > detail::kOneBits) continue;
      ASSERT_EQ(codec::bucket_key_level(keys, *t, a), detail::nearest_level(*t, a))
          << "bits " << std::hex << a << ", bits " << std::dec << t->bits << ", top " << t->top;
    }
  }
}

TEST(SimdSweep, NearestEqualsScalarAroundEveryDecisionPoint) {
  on_every_target([] {
    for (const detail::QuantTable* t : all_tables()) {
      const std::vector<float> x = sweep_inputs(*t);
      expect_nearest_equal(*t, x, kUnitScale);
      // The same inputs through a non-trivial normalisation (pre = 2^32, a negative scale).
      expect_nearest_equal(*t, x, detail::make_block_scale(0.0f, -3e-39f, 0));
      if (::testing::Test::HasFatalFailure()) return;
    }
  });
}

TEST(SimdSweep, StochasticEqualsScalarAroundEveryDecisionPoint) {
  on_every_target([] {
    for (const detail::QuantTable* t : all_tables()) {
      const std::vector<float> x = sweep_inputs(*t);
      for (const auto& stream : kStreams)
        expect_stochastic_equal(*t, x, stream.first, stream.second);
      // The same inputs through a non-trivial normalisation (pre = 2^32, a negative scale).
      expect_stochastic_equal(*t, x, 777, 64, detail::make_block_scale(0.0f, -3e-39f, 0));
      // A call that crosses a multiple of 2^32 (the scalar reference does all of it).
      expect_stochastic_equal(*t, x, 0x9876543210ull, (uint64_t{7} << 32) - 5000);
      if (::testing::Test::HasFatalFailure()) return;
    }
  });
}

TEST(SimdSweep, StochasticEqualsScalarAtTheDecision) {
  on_every_target([] {
    for (const detail::QuantTable* t : all_tables()) {
      for (const auto& stream : kStreams) {
        const std::vector<float> x =
            stochastic_boundary_inputs(*t, stream.first, stream.second, t->top > 16 ? 24 : 400);
        expect_stochastic_equal(*t, x, stream.first, stream.second);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  });
}

TEST(SimdSweep, DecodeEqualsScalarForEveryCode) {
  on_every_target([] {
    for (const detail::QuantTable* t : all_tables()) expect_decode_equal(*t);
  });
}

// decode_stream of codes in blocks of `block` writes the scalar decode's bytes at every alignment
// of the output, and nothing around them. Blocks take scales of alternating signs, block 5 -0.
void expect_decode_stream_equal(const detail::QuantTable& t, const std::vector<uint8_t>& codes,
                                uint32_t block) {
  const size_t n = codes.size();
  std::vector<float> scale_of((n + block - 1) / block);
  for (size_t b = 0; b < scale_of.size(); ++b)
    scale_of[b] = b == 5 ? -0.0f : (b % 2 ? 3.7e-3f : -3.7e-3f) * float(b + 1);
  const uint8_t* scales = reinterpret_cast<const uint8_t*>(scale_of.data());
  std::vector<uint8_t> buffer(4 * n + 128, 0xAB), expect(4 * n);
  codec::scalar_kernels().decode(t, codes.data(), n, block, scales,
                                 reinterpret_cast<float*>(expect.data()), false);
  const size_t base = (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64;
  for (size_t offset : {0, 4, 8, 12, 16, 20, 24, 28, 36, 60, 1, 2, 3, 33}) {
    std::fill(buffer.begin(), buffer.end(), uint8_t{0xAB});
    float* out = reinterpret_cast<float*>(buffer.data() + base + offset);
    codec::simd_kernels().decode_stream(t, codes.data(), n, block, scales, out);
    codec::simd_kernels().fence();
    ASSERT_EQ(0, std::memcmp(buffer.data() + base + offset, expect.data(), 4 * n))
        << "block " << block << ", offset " << offset << ", target " << codec::simd_target_name();
    if (offset > 0) {
      ASSERT_EQ(buffer[base + offset - 1], 0xAB) << "wrote before the start";
    }
    ASSERT_EQ(buffer[base + offset + 4 * n], 0xAB) << "wrote past the end";
  }
}

// decode_stream (non-temporal stores from the first 32- or, with VBMI, 64-byte aligned element on)
// writes what the scalar decode writes, at every alignment of the output, including ones that are
// not a float's, over a run of blocks of 64, 512 or 2048 with their own scales (so that a vector
// straddles two blocks where the output is not aligned; one block of scale -0) and a short last
// block.
TEST(SimdSweep, DecodeStreamEqualsScalarAtEveryAlignment) {
  on_every_target([] {
    for (const detail::QuantTable* t : all_tables()) {
      std::vector<uint8_t> codes;
      for (int rep = 0; rep < 9; ++rep)
        for (uint32_t c = 0; c < (1u << t->bits); ++c) codes.push_back(static_cast<uint8_t>(c));
      for (uint32_t c = 0; c < 37; ++c)
        codes.push_back(static_cast<uint8_t>((37 * c) & ((1u << t->bits) - 1)));
      // 512 and 2048: AVX-512 without and with VBMI prescale their tables from there
      for (uint32_t block : {64u, 512u, 2048u}) expect_decode_stream_equal(*t, codes, block);
    }
  });
}

// Every float from 2^-26 to 2 (both signs), in chunks, on the dispatched (best) target.
TEST(SimdSweep, NearestEqualsScalarForEveryFloatUpToTwo) {
  constexpr uint32_t kFirst = 101u << 23, kEnd = 128u << 23, kChunk = 1u << 20;
  std::vector<float> x(2 * kChunk);
  for (DataType type : {DataType::kDynamic}) {
    const detail::QuantTable& t = codec::quant_table(type);
    for (uint32_t base = kFirst; base < kEnd; base += kChunk) {
      for (uint32_t i = 0; i < kChunk; ++i) {
        x[2 * i] = bits_float(base + i);
        x[2 * i + 1] = bits_float((base + i) | 0x80000000u);
      }
      expect_nearest_equal(t, x, kUnitScale);
      if (HasFatalFailure()) return;
    }
  }
}

// Every float from 2^-26 to 2 (both signs) through stochastic rounding of the types with a
// stochastic plan, on the dispatched (best) target, each chunk with its own stream.
TEST(SimdSweep, StochasticEqualsScalarForEveryFloatUpToTwo) {
  constexpr uint32_t kFirst = 101u << 23, kEnd = 128u << 23, kChunk = 1u << 20;
  std::vector<float> x(2 * kChunk);
  for (DataType type : {DataType::kDynamic}) {
    const detail::QuantTable& t = codec::quant_table(type);
    for (uint32_t base = kFirst; base < kEnd; base += kChunk) {
      for (uint32_t i = 0; i < kChunk; ++i) {
        x[2 * i] = bits_float(base + i);
        x[2 * i + 1] = bits_float((base + i) | 0x80000000u);
      }
      expect_stochastic_equal(t, x, base, uint64_t{base} * 3);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace octet
