// What the codec benchmarks share: the streaming kernels of the bound (the least work that touches
// the codec's bytes), the choice of the codec's SIMD target, and a timer.
//
// The bound is the machine's, not the compiler's default target's: on x86 each kernel is compiled
// for the baseline, AVX2 and AVX-512 and runs at the widest that both the CPU and the codec's SIMD
// target have, so a codec that uses AVX-512 is not compared with a loop the compiler was only
// allowed to give SSE2.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "octet/codec.h"
#include "octet/error.h"

namespace octet_bench {

// Seconds fn takes once.
template <typename Fn>
double seconds(Fn fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

namespace detail {

__attribute__((always_inline)) inline void encode_body(const float* in, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, in + i, 4);
    out[i] = static_cast<uint8_t>(u >> 24);
  }
}

__attribute__((always_inline)) inline void decode_body(const uint8_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define OCTET_BENCH_AVX2 __attribute__((target("avx2")))
#define OCTET_BENCH_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,prefer-vector-width=512")))
OCTET_BENCH_AVX2 inline void encode_avx2(const float* in, uint8_t* out, size_t n) {
  encode_body(in, out, n);
}
OCTET_BENCH_AVX512 inline void encode_avx512(const float* in, uint8_t* out, size_t n) {
  encode_body(in, out, n);
}
OCTET_BENCH_AVX2 inline void decode_avx2(const uint8_t* in, float* out, size_t n) {
  decode_body(in, out, n);
}
OCTET_BENCH_AVX512 inline void decode_avx512(const uint8_t* in, float* out, size_t n) {
  decode_body(in, out, n);
}
#undef OCTET_BENCH_AVX2
#undef OCTET_BENCH_AVX512

// 2: AVX-512 (F, BW, VL), 1: AVX2, 0: the baseline; the CPU's widest, or narrower where the
// codec's SIMD target is ($OCTET_SIMD_TARGET): a codec restricted to AVX2 is compared
// with the bound of a machine whose widest vectors are AVX2's.
inline int vector_level() {
  static const int level = [] {
    const int cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512vl")
                        ? 2
                    : __builtin_cpu_supports("avx2") ? 1
                                                     : 0;
    const std::string target = octet::simd_target();
    const int codec = target.rfind("AVX3", 0) == 0 ? 2 : target == "AVX2" ? 1 : 0;
    return cpu < codec ? cpu : codec;
  }();
  return level;
}

// The kernel's version for vector_level(): baseline, AVX2 or AVX-512.
template <typename In, typename Out>
inline void at_width(void (*base)(const In*, Out*, size_t), void (*avx2)(const In*, Out*, size_t),
                     void (*avx512)(const In*, Out*, size_t), const In* in, Out* out, size_t n) {
  const int level = vector_level();
  (level == 2 ? avx512 : level == 1 ? avx2 : base)(in, out, n);
}
#endif

}  // namespace detail

// Encode direction: read a float, write one byte of it.
inline void stream_encode(const float* in, uint8_t* out, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  detail::at_width(detail::encode_body, detail::encode_avx2, detail::encode_avx512, in, out, n);
#else
  detail::encode_body(in, out, n);
#endif
}

// Decode direction: read a byte, write a float.
inline void stream_decode(const uint8_t* in, float* out, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  detail::at_width(detail::decode_body, detail::decode_avx2, detail::decode_avx512, in, out, n);
#else
  detail::decode_body(in, out, n);
#endif
}

// The codec runs the SIMD target that $OCTET_SIMD_TARGET names (as octet::simd_target() prints it:
// AVX3_DL, AVX3, AVX2, SSE4 ...; the library reads the variable), so that one machine also
// measures the code that CPUs without its widest extensions run. A name this CPU and build lack
// ends the benchmark with the library's one-line error before anything is measured.
inline void check_simd_target_from_env() {
  try {
    (void)octet::simd_target();
  } catch (const octet::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    std::exit(2);
  }
}

}  // namespace octet_bench
