/* An unmodified allreduce benchmark: plain MPI_Allreduce(MPI_FLOAT, MPI_SUM) over a range of
 * sizes. It knows nothing about Octet on purpose, so that the same binary measures the fp32
 * baseline and, with the PMPI shim preloaded, the compressed path.
 *
 *   allreduce_plain [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-B BUDGET] [-t TOL]
 *
 * Sizes take K/M/G suffixes (powers of 1024). Each size runs max(3, min(ITERS, BUDGET/size))
 * timed calls, so large sizes do not take minutes on a slow link. Each call is timed between
 * barriers and the slowest rank's time counts. Rank r sends small integers, so the exact sum is
 * known and representable: `max_err` is the largest |result - exact| divided by the largest
 * |exact|, i.e. in the units of Octet's bound_fraction. The program exits 1 if max_err > TOL
 * (default 0: an uncompressed allreduce must be exact). */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  size_t min_bytes, max_bytes;
  double factor;
  int iters, warmup;
  size_t budget_bytes;
  double tolerance;
} Options;

typedef struct {
  double avg_s, min_s, max_s, checksum, max_err;
} Result;

static int parse_size(const char* text, size_t* out) {
  char* end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno != 0 || end == text || v < 0) return -1;
  double scale = 1;
  if (*end == 'K' || *end == 'k')
    scale = 1024.0, ++end;
  else if (*end == 'M' || *end == 'm')
    scale = 1024.0 * 1024, ++end;
  else if (*end == 'G' || *end == 'g')
    scale = 1024.0 * 1024 * 1024, ++end;
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return -1;
  *out = (size_t)(v * scale);
  return 0;
}

static int parse_int(const char* text, int min, int* out) {
  char* end = NULL;
  long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < min || v > 1000000) return -1;
  *out = (int)v;
  return 0;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: allreduce_plain [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] "
          "[-B BUDGET] [-t TOL]\n"
          "  -b/-e  first/last message size in bytes, K/M/G suffixes (default 4K..64M)\n"
          "  -f     size multiplier between steps (default 4)\n"
          "  -n     timed calls per size at most (default 20); -w untimed warmup calls (2)\n"
          "  -B     bytes per size to move at most, which caps the calls (default 256M)\n"
          "  -t     largest max_err accepted (default 0: exact)\n");
}

/* Returns 0 on success, 1 on bad options (after printing why on rank 0). */
static int parse_options(int argc, char** argv, int rank, Options* o) {
  *o = (Options){4096, 64u << 20, 4.0, 20, 2, 256u << 20, 0.0};
  int c, bad = 0;
  char* end = NULL;
  while (!bad && (c = getopt(argc, argv, "b:e:f:n:w:B:t:h")) != -1) {
    switch (c) {
      case 'b':
        bad = parse_size(optarg, &o->min_bytes);
        break;
      case 'e':
        bad = parse_size(optarg, &o->max_bytes);
        break;
      case 'B':
        bad = parse_size(optarg, &o->budget_bytes);
        break;
      case 'n':
        bad = parse_int(optarg, 1, &o->iters);
        break;
      case 'w':
        bad = parse_int(optarg, 0, &o->warmup);
        break;
      case 'f':
        o->factor = strtod(optarg, &end);
        bad = *end != '\0' || !(o->factor > 1);
        break;
      case 't':
        o->tolerance = strtod(optarg, &end);
        bad = *end != '\0' || !(o->tolerance >= 0);
        break;
      case 'h':
        if (rank == 0) usage(stdout);
        return 2;
      default:
        bad = 1;
    }
  }
  if (!bad && (o->min_bytes < sizeof(float) || o->min_bytes > o->max_bytes ||
               o->max_bytes / sizeof(float) > INT32_MAX)) {
    if (rank == 0) fprintf(stderr, "allreduce_plain: need 4 <= MIN <= MAX < 8 GiB\n");
    return 1;
  }
  if (bad && rank == 0) {
    fprintf(stderr, "allreduce_plain: bad option value\n");
    usage(stderr);
  }
  return bad ? 1 : 0;
}

/* Integers in [-127, 127]: any sum over fewer than 2^17 ranks is exact in fp32. */
static float value_at(size_t i, int rank) {
  uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(rank * 40503u);
  return (float)((int)(h % 255u) - 127);
}

static void fill(float* send, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) send[i] = value_at(i, rank);
}

static void check(const float* recv, size_t count, int ranks, Result* r) {
  double checksum = 0, max_abs_err = 0, max_exact = 0;
  for (size_t i = 0; i < count; ++i) {
    double exact = 0;
    for (int q = 0; q < ranks; ++q) exact += value_at(i, q);
    double err = fabs((double)recv[i] - exact);
    if (!(err <= max_abs_err)) max_abs_err = err; /* NaN wins too */
    if (fabs(exact) > max_exact) max_exact = fabs(exact);
    checksum += recv[i];
  }
  r->checksum = checksum;
  r->max_err = max_exact > 0 ? max_abs_err / max_exact : max_abs_err;
}

static void run_size(const Options* o, size_t count, float* send, float* recv, int ranks,
                     Result* r) {
  size_t bytes = count * sizeof(float);
  int iters = (int)(o->budget_bytes / bytes);
  if (iters > o->iters) iters = o->iters;
  if (iters < 3) iters = 3;
  for (int i = 0; i < o->warmup; ++i)
    MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double sum = 0, mn = INFINITY, mx = 0;
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    sum += slowest;
    if (slowest < mn) mn = slowest;
    if (slowest > mx) mx = slowest;
  }
  r->avg_s = sum / iters;
  r->min_s = mn;
  r->max_s = mx;
  check(recv, count, ranks, r);
  /* Every rank must agree, so the worst rank's error is the one reported. */
  double err = r->max_err;
  MPI_Allreduce(&err, &r->max_err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

static void print_row(size_t bytes, int ranks, const Result* r) {
  double algbw = (double)bytes / r->avg_s / 1e9;
  double busbw = algbw * 2.0 * (ranks - 1) / ranks;
  printf("%12zu %11zu %10.6f %10.6f %10.6f %8.3f %8.3f %16.1f %10.3g\n", bytes,
         bytes / sizeof(float), r->avg_s, r->min_s, r->max_s, algbw, busbw, r->checksum,
         r->max_err);
  fflush(stdout);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Options o;
  int status = parse_options(argc, argv, rank, &o);
  if (status != 0) {
    MPI_Finalize();
    return status == 2 ? 0 : 1;
  }
  size_t max_count = o.max_bytes / sizeof(float);
  float* send = malloc(max_count * sizeof(float));
  float* recv = malloc(max_count * sizeof(float));
  if (!send || !recv) {
    fprintf(stderr, "allreduce_plain: rank %d cannot allocate %zu bytes\n", rank, 2 * o.max_bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  fill(send, max_count, rank);
  if (rank == 0) {
    printf("# allreduce_plain: %d ranks, MPI_FLOAT/MPI_SUM, time per call = slowest rank\n", ranks);
    printf("# %10s %11s %10s %10s %10s %8s %8s %16s %10s\n", "bytes", "count", "avg_s", "min_s",
           "max_s", "algbw", "busbw", "checksum", "max_err");
  }
  int failed = 0;
  for (double s = (double)o.min_bytes; s <= (double)o.max_bytes * 1.0000001; s *= o.factor) {
    size_t count = (size_t)s / sizeof(float);
    Result r;
    run_size(&o, count, send, recv, ranks, &r);
    if (rank == 0) print_row(count * sizeof(float), ranks, &r);
    if (!(r.max_err <= o.tolerance)) failed = 1;
  }
  if (rank == 0 && failed)
    fprintf(stderr, "allreduce_plain: FAILED: max_err above tolerance %g\n", o.tolerance);
  free(send);
  free(recv);
  MPI_Finalize();
  return failed;
}
