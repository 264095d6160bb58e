/* The inputs of the shim's test programs: deterministic values in [-1, 1], so that every rank can
 * compute every other rank's input (and so the exact sum) without communicating. */
#ifndef OCTET_TESTS_PMPI_TEST_VALUES_H_
#define OCTET_TESTS_PMPI_TEST_VALUES_H_

#include <stddef.h>
#include <stdint.h>

static inline float value(int r, size_t i, int salt) {
  uint64_t h = (uint64_t)r * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xC2B2AE3D27D4EB4Full ^ salt;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return (float)((int)(h % 20001) - 10000) / 10000.0f;
}

#endif /* OCTET_TESTS_PMPI_TEST_VALUES_H_ */
