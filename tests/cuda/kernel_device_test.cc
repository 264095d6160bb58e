// The kernels that liboctet_cuda's public functions do not reach yet, run on a GPU through their
// launchers, against the cases and CPU answers of the emulation test (kernel_cases.h). Skips, with
// the reason, where no CUDA device is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "codec/tables.h"
#include "codec_kernels.h"
#include "kernel_cases.h"
#include "kernel_inputs.h"

namespace octet {
namespace {

using kernel_cases::ReduceCase;

std::string no_device() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA device: ") + cudaGetErrorString(e);
  }
  return n > 0 ? "" : "no CUDA device found";
}

#define SKIP_WITHOUT_DEVICE()              \
  do {                                     \
    const std::string why = no_device();   \
    if (!why.empty()) GTEST_SKIP() << why; \
  } while (0)

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

// Device memory released at the end of the scope.
struct Device {
  explicit Device(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes ? bytes : 1), cudaSuccess); }
  ~Device() { cudaFree(p); }
  uint8_t* get() const { return static_cast<uint8_t*>(p); }
  void* p = nullptr;
};

int sms() {
  int device = 0, n = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
  return n > 0 ? n : 1;
}

// A case in device memory: every payload, the own values and the output at c.offset bytes into
// their buffers, the descriptors and the type's table.
struct Staged {
  Staged(const ReduceCase& c, const kernel_cases::ReduceInputs& in)
      : c(c),
        table(codec::quant_table(c.type)),
        d_from(sizeof(cuda_detail::Contribution) * c.ranks),
        d_table(sizeof table),
        d_own(4 * c.n + c.offset),
        d_out(4 * c.n + c.offset) {
    std::vector<cuda_detail::Contribution> from(c.ranks, cuda_detail::Contribution{});
    for (int r = 0; r < c.ranks; ++r) {
      if (r == c.me) continue;
      payloads.push_back(std::make_unique<Device>(in.payloads[r].size() + c.offset));
      uint8_t* p = payloads.back()->get() + c.offset;
      EXPECT_EQ(cudaMemcpy(p, in.payloads[r].data(), in.payloads[r].size(), cudaMemcpyHostToDevice),
                cudaSuccess);
      const codec::Layout& l = in.layouts[r];
      from[r] = {p + l.scales, p + l.codes, p + l.special, in.specials[r]};
    }
    EXPECT_EQ(cudaMemcpy(d_from.get(), from.data(), sizeof(from[0]) * from.size(),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d_table.get(), &table, sizeof table, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d_own.get() + c.offset, in.own.data(), 4 * c.n, cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  const detail::QuantTable* device_table() const {
    return reinterpret_cast<const detail::QuantTable*>(d_table.get());
  }
  float* out() const { return reinterpret_cast<float*>(d_out.get() + c.offset); }
  cuda_detail::ReduceArgs args() const {
    cuda_detail::ReduceArgs a = kernel_cases::reduce_args(
        c, reinterpret_cast<const cuda_detail::Contribution*>(d_from.get()),
        reinterpret_cast<const float*>(d_own.get() + c.offset), device_table(), out());
    a.sms = sms();
    return a;
  }
  // The reduced values against the collectives' answer.
  void expect_reduced(const kernel_cases::ReduceInputs& in) const {
    std::vector<float> got(c.n);
    ASSERT_EQ(cudaMemcpy(got.data(), out(), 4 * c.n, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < c.n; ++i)
      ASSERT_TRUE(kernel_cases::same_float(in.want[i], got[i]))
          << "element " << i << ": " << in.want[i] << " vs " << got[i];
  }

  const ReduceCase c;
  const detail::QuantTable& table;
  std::vector<std::unique_ptr<Device>> payloads;
  Device d_from, d_table, d_own, d_out;
};

std::string trace(const ReduceCase& c) {
  return std::string(data_type_name(c.type)) + " n=" + std::to_string(c.n) +
         " ranks=" + std::to_string(c.ranks) + " me=" + std::to_string(c.me) +
         " avg=" + std::to_string(c.average) + " offset=" + std::to_string(c.offset);
}

// The reduce kernel on a stream of its own against reduce_contributions on the CPU.
void check_reduce(const ReduceCase& c) {
  SCOPED_TRACE(trace(c));
  const kernel_cases::ReduceInputs in = kernel_cases::reduce_inputs(c);
  const Staged st(c, in);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  CUDA_OK(cuda_detail::launch_reduce(st.args(), stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaStreamDestroy(stream));
  st.expect_reduced(in);
}

// The fused kernel: the reduction, and the scales, codes and NaN/Inf blocks of its encoding
// against the CPU codec's payload of the collectives' reduction.
void check_reduce_encode(const ReduceCase& c, bool stochastic) {
  SCOPED_TRACE(trace(c) + " sr=" + std::to_string(stochastic));
  const kernel_cases::ReduceInputs in = kernel_cases::reduce_inputs(c);
  const Staged st(c, in);
  const kernel_cases::Reencoded want = kernel_cases::reencoded(c, in, stochastic);
  const CodecOptions& o = want.options;
  const std::vector<uint8_t>& cpu = want.payload;
  const PayloadInfo& info = want.info;
  const codec::Layout& l = want.layout;
  Device d_body(l.size + c.offset), d_flags(l.blocks);
  cuda_detail::EncodeArgs e = kernel_cases::encode_args(
      o, st.out(), c.n, l, d_body.get() + c.offset, d_flags.get(), st.device_table());
  e.sms = sms();
  CUDA_OK(cuda_detail::launch_reduce_encode(st.args(), e, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  st.expect_reduced(in);
  std::vector<uint8_t> body(l.special), flags(l.blocks);
  CUDA_OK(cudaMemcpy(body.data(), d_body.get() + c.offset, l.special, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(flags.data(), d_flags.get(), l.blocks, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(std::equal(cpu.begin() + l.scales, cpu.begin() + l.special, body.begin() + l.scales))
      << "scales or codes differ";
  std::vector<uint32_t> list;
  kernel_cases::expect_same_special_blocks(flags, cpu, l, info.special_blocks, &list);
}

TEST(CudaKernels, ReduceMatchesTheCollectivesRuleForEveryType) {
  SKIP_WITHOUT_DEVICE();
  for (DataType type : all_data_types())
    for (bool average : {false, true}) check_reduce({type, 10007, 64, 3, 1, average, 1.0f, 0});
}

TEST(CudaKernels, ReduceMatchesForRanksTailsAlignmentAndOverflow) {
  SKIP_WITHOUT_DEVICE();
  const ReduceCase cases[] = {
      {DataType::kDynamic, (size_t{1} << 20) + 3, 4096, 4, 0, true, 1.0f, 3},
      {DataType::kDynamic, 1001, 256, 8, 7, false, 1.0f, 1},
      {DataType::kDynamic, 130, 64, 1, 0, true, 1.0f, 2},
      {DataType::kDynamic4, 99999, 128, 5, 2, true, 1.0f, 1},
      {DataType::kDynamic, 9000, 64, 4, 2, true, 4.0f, 1},  // sums overflow: the second path
      {DataType::kLinear, 515, 64, 16, 9, true, 1.0f, 2},
  };
  for (const ReduceCase& c : cases) check_reduce(c);
}

TEST(CudaKernels, FusedReduceEncodeMatchesTheCpuPayloadOfTheReduction) {
  SKIP_WITHOUT_DEVICE();
  for (DataType type : all_data_types())
    check_reduce_encode({type, 10007, 64, 3, 1, true, 1.0f, 0}, false);
  check_reduce_encode({DataType::kDynamic, (size_t{1} << 20) + 3, 4096, 4, 0, true, 1.0f, 1}, true);
  check_reduce_encode({DataType::kDynamic4, 99999, 128, 5, 2, true, 1.0f, 2}, true);
  check_reduce_encode({DataType::kDynamic, 9000, 64, 4, 2, true, 4.0f, 3}, false);  // overflow
}

// The device's check of a received payload: a valid one passes with its count; a broken header
// CRC and a NaN scale are named (the emulation test compares every rule with the host's).
TEST(CudaKernels, ValidateAcceptsValidPayloadsAndNamesBrokenRules) {
  SKIP_WITHOUT_DEVICE();
  CodecOptions o;
  o.block_size = 64;
  const size_t n = 100003;
  const std::vector<uint8_t> payload = encode(kernel_cases::make_input(n, 4, false), o);
  const uint32_t specials = inspect(payload.data(), payload.size()).special_blocks;
  const codec::ResolvedOptions r = codec::resolve(o);
  const std::array<uint32_t, 1024> deltas = cuda_detail::header_crc_deltas();
  const size_t capacity = max_encoded_size(n, o);
  Device d_payload(capacity), d_deltas(sizeof deltas), d_words(8);
  CUDA_OK(cudaMemcpy(d_deltas.get(), deltas.data(), sizeof deltas, cudaMemcpyHostToDevice));
  const auto status_of = [&](std::vector<uint8_t> bytes, uint32_t* count) {
    bytes.resize(capacity, 0);
    EXPECT_EQ(cudaMemcpy(d_payload.get(), bytes.data(), capacity, cudaMemcpyHostToDevice),
              cudaSuccess);
    cuda_detail::ValidateArgs v = cuda_detail::validate_args(r, n);
    v.payload = d_payload.get();
    v.capacity = capacity;
    v.crc_delta = reinterpret_cast<const uint32_t*>(d_deltas.get());
    v.status = reinterpret_cast<uint32_t*>(d_words.get());
    v.specials = v.status + 1;
    EXPECT_EQ(cuda_detail::launch_validate(v, nullptr), cudaSuccess);
    uint32_t words[2] = {0xDEAD, 0xDEAD};
    EXPECT_EQ(cudaMemcpy(words, d_words.get(), sizeof words, cudaMemcpyDeviceToHost), cudaSuccess);
    *count = words[1];
    return words[0];
  };
  uint32_t count = 0;
  EXPECT_EQ(status_of(payload, &count), cuda_detail::kPayloadOk);
  EXPECT_EQ(count, specials);
  std::vector<uint8_t> bad = payload;
  bad[30] ^= 1;
  EXPECT_EQ(status_of(bad, &count), cuda_detail::kPayloadBadHeader);
  EXPECT_EQ(count, 0u);
  bad = payload;
  codec::store_u32(bad.data() + codec::kHeaderSize + 4 * 7, 0x7f800000u);
  EXPECT_EQ(status_of(bad, &count), cuda_detail::kPayloadBadScale);
}

}  // namespace
}  // namespace octet
