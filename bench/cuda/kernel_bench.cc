// The device kernels that no public function reaches yet, timed through their launchers (Google
// Benchmark): the owner's reduction of a compressed allreduce (reduce_kernel) for P ranks, alone,
// followed by the encode kernel, and through launch_reduce_encode (work = 0, 1, 2: the same two
// kernels, gated by the contributions' statuses, for codec blocks of a tile or less; one fused
// kernel for larger blocks). Each
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
#include "kernel_inputs.h"
#include "octet/codec.h"

namespace {

using octet_bench::check;
using octet_bench::copy_seconds;
using octet_bench::DeviceMemory;
using octet_bench::event_seconds;

int sm_count() {
  int device = 0, sms = 0;
  check(cudaGetDevice(&device));
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// What is timed: the reduction alone, the reduction and its re-encoding as two launches, or
// launch_reduce_encode.
enum Work : int64_t { kReduce = 0, kReduceThenEncode = 1, kFused = 2 };

// Args: n elements, type, ranks, work. Rank 0 owns the chunk; ranks 1..P-1 sent CPU-encoded
// payloads.
void BM_Reduce(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  octet::CodecOptions o;
  o.type = static_cast<octet::DataType>(state.range(1));
  const int ranks = static_cast<int>(state.range(2));
  // One payload, copied to each sender's own buffer: the kernel reads P-1 distinct buffers, and
  // the case costs one CPU encode (a 256 MiB case would otherwise spend seconds making inputs).
  const std::vector<float>& x = octet_bench::cached_input(n);
  const std::vector<uint8_t> p = octet::encode(x, o);
  const octet::PayloadInfo info = octet::inspect(p.data(), p.size());
  std::vector<std::unique_ptr<DeviceMemory>> payloads;
  std::vector<octet::cuda_detail::Contribution> from(ranks, octet::cuda_detail::Contribution{});
  for (int r = 1; r < ranks; ++r) {
    payloads.push_back(std::make_unique<DeviceMemory>(p.size()));
    uint8_t* d = payloads.back()->bytes();
    check(cudaMemcpy(d, p.data(), p.size(), cudaMemcpyHostToDevice));
    from[r] = octet::cuda_detail::contribution_of(d, info);
  }
  const octet::detail::QuantTable& table = octet::cuda_detail::host_table(o.type);
  const std::vector<float>& own = x;
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
  a.block = info.block_size;
  a.bits = octet::data_type_bits(o.type);
  a.table = static_cast<const octet::detail::QuantTable*>(d_table.p);
  a.out = static_cast<float*>(d_out.p);
  a.sms = sm_count();
  // The re-encoding's output, laid out as the contributions' payloads (the sums are finite too).
  const auto layout = octet::cuda_detail::layout_of(info);
  DeviceMemory d_body(p.size()), d_flags(layout.blocks);
  octet::cuda_detail::EncodeArgs e{};
  e.in = a.out;
  e.count = n;
  e.block = a.block;
  e.blocks = layout.blocks;
  e.table = a.table;
  e.table_bytes = octet::cuda_detail::table_bytes(table);
  e.scales = d_body.bytes() + layout.scales;
  e.codes = d_body.bytes() + layout.codes;
  e.flags = d_flags.bytes();
  e.bits = a.bits;
  e.sms = a.sms;
  const auto work = static_cast<Work>(state.range(3));
  cudaStream_t stream;
  check(cudaStreamCreate(&stream));
  const double copy_s = copy_seconds(d_out.p, d_own.p, n * sizeof(float), stream);
  double kernel_s = 0;
  for (auto _ : state) {
    const double t = event_seconds(stream, 10, [&](cudaStream_t s) {
      if (work == kFused) return check(octet::cuda_detail::launch_reduce_encode(a, e, s));
      check(octet::cuda_detail::launch_reduce(a, s));
      if (work == kReduceThenEncode) check(octet::cuda_detail::launch_encode(e, s));
    });
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
      for (int64_t ranks : {2, 4, 8})
        for (int64_t work : {kReduce, kReduceThenEncode, kFused})
          b->Args({n, static_cast<int64_t>(t), ranks, work});
  b->ArgNames({"n", "type", "ranks", "work"})->UseManualTime()->Unit(benchmark::kMicrosecond);
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
