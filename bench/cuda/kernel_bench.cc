// The device kernels that no public function reaches yet, timed through their launchers (Google
// Benchmark): the owner's reduction of a compressed allreduce (reduce_kernel) for P ranks. Each
// case also times a device-to-device copy of the fp32 chunk in the same run: `vs_copy` = kernel
// time / copy time. The kernel reads P-1 payloads (about 1 byte an element each) and the owner's
// 4 bytes and writes 4, so its floor is close to the copy's. Exits 0 with a message when there is
// no CUDA device.
//
//   build/bench/cuda/octet_cuda_kernel_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.h"
#include "codec/payload.h"
#include "codec/tables.h"
#include "codec_kernels.h"
#include "octet/codec.h"

namespace {

using octet_bench::check;
using octet_bench::copy_seconds;
using octet_bench::DeviceMemory;
using octet_bench::event_seconds;
using octet_bench::random_input;

int sm_count() {
  int device = 0, sms = 0;
  check(cudaGetDevice(&device));
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// Args: n elements, type, ranks. Rank 0 owns the chunk; ranks 1..P-1 sent CPU-encoded payloads.
void BM_Reduce(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  octet::CodecOptions o;
  o.type = static_cast<octet::DataType>(state.range(1));
  const int ranks = static_cast<int>(state.range(2));
  std::vector<std::unique_ptr<DeviceMemory>> payloads;
  std::vector<octet::cuda_detail::Contribution> from(ranks, octet::cuda_detail::Contribution{});
  for (int r = 1; r < ranks; ++r) {
    const std::vector<uint8_t> p = octet::encode(random_input(n, static_cast<uint32_t>(r)), o);
    const octet::PayloadInfo info = octet::inspect(p.data(), p.size());
    const octet::codec::Layout l = octet::codec::make_layout(
        n, info.block_size, octet::data_type_bits(o.type), info.special_blocks, info.has_checksum);
    payloads.push_back(std::make_unique<DeviceMemory>(p.size()));
    uint8_t* d = payloads.back()->bytes();
    check(cudaMemcpy(d, p.data(), p.size(), cudaMemcpyHostToDevice));
    from[r] = {d + l.scales, d + l.codes, d + l.special, info.special_blocks};
  }
  const octet::detail::QuantTable& table = octet::codec::quant_table(o.type);
  const std::vector<float> own = random_input(n, 0);
  DeviceMemory d_from(sizeof(from[0]) * from.size()), d_table(sizeof table),
      d_own(n * sizeof(float)), d_out(n * sizeof(float));
  check(cudaMemcpy(d_from.p, from.data(), sizeof(from[0]) * from.size(), cudaMemcpyHostToDevice));
  check(cudaMemcpy(d_table.p, &table, sizeof table, cudaMemcpyHostToDevice));
  check(cudaMemcpy(d_own.p, own.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  octet::cuda_detail::ReduceArgs a{};
  a.from = static_cast<const octet::cuda_detail::Contribution*>(d_from.p);
  a.own = static_cast<const float*>(d_own.p);
  a.me = 0;
  a.ranks = ranks;
  a.count = n;
  a.block = octet::default_block_size(o.type);
  a.bits = octet::data_type_bits(o.type);
  a.table = static_cast<const octet::detail::QuantTable*>(d_table.p);
  a.out = static_cast<float*>(d_out.p);
  a.sms = sm_count();
  cudaStream_t stream;
  check(cudaStreamCreate(&stream));
  const double copy_s = copy_seconds(d_out.p, d_own.p, n * sizeof(float), stream);
  double kernel_s = 0;
  for (auto _ : state) {
    const double t = event_seconds(
        stream, 10, [&](cudaStream_t s) { check(octet::cuda_detail::launch_reduce(a, s)); });
    state.SetIterationTime(t);
    kernel_s += t;
  }
  check(cudaStreamDestroy(stream));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * sizeof(float)));
  state.counters["vs_copy"] = kernel_s / static_cast<double>(state.iterations()) / copy_s;
  state.counters["copy_GBps"] = 2.0 * n * sizeof(float) / copy_s / 1e9;
}

void ReduceArgs(benchmark::internal::Benchmark* b) {
  // 1 MiB, 32 MiB and 256 MiB of fp32, as docs/performance.md reports the codec.
  for (int64_t n : {int64_t{1} << 18, int64_t{1} << 23, int64_t{1} << 26})
    for (auto t : {octet::DataType::kDynamic, octet::DataType::kDynamic4})
      for (int64_t ranks : {2, 4, 8}) b->Args({n, static_cast<int64_t>(t), ranks});
  b->ArgNames({"n", "type", "ranks"})->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Reduce)->Apply(ReduceArgs);

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("octet_cuda_kernel_bench: skipped, no usable CUDA device (%s)\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
