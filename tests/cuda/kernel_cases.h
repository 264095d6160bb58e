// Inputs and CPU answers shared by the kernel tests: the device code run on CPU threads
// (kernel_emulation_test.cc) and on a GPU (kernel_device_test.cc) must meet the same cases.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "codec/payload.h"
#include "codec/tables.h"
#include "codec_kernels.h"
#include "collectives/reduce_chunk.h"
#include "octet/codec.h"

namespace octet {
namespace kernel_cases {

inline std::vector<float> make_input(size_t n, uint32_t seed, bool non_negative) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Per 64 elements: denormals, zeros of both signs, absmax near 1e38 (1/absmax denormal
  // without the codec's rescaling), and a run of -0 (a block of them has the scale -0).
  const float scales[] = {1.0f, 1e-41f, 0.0f, 3e37f, 1e-3f, 6e37f, -0.0f};
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t kind = (i / 64) % 7;
    const float v = normal(rng) * scales[kind];
    x[i] = kind == 6 ? -0.0f : non_negative || (i / 128) % 4 == 3 ? std::fabs(v) : v;
  }
  if (n > 70) {
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[n - 1] = -std::numeric_limits<float>::infinity();
    x[n / 2] = std::numeric_limits<float>::infinity();
  }
  return x;
}

// Bitwise equality, except that any NaN matches any NaN (a GPU's NaN payload bits may differ).
inline bool same_float(float want, float got) {
  if (std::isnan(want) && std::isnan(got)) return true;
  uint32_t u, v;
  std::memcpy(&u, &want, 4);
  std::memcpy(&v, &got, 4);
  return u == v;
}

struct ReduceCase {
  DataType type;
  size_t n;
  uint32_t block;
  int ranks;
  int me;
  bool average;
  float magnitude;  // multiplies every contribution: large values make sums overflow
  size_t offset;    // bytes: misaligns the own values, the output and every payload
};

// What the owner of a chunk holds: the other ranks' payloads (CPU codec) and its own values, with
// the collectives' answer (reduce_contributions over the CPU decoder).
struct ReduceInputs {
  std::vector<std::vector<uint8_t>> payloads;  // payloads[me] is empty
  std::vector<codec::Layout> layouts;
  std::vector<uint32_t> specials;  // special blocks per payload
  std::vector<float> own;
  std::vector<float> want;
  size_t redone = 0;  // elements whose plain sum overflows while the average is finite
};

// Rank r's values: make_input's mix (NaN, +-Inf, -0, denormals, near-overflow blocks) times the
// case's magnitude.
inline std::vector<float> contribution(const ReduceCase& c, int r) {
  std::vector<float> x =
      make_input(c.n, 100 + static_cast<uint32_t>(r), c.type == DataType::kDynamicUnsigned);
  for (float& v : x) v *= c.magnitude;
  return x;
}

inline ReduceInputs reduce_inputs(const ReduceCase& c) {
  CodecOptions o;
  o.type = c.type;
  o.block_size = c.block;
  ReduceInputs in;
  in.payloads.resize(c.ranks);
  in.layouts.resize(c.ranks);
  in.specials.resize(c.ranks, 0);
  std::vector<float> plain(c.n, -0.0f);
  for (int r = 0; r < c.ranks; ++r) {
    const std::vector<float> x = contribution(c, r);
    for (size_t i = 0; i < c.n; ++i) plain[i] += x[i];
    if (r == c.me) {
      in.own = x;
      continue;
    }
    in.payloads[r] = encode(x, o);
    const PayloadInfo info = inspect(in.payloads[r].data(), in.payloads[r].size());
    in.specials[r] = info.special_blocks;
    in.layouts[r] = codec::make_layout(c.n, c.block, data_type_bits(c.type), info.special_blocks,
                                       info.has_checksum);
  }
  const auto want = detail::reduce_contributions(
      c.me, c.ranks, in.own.data(), c.n, c.average, [&](int r, float* to, bool accumulate) {
        decode(in.payloads[r].data(), in.payloads[r].size(), to, c.n,
               accumulate ? DecodeMode::kAccumulate : DecodeMode::kOverwrite);
      });
  in.want.assign(want.begin(), want.end());
  for (size_t i = 0; i < c.n; ++i)
    in.redone += c.average && std::isinf(plain[i]) && std::isfinite(in.want[i]) ? 1 : 0;
  return in;
}

// The reduce kernel's arguments for a case: descriptors, own values, table and output wherever
// the caller put them (host memory for the emulation, device memory on a GPU).
inline cuda_detail::ReduceArgs reduce_args(const ReduceCase& c,
                                           const cuda_detail::Contribution* from, const float* own,
                                           const detail::QuantTable* table, float* out) {
  cuda_detail::ReduceArgs a{};
  a.from = from;
  a.own = own;
  a.me = c.me;
  a.ranks = c.ranks;
  a.average = c.average;
  a.count = c.n;
  a.block = c.block;
  a.bits = data_type_bits(c.type);
  a.table = table;
  a.out = out;
  a.sms = 1;
  return a;
}

// The CPU codec's payload of a case's reduction, as the fused kernel must produce it.
struct Reencoded {
  CodecOptions options;
  std::vector<uint8_t> payload;
  PayloadInfo info;
  codec::Layout layout;
};

inline Reencoded reencoded(const ReduceCase& c, const ReduceInputs& in, bool stochastic) {
  Reencoded r;
  r.options.type = c.type;
  r.options.block_size = c.block;
  r.options.stochastic = stochastic;
  r.options.seed = 5;
  r.options.index_offset = 777;
  r.payload = encode(in.want, r.options);
  r.info = inspect(r.payload.data(), r.payload.size());
  r.layout = codec::make_layout(c.n, c.block, data_type_bits(c.type), r.info.special_blocks, false);
  return r;
}

// The encode kernel's arguments: input, the codec options (type, block, rounding), and the body
// laid out as the payload (scales at l.scales, codes at l.codes) with one flag byte per block;
// table_at is where the kernel reads the type's table (host memory in the emulation).
inline cuda_detail::EncodeArgs encode_args(const CodecOptions& o, const float* in, size_t n,
                                           const codec::Layout& l, uint8_t* body, uint8_t* flags,
                                           const detail::QuantTable* table_at) {
  const detail::QuantTable& table = codec::quant_table(o.type);
  cuda_detail::EncodeArgs a{};
  a.in = in;
  a.count = n;
  a.block = o.block_size;
  a.blocks = l.blocks;
  a.table = table_at;
  a.table_bytes = cuda_detail::table_bytes(table);
  a.stochastic = o.stochastic;
  a.seed = o.seed;
  a.index_offset = o.index_offset;
  a.scales = body + l.scales;
  a.codes = body + l.codes;
  a.flags = flags;
  a.bits = data_type_bits(o.type);
  return a;
}

// The blocks the kernel flagged as holding NaN/Inf against the CPU payload's special list.
inline void expect_same_special_blocks(const std::vector<uint8_t>& flags,
                                       const std::vector<uint8_t>& cpu, const codec::Layout& l,
                                       uint32_t cpu_specials, std::vector<uint32_t>* list) {
  std::vector<uint32_t> cpu_list;
  for (uint64_t b = 0; b < l.blocks; ++b) {
    EXPECT_EQ(flags[b] & cuda_detail::kFlagMixedSign, 0);
    if (flags[b] & cuda_detail::kFlagNonFinite) list->push_back(static_cast<uint32_t>(b));
  }
  for (uint32_t s = 0; s < cpu_specials; ++s)
    cpu_list.push_back(codec::load_u32(cpu.data() + l.special + s * l.special_entry));
  EXPECT_EQ(*list, cpu_list);
}

}  // namespace kernel_cases
}  // namespace octet
