/* How much of a compressed MPI_Iallreduce hides behind computation (see plugins/pmpi/README.md).
 * Measured in one run, each the slowest rank's median over `reps` repetitions:
 *   comm     MPI_Iallreduce + MPI_Wait, nothing in between
 *   compute  the compute phase alone, sized to last about as long as comm: `cpu`, a float loop
 *            over a private array (needs a core of its own besides the progress thread), or
 *            `idle`, the CPU waiting (as it does while a GPU computes the backward pass)
 *   both     MPI_Iallreduce, the compute phase, then MPI_Wait
 * overlap = (comm + compute - both) / min(comm, compute): 1 when the allreduce is hidden
 * entirely, 0 when nothing is. Run it with and without the shim, and with OCTET_PROGRESS=eager:
 *   mpirun -np 2 -x LD_PRELOAD=liboctet_pmpi.so pmpi_overlap [MiB=64] [reps=5] [cpu|idle] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static float* work;
static size_t work_n = 1 << 20;
static volatile float sink;
static int idle;

static void compute(long rounds) {
  if (idle) {  /* rounds of 1 ms */
    const struct timespec ms = {0, 1000000};
    for (long r = 0; r < rounds; ++r) nanosleep(&ms, NULL);
    return;
  }
  float acc = 0;
  for (long r = 0; r < rounds; ++r)
    for (size_t i = 0; i < work_n; ++i) acc += work[i] * 1.0001f;
  sink = acc;
}

static int compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* The slowest rank's median time of body over reps repetitions. */
static double median_time(int reps, int which, float* x, float* y, int n, long rounds) {
  double* t = malloc(reps * sizeof *t);
  for (int k = 0; k < reps; ++k) {
    MPI_Request req;
    PMPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (which != 1) MPI_Iallreduce(x, y, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
    if (which != 0) compute(rounds);
    if (which != 1) MPI_Wait(&req, MPI_STATUS_IGNORE);
    double local = MPI_Wtime() - t0;
    PMPI_Allreduce(&local, &t[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  }
  qsort(t, reps, sizeof *t, compare);
  const double m = t[reps / 2];
  free(t);
  return m;
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  const size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
  const int reps = argc > 2 ? atoi(argv[2]) : 5;
  idle = argc > 3 && !strcmp(argv[3], "idle");
  const int n = (int)(mib * (1 << 20) / 4);
  float* x = malloc((size_t)n * sizeof *x);
  float* y = malloc((size_t)n * sizeof *y);
  work = malloc(work_n * sizeof *work);
  for (int i = 0; i < n; ++i) x[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
  for (size_t i = 0; i < work_n; ++i) work[i] = (float)i;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const double comm = median_time(reps, 0, x, y, n, 0);
  /* Calibrate the compute phase to about the length of comm (rank 0 decides for all). */
  double t0 = MPI_Wtime();
  compute(4);
  long rounds = (long)(4 * comm / (MPI_Wtime() - t0)) + 1;
  PMPI_Bcast(&rounds, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  const double alone = median_time(reps, 1, x, y, n, rounds);
  const double both = median_time(reps, 2, x, y, n, rounds);
  const double shorter = comm < alone ? comm : alone;
  if (rank == 0) {
    printf("# %zu MiB MPI_Iallreduce, %s compute, thread level %d, %d reps (median, slowest rank)\n",
           mib, idle ? "idle" : "cpu", provided, reps);
    printf("%12s %12s %12s %10s\n", "comm_ms", "compute_ms", "both_ms", "overlap");
    printf("%12.2f %12.2f %12.2f %10.2f\n", comm * 1e3, alone * 1e3, both * 1e3,
           (comm + alone - both) / shorter);
  }
  free(x);
  free(y);
  free(work);
  MPI_Finalize();
  return 0;
}
