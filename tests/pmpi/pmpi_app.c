/* An ordinary MPI program, not written against Octet, used to test the PMPI shim from outside.
 *
 * It runs fp32 collectives that the shim may compress ("candidates") and calls it must never touch
 * ("ineligible": small, double, MPI_MAX, a user op, a derived datatype, opted-out communicators),
 * and compares each result with the same call made through PMPI_ (which no shim intercepts).
 *   pmpi_app             every result must be bit-identical to the PMPI_ reference
 *   pmpi_app --approx T  candidates must be within T * sum_r(max|x_r|) of the exact sum and
 *                        (for allreduce and allgather) identical on every rank; ineligible calls
 *                        must still be bit-identical.
 * Exit status 0 when every check passed on every rank. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

enum { kLarge = 1 << 16, kSmall = 100 };

static double tol = -1; /* < 0: exact mode */

static void fill(float* x, size_t n, int r, int salt) {
  for (size_t i = 0; i < n; ++i) x[i] = value(r, i, salt);
}
static double exact_sum(size_t i, int salt) {
  double s = 0;
  for (int r = 0; r < size; ++r) s += value(r, i, salt);
  return s;
}

static uint64_t hash_bytes(const void* p, size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ ((const unsigned char*)p)[i]) * 1099511628211ull;
  return h;
}

/* Whether every rank holds the same bytes (uint64 MIN/MAX: never a compressed type). */
static int same_everywhere(const void* p, size_t n, MPI_Comm comm) {
  uint64_t h = hash_bytes(p, n), lo, hi;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, comm);
  return lo == hi;
}

static void check_bitwise(const char* name, const void* got, const void* ref, size_t bytes) {
  check(name, memcmp(got, ref, bytes) == 0, "differs from the PMPI_ result");
}

/* expect(i) is the exact value of element i; scale the bound's sum of per-rank maxima. */
static void check_candidate(const char* name, const float* got, const float* ref, size_t n,
                            double (*expect)(size_t, int), int salt, double scale, int same,
                            MPI_Comm comm) {
  if (tol < 0) return check_bitwise(name, got, ref, n * sizeof(float));
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const double e = isfinite(expect(i, salt)) ? fabs(got[i] - expect(i, salt)) : 0;
    if (!(e <= worst)) worst = e, at = i; /* NaN counts as the worst */
  }
  char detail[160];
  snprintf(detail, sizeof detail, "error %g at %zu > %g", worst, at, tol * scale);
  check(name, worst <= tol * scale, detail);
  if (same) check(name, same_everywhere(got, n * sizeof(float), comm), "ranks differ");
}

static double expect_sum(size_t i, int salt) {
  return exact_sum(i, salt);
}
static double expect_sum_inf5(size_t i, int salt) {
  return i == 5 ? INFINITY : exact_sum(i, salt);
}
static int g_chunk_base, g_root;
static double expect_chunk(size_t i, int salt) {
  return exact_sum(g_chunk_base + i, salt);
}
static double expect_gather(size_t i, int salt) {
  return value((int)(i / (kLarge / size)), i % (kLarge / size), salt);
}
static double expect_root(size_t i, int salt) {
  return value(g_root, i, salt);
}

static float* alloc(size_t n) {
  return (float*)calloc(n, sizeof(float));
}

static void allreduce_checks(void) {
  float *x = alloc(kLarge), *got = alloc(kLarge), *ref = alloc(kLarge);
  fill(x, kLarge, rank, 1);
  PMPI_Allreduce(x, ref, kLarge, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(x, got, kLarge, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  check_candidate("allreduce", got, ref, kLarge, expect_sum, 1, size, 1, MPI_COMM_WORLD);
  memcpy(got, x, kLarge * sizeof(float));
  MPI_Allreduce(MPI_IN_PLACE, got, kLarge, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  check_candidate("allreduce in place", got, ref, kLarge, expect_sum, 1, size, 1, MPI_COMM_WORLD);

  MPI_Request req[2];
  float* got2 = alloc(kLarge);
  MPI_Iallreduce(x, got, kLarge, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req[0]);
  MPI_Wait(&req[0], MPI_STATUS_IGNORE);
  check_candidate("iallreduce+wait", got, ref, kLarge, expect_sum, 1, size, 1, MPI_COMM_WORLD);
  memset(got, 0, kLarge * sizeof(float));
  MPI_Iallreduce(x, got, kLarge, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req[0]);
  MPI_Iallreduce(x, got2, kLarge, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req[1]);
  int done = 0;
  while (!done) MPI_Testall(2, req, &done, MPI_STATUSES_IGNORE);
  check_candidate("iallreduce+testall", got2, ref, kLarge, expect_sum, 1, size, 1, MPI_COMM_WORLD);
  /* Non-finite input: the sum is Inf there; every other element is still checked. */
  x[5] = rank == 0 ? INFINITY : x[5];
  MPI_Allreduce(x, got, kLarge, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Allreduce(x, ref, kLarge, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  check("allreduce inf stays inf", isinf(got[5]) && got[5] > 0, "element 5 is not +Inf");
  check_candidate("allreduce with inf", got, ref, kLarge, expect_sum_inf5, 1, size, 1,
                  MPI_COMM_WORLD);
  free(x), free(got), free(got2), free(ref);
}

static void other_candidates(void) {
  const int chunk = kLarge / size;
  float *x = alloc(kLarge), *got = alloc(kLarge), *ref = alloc(kLarge);
  fill(x, kLarge, rank, 2);
  g_chunk_base = rank * chunk;
  PMPI_Reduce_scatter_block(x, ref, chunk, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Reduce_scatter_block(x, got, chunk, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  check_candidate("reduce_scatter_block", got, ref, chunk, expect_chunk, 2, size, 0,
                  MPI_COMM_WORLD);
  memcpy(got, x, kLarge * sizeof(float));
  MPI_Reduce_scatter_block(MPI_IN_PLACE, got, chunk, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  check_candidate("reduce_scatter_block in place", got, ref, chunk, expect_chunk, 2, size, 0,
                  MPI_COMM_WORLD);

  PMPI_Allgather(x, chunk, MPI_FLOAT, ref, chunk, MPI_FLOAT, MPI_COMM_WORLD);
  MPI_Allgather(x, chunk, MPI_FLOAT, got, chunk, MPI_FLOAT, MPI_COMM_WORLD);
  check_candidate("allgather", got, ref, (size_t)chunk * size, expect_gather, 2, 1, 1,
                  MPI_COMM_WORLD);
  memset(got, 0, kLarge * sizeof(float));
  memcpy(got + (size_t)rank * chunk, x, chunk * sizeof(float));
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got, chunk, MPI_FLOAT, MPI_COMM_WORLD);
  check_candidate("allgather in place", got, ref, (size_t)chunk * size, expect_gather, 2, 1, 0,
                  MPI_COMM_WORLD);

  g_root = size - 1;
  fill(got, kLarge, rank, 3);
  fill(ref, kLarge, rank, 3);
  PMPI_Bcast(ref, kLarge, MPI_FLOAT, g_root, MPI_COMM_WORLD);
  MPI_Bcast(got, kLarge, MPI_FLOAT, g_root, MPI_COMM_WORLD);
  check_candidate("bcast", got, ref, kLarge, expect_root, 3, 1, 0, MPI_COMM_WORLD);
  free(x), free(got), free(ref);
}

static void user_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  for (int i = 0; i < *len; ++i) ((float*)inout)[i] += ((float*)in)[i];
}

/* out = MPI_Allreduce(x) through the shim, ref = PMPI_Allreduce(x): must be bit-identical. */
static void exact_allreduce(const char* name, const void* x, int count, MPI_Datatype type,
                            MPI_Op op, MPI_Comm comm, size_t bytes) {
  void *got = malloc(bytes), *ref = malloc(bytes);
  PMPI_Allreduce(x, ref, count, type, op, comm);
  MPI_Allreduce(x, got, count, type, op, comm);
  check_bitwise(name, got, ref, bytes);
  free(got), free(ref);
}

static void ineligible_checks(void) {
  float* x = alloc(kLarge);
  double* d = (double*)calloc(kLarge, sizeof(double));
  fill(x, kLarge, rank, 4);
  for (int i = 0; i < kLarge; ++i) d[i] = x[i];
  exact_allreduce("small allreduce", x, kSmall, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                  kSmall * sizeof(float));
  exact_allreduce("double allreduce", d, kLarge, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                  kLarge * sizeof(double));
  exact_allreduce("max allreduce", x, kLarge, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD,
                  kLarge * sizeof(float));
  MPI_Op op;
  MPI_Op_create(user_sum, 1, &op);
  exact_allreduce("user-op allreduce", x, kLarge, MPI_FLOAT, op, MPI_COMM_WORLD,
                  kLarge * sizeof(float));
  MPI_Op_free(&op);
  /* Derived datatypes cannot be summed by MPI: gather and broadcast them. */
  MPI_Datatype four;
  MPI_Type_contiguous(4, MPI_FLOAT, &four);
  MPI_Type_commit(&four);
  const int chunk = kLarge / size / 4; /* in units of four floats */
  float *got = alloc(kLarge), *ref = alloc(kLarge);
  PMPI_Allgather(x, chunk, four, ref, chunk, four, MPI_COMM_WORLD);
  MPI_Allgather(x, chunk, four, got, chunk, four, MPI_COMM_WORLD);
  check_bitwise("derived-type allgather", got, ref, (size_t)chunk * 4 * size * sizeof(float));
  memcpy(got, x, kLarge * sizeof(float));
  memcpy(ref, x, kLarge * sizeof(float));
  PMPI_Bcast(ref, kLarge / 4, four, 0, MPI_COMM_WORLD);
  MPI_Bcast(got, kLarge / 4, four, 0, MPI_COMM_WORLD);
  check_bitwise("derived-type bcast", got, ref, kLarge * sizeof(float));
  free(got), free(ref);
  MPI_Type_free(&four);
  free(x), free(d);
}

/* A communicator whose info says octet_compress=false on the ranks where optout(rank). */
static void optout_check(const char* name, int (*optout)(int)) {
  MPI_Comm comm;
  MPI_Info info;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Info_create(&info);
  MPI_Info_set(info, "octet_compress", optout(rank) ? "false" : "true");
  MPI_Comm_set_info(comm, info);
  MPI_Info_free(&info);
  float* x = alloc(kLarge);
  fill(x, kLarge, rank, 5);
  exact_allreduce(name, x, kLarge, MPI_FLOAT, MPI_SUM, comm, kLarge * sizeof(float));
  free(x);
  MPI_Comm_free(&comm);
}
static int all_ranks(int r) {
  return 1;
}
static int rank_zero(int r) {
  return r == 0;
}

/* A sub-communicator (even/odd ranks): its Octet state is created at its first call. */
static void split_check(void) {
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  float *x = alloc(kLarge), *got = alloc(kLarge), *ref = alloc(kLarge);
  fill(x, kLarge, rank, 6);
  PMPI_Allreduce(x, ref, kLarge, MPI_FLOAT, MPI_SUM, half);
  MPI_Allreduce(x, got, kLarge, MPI_FLOAT, MPI_SUM, half);
  int hsize;
  MPI_Comm_size(half, &hsize);
  if (tol < 0) {
    check_bitwise("split allreduce", got, ref, kLarge * sizeof(float));
  } else {
    double worst = 0;
    for (int i = 0; i < kLarge; ++i) worst = fmax(worst, fabs((double)got[i] - ref[i]));
    check("split allreduce", worst <= tol * hsize, "too far from the PMPI_ result");
    check("split allreduce", same_everywhere(got, kLarge * sizeof(float), half), "ranks differ");
  }
  free(x), free(got), free(ref);
  MPI_Comm_free(&half);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "--approx")) tol = atof(argv[i + 1]);
  allreduce_checks();
  other_candidates();
  ineligible_checks();
  optout_check("opt-out communicator", all_ranks);
  optout_check("opt-out on rank 0 only", rank_zero);
  split_check();
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%s: %d failed checks\n", total ? "FAILED" : "PASSED", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
