// What the GPU benchmarks share: CUDA errors as exceptions, device memory, inputs and the
// device-to-device copy every case is compared with.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "octet/error.h"

namespace octet_bench {

inline void check(cudaError_t e) {
  if (e != cudaSuccess) throw octet::Error(octet::ErrorCode::kInternal, cudaGetErrorString(e));
}

struct DeviceMemory {
  explicit DeviceMemory(size_t bytes) { check(cudaMalloc(&p, bytes)); }
  ~DeviceMemory() { cudaFree(p); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  uint8_t* bytes() const { return static_cast<uint8_t*>(p); }
  void* p = nullptr;
};

inline std::vector<float> random_input(size_t n, uint32_t seed = 42) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = normal(rng);
  return x;
}

// random_input(n), made once per size for every case of the run (a 256 MiB input takes seconds).
inline const std::vector<float>& cached_input(size_t n) {
  static std::map<size_t, std::vector<float>> inputs;
  std::vector<float>& x = inputs[n];
  if (x.empty()) x = random_input(n);
  return x;
}

// Seconds per call of fn(stream), timed with events over `reps` calls after one warm-up.
template <typename Fn>
double event_seconds(cudaStream_t stream, int reps, const Fn& fn) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start));
  check(cudaEventCreate(&stop));
  fn(stream);
  check(cudaEventRecord(start, stream));
  for (int i = 0; i < reps; ++i) fn(stream);
  check(cudaEventRecord(stop, stream));
  check(cudaEventSynchronize(stop));
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / 1e3 / reps;
}

// Seconds per device-to-device copy of `bytes` (the bound every case is compared with).
inline double copy_seconds(void* dst, const void* src, size_t bytes,
                           cudaStream_t stream = nullptr) {
  return event_seconds(stream, 20, [&](cudaStream_t s) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
  });
}

}  // namespace octet_bench
