// What the collectives' MPI gtest programs share: rank helpers, and a main in which rank 0 prints
// the usual report, the other ranks only their failures (with their rank), and the exit code is 1
// on every rank if any failed.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "verify/verify.h"

namespace octet {
namespace test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// True when every rank's buffer hashes the same.
inline bool identical_everywhere(const std::vector<float>& v) {
  const uint64_t h = verify::fingerprint(v.data(), v.size());
  std::vector<uint64_t> all(world_size());
  MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (uint64_t x : all)
    if (x != h) return false;
  return true;
}

class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "rank %d: %s:%d: %s\n", world_rank(), r.file_name() ? r.file_name() : "",
                   r.line_number(), r.summary());
  }
};

inline int run_mpi_tests(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  if (world_rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter);
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}

}  // namespace test
}  // namespace octet
