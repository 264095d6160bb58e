// GPU encode (encode_device, encode_device_async) and decode throughput (Google Benchmark). Each
// case also times a device-to-device copy of its input in the same run: `vs_copy` = codec time /
// copy time (below 1 means faster than moving the fp32 tensor once). Exits 0 with a message when
// there is no CUDA device.
//
//   build/bench/cuda/octet_cuda_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_support.h"
#include "octet/codec.h"
#include "octet/cuda.h"

namespace {

using octet_bench::cached_input;
using octet_bench::check;
using octet_bench::copy_seconds;
using octet_bench::DeviceMemory;

octet::CodecOptions options_of(const benchmark::State& state) {
  octet::CodecOptions o;
  o.type = static_cast<octet::DataType>(state.range(1));
  o.stochastic = state.range(2) != 0;
  o.seed = 7;
  return o;
}

void set_counters(benchmark::State& state, size_t n, double copy_s) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * sizeof(float)));
  state.counters["vs_copy"] =
      benchmark::Counter(copy_s * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["copy_GBps"] = 2.0 * n * sizeof(float) / copy_s / 1e9;
}

void BM_Encode(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const octet::CodecOptions o = options_of(state);
  const std::vector<float>& x = cached_input(n);
  DeviceMemory in(n * sizeof(float)), copy(n * sizeof(float));
  const size_t cap = octet::max_encoded_size(n, o);
  DeviceMemory out(cap);
  check(cudaMemcpy(in.p, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const double copy_s = copy_seconds(copy.p, in.p, n * sizeof(float));
  for (auto _ : state) {
    benchmark::DoNotOptimize(octet::encode_device(static_cast<const float*>(in.p), n, o,
                                                  static_cast<uint8_t*>(out.p), cap));
  }
  set_counters(state, n, copy_s);
}

// encode_device_async: the same bytes without the host round trips; each iteration waits for
// the stream, so that the time is comparable with BM_Encode's.
void BM_EncodeAsync(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const octet::CodecOptions o = options_of(state);
  const std::vector<float>& x = cached_input(n);
  const size_t cap = octet::max_encoded_size(n, o);
  DeviceMemory in(n * sizeof(float)), copy(n * sizeof(float)), out(cap), size(sizeof(uint64_t));
  check(cudaMemcpy(in.p, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const double copy_s = copy_seconds(copy.p, in.p, n * sizeof(float));
  for (auto _ : state) {
    octet::encode_device_async(static_cast<const float*>(in.p), n, o, out.bytes(), cap,
                               static_cast<uint64_t*>(size.p));
    check(cudaStreamSynchronize(nullptr));
  }
  set_counters(state, n, copy_s);
}

void BM_Decode(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const octet::CodecOptions o = options_of(state);
  const std::vector<uint8_t> payload = octet::encode(cached_input(n), o);
  DeviceMemory d_payload(payload.size()), out(n * sizeof(float)), copy(n * sizeof(float));
  check(cudaMemcpy(d_payload.p, payload.data(), payload.size(), cudaMemcpyHostToDevice));
  const double copy_s = copy_seconds(copy.p, out.p, n * sizeof(float));
  const auto mode = state.range(2) ? octet::DecodeMode::kAccumulate : octet::DecodeMode::kOverwrite;
  for (auto _ : state) {
    octet::decode_device(static_cast<const uint8_t*>(d_payload.p), payload.size(),
                         static_cast<float*>(out.p), n, mode);
  }
  set_counters(state, n, copy_s);
}

// decode_device_async: the payload checked on the device (validate_kernel), then decoded, with no
// host round trip; each iteration waits for the stream, as BM_EncodeAsync's does.
void BM_DecodeAsync(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  octet::CodecOptions o = options_of(state);
  o.stochastic = false;
  const std::vector<uint8_t> payload = octet::encode(cached_input(n), o);
  DeviceMemory d_payload(payload.size()), out(n * sizeof(float)), copy(n * sizeof(float)),
      status(sizeof(uint32_t));
  check(cudaMemcpy(d_payload.p, payload.data(), payload.size(), cudaMemcpyHostToDevice));
  const double copy_s = copy_seconds(copy.p, out.p, n * sizeof(float));
  const auto mode = state.range(2) ? octet::DecodeMode::kAccumulate : octet::DecodeMode::kOverwrite;
  for (auto _ : state) {
    octet::decode_device_async(d_payload.bytes(), payload.size(), o, static_cast<float*>(out.p), n,
                               static_cast<uint32_t*>(status.p), mode);
    check(cudaStreamSynchronize(nullptr));
  }
  uint32_t verdict = 1;
  check(cudaMemcpy(&verdict, status.p, sizeof verdict, cudaMemcpyDeviceToHost));
  if (verdict != 0) state.SkipWithError("the device rejected a valid payload");
  set_counters(state, n, copy_s);
}

void Args(benchmark::internal::Benchmark* b) {
  // 1 MiB, 32 MiB and 256 MiB of fp32, the sizes docs/performance.md reports.
  for (int64_t n : {int64_t{1} << 18, int64_t{1} << 23, int64_t{1} << 26})
    for (auto t : {octet::DataType::kDynamic, octet::DataType::kDynamic4})
      for (int64_t flag : {0, 1}) b->Args({n, static_cast<int64_t>(t), flag});
  b->ArgNames({"n", "type", "sr_or_acc"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Encode)->Apply(Args);
BENCHMARK(BM_EncodeAsync)->Apply(Args);
BENCHMARK(BM_Decode)->Apply(Args);
BENCHMARK(BM_DecodeAsync)->Apply(Args);

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (!octet::cuda_device_available(&why)) {
    std::printf("octet_cuda_bench: skipped, %s\n", why.c_str());
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
