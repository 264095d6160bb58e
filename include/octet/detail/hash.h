// Octet's two non-cryptographic hashes, header-only so that every layer, the tests and the
// benchmarks share one definition: FNV-1a over bytes (fingerprints, "identical on every rank"
// checks) and the splitmix64 mixer (seeds and deterministic test data).
#pragma once

#include <cstddef>
#include <cstdint>

namespace octet {
namespace detail {

constexpr uint64_t kFnv1aOffset = 14695981039346656037ull;

inline uint64_t fnv1a64(const void* data, size_t size, uint64_t h = kFnv1aOffset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// splitmix64 (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace detail
}  // namespace octet
