// Codec throughput against this machine's memory bandwidth bound, measured in the same run.
//
// The bound kernels move exactly the bytes the codec must move (encode: read 4 B, write 1 B per
// element; decode: read 1 B, write 4 B) with no other work. Every codec benchmark reports
// `of_bound`: its element rate divided by the matching bound kernel's rate on the same size and
// thread count, measured at start-up.
//
// The thread benchmarks (BM_EncodeThreads, BM_EncodeThreadPerCall) report `vs_1thread` instead:
// their element rate divided by a single-threaded encode's rate on the same size, also measured at
// start-up. Small tensors with threads = 0 (auto) should stay at ~1.0 (the codec keeps them on
// the calling thread), large ones show the worker pool's speedup, and BM_EncodeThreadPerCall
// starts a std::thread per call (the codec's former way) to show what the pool saves.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "octet/codec.h"

namespace {

std::vector<float> data(size_t n) {
  std::mt19937_64 rng(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = d(rng);
  return x;
}

using octet_bench::stream_decode;
using octet_bench::stream_encode;

template <typename Fn>
void split(size_t n, int threads, Fn fn) {
  std::vector<std::thread> pool;
  const size_t per = (n + threads - 1) / threads;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back([=] { fn(std::min(n, per * t), std::min(n, per * (t + 1))); });
  fn(0, std::min(n, per));
  for (auto& th : pool) th.join();
}

// Elements per second of `batch` calls of body (each over n elements), best of at least 15
// repetitions and 0.3 s: the machine may be shared.
template <typename Body>
double best_rate(size_t n, int batch, Body body) {
  double best = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int rep = 0;
       rep < 15 || std::chrono::steady_clock::now() - start < std::chrono::milliseconds(300);
       ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i) body();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(n) * batch / s);
  }
  return best;
}

// Elements per second of a bound kernel.
double bound_rate(bool encode_direction, size_t n, int threads) {
  static std::map<std::tuple<bool, size_t, int>, double> cache;
  auto key = std::make_tuple(encode_direction, n, threads);
  if (cache.count(key)) return cache[key];
  std::vector<float> f(n, 1.0f);
  std::vector<uint8_t> b(n, 1);
  return cache[key] = best_rate(n, 1, [&] {
           split(n, threads, [&](size_t a, size_t z) {
             if (encode_direction)
               stream_encode(f.data() + a, b.data() + a, z - a);
             else
               stream_decode(b.data() + a, f.data() + a, z - a);
           });
           benchmark::DoNotOptimize(b.data());
           benchmark::DoNotOptimize(f.data());
         });
}

// Elements per second of a single-threaded encode (dynamic type) of n elements: the baseline of
// the thread benchmarks. Small tensors are timed in batches of about 2^20 elements, so that the
// clock's own cost does not count.
double single_thread_rate(size_t n) {
  static std::map<size_t, double> cache;
  if (cache.count(n)) return cache[n];
  const std::vector<float> x = data(n);
  octet::CodecOptions o;
  o.threads = 1;
  std::vector<uint8_t> out(octet::max_encoded_size(n, o));
  const int batch = static_cast<int>(std::max<size_t>(1, (size_t{1} << 20) / n));
  return cache[n] = best_rate(n, batch, [&] {
           benchmark::DoNotOptimize(octet::encode(x.data(), n, o, out.data(), out.size()));
         });
}

// Runs body once per benchmark iteration and reports the element rate, the bound kernel's rate
// and their ratio.
template <typename Body>
void run(benchmark::State& state, size_t n, size_t bytes, double bound, Body body) {
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) body();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double items = double(state.iterations()) * double(n);
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.SetBytesProcessed(static_cast<int64_t>(double(state.iterations()) * double(bytes)));
  state.counters["Gelem_s"] = items / s / 1e9;
  state.counters["bound_Gelem_s"] = bound / 1e9;
  state.counters["of_bound"] = items / s / bound;
}

void BM_Bound(benchmark::State& state, bool encode_direction) {
  const size_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  std::vector<float> f(n, 1.0f);
  std::vector<uint8_t> b(n, 1);
  run(state, n, 5 * n, bound_rate(encode_direction, n, threads), [&] {
    split(n, threads, [&](size_t a, size_t z) {
      if (encode_direction)
        stream_encode(f.data() + a, b.data() + a, z - a);
      else
        stream_decode(b.data() + a, f.data() + a, z - a);
    });
    benchmark::ClobberMemory();
  });
}

void BM_Encode(benchmark::State& state, octet::DataType type, bool stochastic) {
  const size_t n = state.range(0);
  octet::CodecOptions o;
  o.type = type;
  o.threads = static_cast<int>(state.range(1));
  o.stochastic = stochastic;
  std::vector<float> x = data(n);
  if (type == octet::DataType::kDynamicUnsigned)
    for (auto& v : x) v = std::fabs(v);
  std::vector<uint8_t> out(octet::max_encoded_size(n, o));
  run(state, n, 4 * n + out.size(), bound_rate(true, n, o.threads),
      [&] { benchmark::DoNotOptimize(octet::encode(x.data(), n, o, out.data(), out.size())); });
}

void BM_Decode(benchmark::State& state, octet::DataType type,
               octet::DecodeMode mode = octet::DecodeMode::kOverwrite) {
  const size_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  octet::CodecOptions o;
  o.type = type;
  std::vector<float> x = data(n);
  if (type == octet::DataType::kDynamicUnsigned)
    for (auto& v : x) v = std::fabs(v);
  const std::vector<uint8_t> p = octet::encode(x, o);
  std::vector<float> y(n);
  const size_t out_bytes = mode == octet::DecodeMode::kAccumulate ? 8 * n : 4 * n;  // read too
  run(state, n, p.size() + out_bytes, bound_rate(false, n, threads), [&] {
    octet::decode(p.data(), p.size(), y.data(), n, mode, threads);
    benchmark::ClobberMemory();
  });
}

// Runs body once per benchmark iteration and reports the element rate and its ratio to a
// single-threaded encode's.
template <typename Body>
void run_vs_single_thread(benchmark::State& state, size_t n, Body body) {
  const double single = single_thread_rate(n);
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) body();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double items = double(state.iterations()) * double(n);
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.counters["Gelem_s"] = items / s / 1e9;
  state.counters["1thread_Gelem_s"] = single / 1e9;
  state.counters["vs_1thread"] = items / s / single;
}

// Back-to-back encodes through the codec's own threading (threads = 0: auto).
void BM_EncodeThreads(benchmark::State& state) {
  const size_t n = state.range(0);
  octet::CodecOptions o;
  o.threads = static_cast<int>(state.range(1));
  const std::vector<float> x = data(n);
  std::vector<uint8_t> out(octet::max_encoded_size(n, o));
  run_vs_single_thread(state, n, [&] {
    benchmark::DoNotOptimize(octet::encode(x.data(), n, o, out.data(), out.size()));
  });
}

// The same work with a std::thread started per call, each encoding its slice single-threaded:
// what the codec did before its worker pool.
void BM_EncodeThreadPerCall(benchmark::State& state) {
  const size_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  octet::CodecOptions o;
  o.threads = 1;
  const std::vector<float> x = data(n);
  const size_t per = (n + threads - 1) / threads;  // split()'s slice
  const size_t capacity = octet::max_encoded_size(per, o);
  std::vector<uint8_t> out(threads * capacity);
  run_vs_single_thread(state, n, [&] {
    split(n, threads, [&](size_t a, size_t z) {
      benchmark::DoNotOptimize(
          octet::encode(x.data() + a, z - a, o, out.data() + a / per * capacity, capacity));
    });
  });
}

// (a) small tensors: auto must cost what one thread costs; (b) a large tensor: the pool's
// speedup; (c) mid-size tensors on 2 threads, where starting threads per call would show.
void thread_cases(benchmark::internal::Benchmark* b) {
  for (int64_t n : {int64_t{1} << 12, int64_t{1} << 16, int64_t{1} << 24}) {
    b->Args({n, 0});
    b->Args({n, 1});
  }
  b->Args({int64_t{1} << 20, 2});
  b->ArgNames({"n", "threads"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// The obvious exact quantizer: a binary search over the 256 sorted code values per element.
void BM_EncodeLowerBound(benchmark::State& state) {
  const size_t n = state.range(0);
  const std::vector<float> x = data(n);
  std::vector<float> values = octet::code_values(octet::DataType::kDynamic);
  std::sort(values.begin(), values.end());
  std::vector<uint8_t> out(n);
  run(state, n, 5 * n, bound_rate(true, n, 1), [&] {
    for (size_t b = 0; b < n; b += 2048) {
      const size_t e = std::min(n, b + 2048);
      float m = 0;
      for (size_t i = b; i < e; ++i) m = std::max(m, std::fabs(x[i]));
      const float inv = m > 0 ? 1.0f / m : 0.0f;
      for (size_t i = b; i < e; ++i) {
        const float v = x[i] * inv;
        auto it = std::lower_bound(values.begin(), values.end(), v);
        if (it == values.end() || (it != values.begin() && v - *(it - 1) < *it - v)) --it;
        out[i] = static_cast<uint8_t>(it - values.begin());
      }
    }
    benchmark::DoNotOptimize(out.data());
  });
}

void sizes(benchmark::internal::Benchmark* b) {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  // 2^18 elements (1 MiB of fp32) stay in L2; 2^24 (64 MiB) stream from memory. The codec uses
  // threads only from 2^19 elements (handing work to other threads costs more below that).
  b->Args({int64_t{1} << 18, 1});
  b->Args({int64_t{1} << 24, 1});
  if (cores > 1) b->Args({int64_t{1} << 24, cores});
  b->ArgNames({"n", "threads"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK_CAPTURE(BM_Bound, encode_stream, true)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Bound, decode_stream, false)->Apply(sizes);
BENCHMARK(BM_EncodeLowerBound)->Args({1 << 18})->ArgNames({"n"})->UseRealTime();
BENCHMARK_CAPTURE(BM_Encode, dynamic, octet::DataType::kDynamic, false)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Encode, dynamic_stochastic, octet::DataType::kDynamic, true)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Encode, linear, octet::DataType::kLinear, false)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Encode, mantissa, octet::DataType::kMantissa, false)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Encode, static_tree, octet::DataType::kStaticTree, false)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Encode, dynamic_unsigned, octet::DataType::kDynamicUnsigned, false)
    ->Apply(sizes);
BENCHMARK_CAPTURE(BM_Encode, dynamic4, octet::DataType::kDynamic4, false)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Decode, dynamic, octet::DataType::kDynamic)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Decode, linear, octet::DataType::kLinear)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Decode, dynamic4, octet::DataType::kDynamic4)->Apply(sizes);
// out += decoded: what the reduction of a compressed allreduce does with every peer's chunk.
BENCHMARK_CAPTURE(BM_Decode, dynamic_accumulate, octet::DataType::kDynamic,
                  octet::DecodeMode::kAccumulate)
    ->Apply(sizes);
BENCHMARK(BM_EncodeThreads)->Apply(thread_cases);
BENCHMARK(BM_EncodeThreadPerCall)
    ->Args({int64_t{1} << 20, 2})
    ->ArgNames({"n", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  octet_bench::check_simd_target_from_env();
  benchmark::AddCustomContext("simd_target", octet::simd_target());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
