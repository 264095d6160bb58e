/* Plain MPI programs, one per case, that once made the PMPI shim misbehave (each failed on the
 * main of 2026-11-22); run by run_case.cmake under mpirun with the shim preloaded.
 *   pmpi_edge bcast_root      the root's buffer of a compressed MPI_Bcast is left untouched
 *   pmpi_edge same_buffer     sendbuf == recvbuf (not MPI_IN_PLACE): MPI's own error code
 *   pmpi_edge unaligned       buffers at odd byte addresses: results within the bound
 *   pmpi_edge straddle [warm] counts straddling OCTET_MIN_BYTES (an erroneous program): the
 *                             shim's own traffic must not match the user's (it crashed)
 *   pmpi_edge iallreduce_p2p  an MPI_Iallreduce, then a point-to-point message the peer sends
 *                             before it joins the allreduce (legal; deadlocked when eager)
 *   pmpi_edge stochastic      OCTET_STOCHASTIC=1: unbiased (the mean of repeated calls gains)
 *   pmpi_edge feedback        OCTET_ERROR_FEEDBACK=1: the error does not accumulate over steps
 *   pmpi_edge p2p_refused     octet_p2p where it cannot be honoured: said once, messages exact
 * Exit status 0 when every check passed on every rank. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

enum { kCount = 1 << 16 };
/* bf (2 + bf), bf = bound_fraction(dynamic), as in CMakeLists.txt (pmpi_tol). */
static const double kTol = 0.01412;

static double exact_sum(size_t i, int salt) {
  double s = 0;
  for (int r = 0; r < size; ++r) s += value(r, i, salt);
  return s;
}
/* Largest |got[i] - sum_r value(r, i, salt)|, got read at any alignment. */
static double sum_error(const void* got, size_t n, int salt) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    float g;
    memcpy(&g, (const char*)got + 4 * i, 4);
    const double e = fabs(g - exact_sum(i, salt));
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

static void bcast_root(void) {
  const int root = size - 1;
  float* x = malloc(kCount * sizeof *x);
  float* before = malloc(kCount * sizeof *x);
  for (size_t i = 0; i < kCount; ++i) x[i] = before[i] = value(root, i, 1);
  MPI_Bcast(x, kCount, MPI_FLOAT, root, MPI_COMM_WORLD);
  if (rank == root) {
    check("bcast leaves the root's buffer as it was", !memcmp(x, before, kCount * sizeof *x),
          "the root's buffer changed");
  } else {
    double worst = 0;
    for (size_t i = 0; i < kCount; ++i) worst = fmax(worst, fabs(x[i] - before[i]));
    check("bcast reaches the others within the bound", worst <= kTol, "error too large");
  }
  free(x);
  free(before);
}

static void same_buffer(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  float* x = malloc((size_t)kCount * size * sizeof *x);
  for (size_t i = 0; i < (size_t)kCount * size; ++i) x[i] = value(rank, i, 2);
  const int shim[3] = {MPI_Allreduce(x, x, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                       MPI_Reduce_scatter_block(x, x, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                       MPI_Allgather(x, kCount, MPI_FLOAT, x, kCount, MPI_FLOAT, MPI_COMM_WORLD)};
  const int plain[3] = {PMPI_Allreduce(x, x, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                        PMPI_Reduce_scatter_block(x, x, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                        PMPI_Allgather(x, kCount, MPI_FLOAT, x, kCount, MPI_FLOAT, MPI_COMM_WORLD)};
  const char* names[3] = {"allreduce", "reduce_scatter_block", "allgather"};
  for (int k = 0; k < 3; ++k) {
    int c_shim = 0, c_plain = 0;
    MPI_Error_class(shim[k], &c_shim);
    MPI_Error_class(plain[k], &c_plain);
    char detail[128], name[96];
    snprintf(detail, sizeof detail, "error class %d, MPI gives %d", c_shim, c_plain);
    snprintf(name, sizeof name, "%s with sendbuf == recvbuf answers like MPI", names[k]);
    check(name, c_shim == c_plain, detail);
  }
  free(x);
}

static void unaligned(void) {
  char* raw_in = malloc((size_t)kCount * size * 4 + 8);
  char* raw_out = malloc((size_t)kCount * size * 4 + 8);
  void* in = raw_in + 1;
  void* out = raw_out + 3;
  for (size_t i = 0; i < kCount; ++i) {
    const float v = value(rank, i, 3);
    memcpy((char*)in + 4 * i, &v, 4);
  }
  MPI_Allreduce(in, out, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double scale = size; /* sum over ranks of max |x| <= size */
  check("allreduce of misaligned buffers", sum_error(out, kCount, 3) <= kTol * scale,
        "error too large");
  MPI_Allreduce(MPI_IN_PLACE, in, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  check("in-place allreduce of a misaligned buffer", sum_error(in, kCount, 3) <= kTol * scale,
        "error too large");
  free(raw_in);
  free(raw_out);
}

/* Erroneous on purpose: rank 0 passes one float more than the others, so it is the only one at
 * OCTET_MIN_BYTES. The job cannot complete (MPI would not either); it must not corrupt memory. */
static void straddle(int warm) {
  float* x = calloc(kCount, sizeof *x);
  float* y = calloc(kCount, sizeof *y);
  if (warm) MPI_Allreduce(x, y, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("straddling call starts\n");
  fflush(stdout);
  const int count = kCount / 4 - (rank == 0 ? 0 : 1);
  MPI_Allreduce(x, y, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d: the straddling call returned\n", rank);
  free(x);
  free(y);
}

static void iallreduce_p2p(void) {
  const size_t n = kCount, message = 1 << 20; /* a rendezvous-sized message */
  float* x = malloc(n * sizeof *x);
  float* y = malloc(n * sizeof *y);
  char* buf = calloc(message, 1);
  for (size_t i = 0; i < n; ++i) x[i] = value(rank, i, 4);
  MPI_Request request;
  if (rank == 1) MPI_Send(buf, (int)message, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
  MPI_Iallreduce(x, y, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
  if (rank == 0) MPI_Recv(buf, (int)message, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  check("iallreduce overlapping a point-to-point exchange", sum_error(y, n, 4) <= kTol * size,
        "error too large");
  free(x);
  free(y);
  free(buf);
}

/* The same allreduce `steps` times into the same buffer; err[i] accumulates result - exact. */
static void repeat(int steps, double* mean_error, double* single_error) {
  const size_t n = kCount;
  float* x = malloc(n * sizeof *x);
  float* y = malloc(n * sizeof *y);
  double* total = calloc(n, sizeof *total);
  for (size_t i = 0; i < n; ++i) x[i] = value(rank, i, 5);
  *single_error = 0;
  for (int s = 0; s < steps; ++s) {
    MPI_Allreduce(x, y, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < n; ++i) {
      total[i] += y[i] - exact_sum(i, 5);
      *single_error = fmax(*single_error, fabs(y[i] - exact_sum(i, 5)));
    }
  }
  *mean_error = 0;
  for (size_t i = 0; i < n; ++i) *mean_error = fmax(*mean_error, fabs(total[i]) / steps);
  free(x);
  free(y);
  free(total);
}

/* 32 identical allreduces: each within twice the bound, and the error of their mean below
 * `gain` x the largest error of one call. */
static void repeated(const char* what, double gain) {
  double mean = 0, single = 0;
  repeat(32, &mean, &single);
  char detail[128], name[96];
  snprintf(detail, sizeof detail, "largest error of the mean %g vs of one call %g", mean, single);
  snprintf(name, sizeof name, "%s: one call within twice the bound", what);
  check(name, single <= 2 * kTol * size, detail);
  snprintf(name, sizeof name, "%s: the mean of 32 calls gains", what);
  check(name, mean < gain * single, detail);
}

static void p2p_refused(void) {
  MPI_Comm comm = p2p_comm();
  float* x = malloc(kCount * sizeof *x);
  float* y = malloc(kCount * sizeof *y);
  for (size_t i = 0; i < kCount; ++i) x[i] = value(rank, i, 6);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  MPI_Sendrecv(x, kCount, MPI_FLOAT, next, 0, y, kCount, MPI_FLOAT, prev, 0, comm,
               MPI_STATUS_IGNORE);
  int exact = 1;
  for (size_t i = 0; i < kCount; ++i) exact = exact && y[i] == value(prev, i, 6);
  check("point-to-point passes through exactly", exact, "values differ");
  MPI_Comm_free(&comm);
  free(x);
  free(y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* c = argc > 1 ? argv[1] : "";
  if (!strcmp(c, "bcast_root"))
    bcast_root();
  else if (!strcmp(c, "same_buffer"))
    same_buffer();
  else if (!strcmp(c, "unaligned"))
    unaligned();
  else if (!strcmp(c, "straddle"))
    straddle(argc > 2 && !strcmp(argv[2], "warm"));
  else if (!strcmp(c, "iallreduce_p2p"))
    iallreduce_p2p();
  else if (!strcmp(c, "stochastic"))
    repeated("stochastic rounding (unbiased)", 0.5);
  else if (!strcmp(c, "feedback"))
    /* Without feedback the same input gives the same error every step: the mean keeps it. */
    repeated("error feedback (the error does not accumulate)", 0.25);
  else if (!strcmp(c, "p2p_refused"))
    p2p_refused();
  else
    check("case name", 0, "unknown case");
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all ? 1 : 0;
}
