// The kernels that liboctet_cuda's public functions do not reach yet, run on a GPU through their
// launchers, against the cases and CPU answers of the emulation test (kernel_cases.h). Skips, with
// the reason, where no CUDA device is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "codec/tables.h"
#include "codec_kernels.h"
#include "kernel_cases.h"

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

// Every payload, the own values and the output at c.offset bytes into device buffers; the kernel
// on a stream of its own; the result against reduce_contributions on the CPU.
void check_reduce(const ReduceCase& c) {
  SCOPED_TRACE(std::string(data_type_name(c.type)) + " n=" + std::to_string(c.n) +
               " ranks=" + std::to_string(c.ranks) + " me=" + std::to_string(c.me) +
               " avg=" + std::to_string(c.average) + " offset=" + std::to_string(c.offset));
  const kernel_cases::ReduceInputs in = kernel_cases::reduce_inputs(c);
  std::vector<std::unique_ptr<Device>> payloads;
  std::vector<cuda_detail::Contribution> from(c.ranks, cuda_detail::Contribution{});
  for (int r = 0; r < c.ranks; ++r) {
    if (r == c.me) continue;
    payloads.push_back(std::make_unique<Device>(in.payloads[r].size() + c.offset));
    uint8_t* p = payloads.back()->get() + c.offset;
    CUDA_OK(cudaMemcpy(p, in.payloads[r].data(), in.payloads[r].size(), cudaMemcpyHostToDevice));
    const codec::Layout& l = in.layouts[r];
    from[r] = {p + l.scales, p + l.codes, p + l.special, in.specials[r]};
  }
  const detail::QuantTable& table = codec::quant_table(c.type);
  Device d_from(sizeof(cuda_detail::Contribution) * from.size()), d_table(sizeof table),
      d_own(4 * c.n + c.offset), d_out(4 * c.n + c.offset);
  CUDA_OK(
      cudaMemcpy(d_from.get(), from.data(), sizeof(from[0]) * from.size(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_table.get(), &table, sizeof table, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_own.get() + c.offset, in.own.data(), 4 * c.n, cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  cuda_detail::ReduceArgs a =
      kernel_cases::reduce_args(c, reinterpret_cast<const cuda_detail::Contribution*>(d_from.get()),
                                reinterpret_cast<const float*>(d_own.get() + c.offset),
                                reinterpret_cast<const detail::QuantTable*>(d_table.get()),
                                reinterpret_cast<float*>(d_out.get() + c.offset));
  a.sms = sms();
  CUDA_OK(cuda_detail::launch_reduce(a, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaStreamDestroy(stream));
  std::vector<float> got(c.n);
  CUDA_OK(cudaMemcpy(got.data(), d_out.get() + c.offset, 4 * c.n, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < c.n; ++i)
    ASSERT_TRUE(kernel_cases::same_float(in.want[i], got[i]))
        << "element " << i << ": " << in.want[i] << " vs " << got[i];
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

}  // namespace
}  // namespace octet
