/* Overhead of the PMPI shim on calls it does not compress: a small MPI_Allreduce (through the
 * shim when it is preloaded) against the same PMPI_Allreduce (never intercepted), interleaved in
 * the same run so that both see the same machine state. Prints the median time per call of each
 * and their ratio. Run under mpirun with -x LD_PRELOAD=liboctet_pmpi.so (see README.md).
 *   pmpi_overhead [count=1] [rounds=200] [calls_per_round=200] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

typedef int (*allreduce_fn)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);

/* Time of one call, averaged over a round of calls (the slowest rank's view). */
static double round_time(allreduce_fn fn, float* in, float* out, int count, int calls) {
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < calls; ++i) fn(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double t = (MPI_Wtime() - t0) / calls, slowest;
  PMPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int count = argc > 1 ? atoi(argv[1]) : 1;
  const int rounds = argc > 2 ? atoi(argv[2]) : 200;
  const int calls = argc > 3 ? atoi(argv[3]) : 200;
  float* in = calloc(count, sizeof(float));
  float* out = calloc(count, sizeof(float));
  double* direct = calloc(rounds, sizeof(double));
  double* shim = calloc(rounds, sizeof(double));
  round_time(PMPI_Allreduce, in, out, count, calls); /* warm up both paths */
  round_time(MPI_Allreduce, in, out, count, calls);
  for (int r = 0; r < rounds; ++r) { /* alternate which goes first */
    if (r % 2) direct[r] = round_time(PMPI_Allreduce, in, out, count, calls);
    shim[r] = round_time(MPI_Allreduce, in, out, count, calls);
    if (!(r % 2)) direct[r] = round_time(PMPI_Allreduce, in, out, count, calls);
  }
  qsort(direct, rounds, sizeof(double), compare);
  qsort(shim, rounds, sizeof(double), compare);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 0)
    printf(
        "ranks %d, %d floats: PMPI_Allreduce %.3f us, MPI_Allreduce %.3f us (median of %d "
        "rounds of %d calls), ratio %.3f\n",
        size, count, direct[rounds / 2] * 1e6, shim[rounds / 2] * 1e6, rounds, calls,
        shim[rounds / 2] / direct[rounds / 2]);
  free(in), free(out), free(direct), free(shim);
  MPI_Finalize();
  return 0;
}
