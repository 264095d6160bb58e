/* What the shim's test programs share: deterministic input values in [-1, 1], so that every rank
 * can compute every other rank's input (and so the exact sum) without communicating, and the one
 * way they report a check ("ok <name>" once, "rank r: FAIL <name>: <detail>" per failing rank). */
#ifndef OCTET_TESTS_PMPI_TEST_COMMON_H_
#define OCTET_TESTS_PMPI_TEST_COMMON_H_

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

static int rank, size, failures;

static inline float value(int r, size_t i, int salt) {
  uint64_t h = (uint64_t)r * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xC2B2AE3D27D4EB4Full ^ salt;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return (float)((int)(h % 20001) - 10000) / 10000.0f;
}

static void check(const char* name, int ok, const char* detail) {
  if (!ok) {
    ++failures;
    printf("rank %d: FAIL %s: %s\n", rank, name, detail);
  } else if (rank == 0) {
    printf("ok %s\n", name);
  }
  fflush(stdout);
}

/* A duplicate of MPI_COMM_WORLD opted in to compressed point-to-point (info key octet_p2p). */
static inline MPI_Comm p2p_comm(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "octet_p2p", "true");
  MPI_Comm_set_info(comm, info);
  MPI_Info_free(&info);
  return comm;
}

#endif /* OCTET_TESTS_PMPI_TEST_COMMON_H_ */
