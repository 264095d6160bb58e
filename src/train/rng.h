// Deterministic random numbers for training: splitmix64 streams keyed by what they are for
// (seed, epoch, sample, layer), so the same seed gives the same draws on any rank count, thread
// or machine (no std:: distribution, whose output is implementation-defined).
#pragma once

#include <cstdint>
#include <initializer_list>

#include "octet/detail/hash.h"

namespace octet {
namespace train {

inline uint64_t stream_key(std::initializer_list<uint64_t> parts) {
  uint64_t h = 0x6f63746574ull;  // "octet"
  for (uint64_t p : parts) h = detail::splitmix64(h ^ p);
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t key) : state_(key) {}
  uint64_t next() { return detail::splitmix64(state_++); }
  // Uniform in [0, 1) with 24 random bits (exact in float).
  float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }
  // Uniform in [0, n).
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t state_;
};

}  // namespace train
}  // namespace octet
