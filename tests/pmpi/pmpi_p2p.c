/* A model-parallel-style MPI program, not written against Octet, that opts one communicator in
 * to compressed point-to-point (MPI_Comm_set_info "octet_p2p" = "true") and checks that MPI's
 * guarantees still hold there: values within the codec's bound, counts in floats, non-overtaking
 * order across compressed, uncompressed and non-float messages, MPI_ANY_SOURCE/MPI_ANY_TAG,
 * MPI_ERR_TRUNCATE, probes that report what was sent, nonblocking forms; and that the messages
 * really travel compressed (PMPI_Probe sees the wire size) while other communicators are left
 * untouched. Exit status 0 when every check passed on every rank. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

enum { kBig = 1 << 16, kSmall = 10 };
static const double kTol = 0.0071; /* bound_fraction(dynamic) x max |x| (= 1): one quantization */

static float* values(int from, int n, int salt) {
  float* x = malloc((size_t)n * sizeof *x);
  for (int i = 0; i < n; ++i) x[i] = value(from, (size_t)i, salt);
  return x;
}

/* got[0, n) within the bound of what rank `from` sent with `salt`; count as MPI reports it. */
static void check_message(const char* name, const float* got, int n, int from, int salt,
                          const MPI_Status* st) {
  int count = -1;
  MPI_Get_count(st, MPI_FLOAT, &count);
  double worst = 0;
  for (int i = 0; i < n; ++i) worst = fmax(worst, fabs(got[i] - value(from, (size_t)i, salt)));
  char detail[160];
  snprintf(detail, sizeof detail, "count %d (want %d), source %d (want %d), error %g", count, n,
           st->MPI_SOURCE, from, worst);
  check(name, count == n && st->MPI_SOURCE == from && worst <= kTol, detail);
}

static void ring(MPI_Comm comm) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  float* x = values(rank, kBig, 1);
  float* y = malloc(kBig * sizeof *y);
  MPI_Status st;
  MPI_Sendrecv(x, kBig, MPI_FLOAT, next, 1, y, kBig, MPI_FLOAT, prev, 1, comm, &st);
  check_message("sendrecv ring", y, kBig, prev, 1, &st);
  MPI_Request reqs[2];
  MPI_Irecv(y, kBig, MPI_FLOAT, prev, 2, comm, &reqs[0]);
  MPI_Isend(x, kBig, MPI_FLOAT, next, 2, comm, &reqs[1]);
  MPI_Status sts[2];
  MPI_Waitall(2, reqs, sts);
  check_message("isend/irecv ring (waitall)", y, kBig, prev, 1, &sts[0]);
  free(x);
  free(y);
}

/* Rank 0 sends four messages with one tag; rank 1 receives them with MPI_ANY_TAG, in order. */
static void order(MPI_Comm comm) {
  float* big = values(0, kBig, 3);
  float* small = values(0, kSmall, 4);
  int ints[5] = {1, 2, 3, 4, 5};
  if (rank == 0) {
    MPI_Send(small, kSmall, MPI_FLOAT, 1, 7, comm);
    MPI_Send(big, kBig, MPI_FLOAT, 1, 7, comm);
    MPI_Send(ints, 5, MPI_INT, 1, 7, comm);
    MPI_Send(big, kBig / 2, MPI_FLOAT, 1, 7, comm);
  } else if (rank == 1) {
    float* y = malloc(kBig * sizeof *y);
    int got[5] = {0};
    MPI_Status st;
    MPI_Recv(y, kBig, MPI_FLOAT, 0, MPI_ANY_TAG, comm, &st);
    check_message("order: uncompressed first", y, kSmall, 0, 4, &st);
    MPI_Recv(y, kBig, MPI_FLOAT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
    check_message("order: compressed second", y, kBig, 0, 3, &st);
    MPI_Recv(got, 5, MPI_INT, 0, 7, comm, &st);
    check("order: ints third", !memcmp(got, ints, sizeof ints), "ints differ");
    MPI_Recv(y, kBig, MPI_FLOAT, 0, 7, comm, &st);
    check_message("order: half-size compressed fourth", y, kBig / 2, 0, 3, &st);
    free(y);
  }
  free(big);
  free(small);
}

/* Every rank sends to rank 0, which takes them with MPI_ANY_SOURCE after probing each. */
static void any_source_and_probe(MPI_Comm comm) {
  const int n = kBig + 1000 * rank;
  float* x = values(rank, n, 5);
  if (rank != 0) MPI_Send(x, n, MPI_FLOAT, 0, 9, comm);
  if (rank == 0) {
    for (int k = 1; k < size; ++k) {
      MPI_Status st;
      int count = -1, flag = 0;
      if (k % 2)
        MPI_Probe(MPI_ANY_SOURCE, 9, comm, &st);
      else
        while (!flag) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st);
      MPI_Get_count(&st, MPI_FLOAT, &count);
      const int from = st.MPI_SOURCE;
      char detail[96];
      snprintf(detail, sizeof detail, "probe says %d floats from %d", count, from);
      check("probe reports the float count sent", count == kBig + 1000 * from, detail);
      float* y = malloc((size_t)count * sizeof *y);
      MPI_Recv(y, count, MPI_FLOAT, from, MPI_ANY_TAG, comm, &st);
      check_message("receive after probe", y, count, from, 5, &st);
      free(y);
    }
  }
  free(x);
}

static void truncation_and_wire(MPI_Comm comm) {
  float* x = values(0, kBig, 6);
  if (rank == 0) {
    MPI_Send(x, kBig, MPI_FLOAT, 1, 11, comm);
    MPI_Send(x, kBig, MPI_FLOAT, 1, 12, comm);
  } else if (rank == 1) {
    MPI_Status st;
    PMPI_Probe(0, 12 - 1, comm, &st); /* what MPI itself carries */
    int bytes = 0;
    PMPI_Get_count(&st, MPI_BYTE, &bytes);
    char detail[96];
    snprintf(detail, sizeof detail, "%d bytes on the wire for %d floats", bytes, kBig);
    check("the message travels compressed", bytes > 0 && bytes < kBig * 4 / 3, detail);
    float* y = malloc(kBig * sizeof *y);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    const int rc = MPI_Recv(y, 1000, MPI_FLOAT, 0, 11, comm, &st);
    int cls = 0;
    MPI_Error_class(rc, &cls);
    snprintf(detail, sizeof detail, "error class %d", cls);
    check("a receive buffer too small gives MPI_ERR_TRUNCATE", cls == MPI_ERR_TRUNCATE, detail);
    MPI_Recv(y, kBig, MPI_FLOAT, 0, 12, comm, &st);
    check_message("the next message is intact", y, kBig, 0, 6, &st);
    free(y);
  }
  free(x);
}

/* A communicator that did not opt in carries the exact bytes. */
static void untouched(void) {
  float* x = values(rank, kBig, 8);
  float* y = malloc(kBig * sizeof *y);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  MPI_Sendrecv(x, kBig, MPI_FLOAT, next, 3, y, kBig, MPI_FLOAT, prev, 3, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  float* want = values(prev, kBig, 8);
  check("other communicators are untouched", !memcmp(y, want, kBig * sizeof *y), "bits differ");
  free(x);
  free(y);
  free(want);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm comm = p2p_comm();
  ring(comm);
  order(comm);
  any_source_and_probe(comm);
  truncation_and_wire(comm);
  untouched();
  MPI_Comm_free(&comm);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all ? 1 : 0;
}
