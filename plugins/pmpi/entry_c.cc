// The C entry points of the shim. Each forwards to PMPI_ or to the shared implementation in
// collectives.cc, and no exception ever leaves them: a failure inside the shim becomes an MPI
// error code through the communicator's error handler.
#include <cstdio>
#include <exception>

#include "shim.h"

namespace {

// Runs body; an exception (a bug or out of memory in the shim) becomes MPI_ERR_INTERN on comm.
template <typename Body>
int guarded(MPI_Comm comm, Body body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "octet-pmpi: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "octet-pmpi: internal error\n");
  }
  if (comm != MPI_COMM_NULL) PMPI_Comm_call_errhandler(comm, MPI_ERR_INTERN);
  return MPI_ERR_INTERN;
}

void init_hook() {
  octet_pmpi::run_step("initialisation (every call passes through)", octet_pmpi::after_init);
}

}  // namespace

namespace octet_pmpi {

// A start-up or shutdown step must not take the job down: a failure is printed with its reason
// and the shim stays out of the way.
void run_step(const char* step, void (*fn)()) {
  try {
    fn();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "octet-pmpi: %s failed: %s\n", step, e.what());
  } catch (...) {
    std::fprintf(stderr, "octet-pmpi: %s failed: unknown exception\n", step);
  }
}

}  // namespace octet_pmpi

extern "C" {

// MPI_Init asks for MPI_THREAD_MULTIPLE when compressed nonblocking calls will progress on the
// shim's own thread (OCTET_PROGRESS=thread, the default); *provided tells the truth either way.
int MPI_Init(int* argc, char*** argv) {
  const int level = octet_pmpi::wanted_thread_level(MPI_THREAD_SINGLE);
  int provided = 0;
  const int rc = level == MPI_THREAD_SINGLE ? PMPI_Init(argc, argv)
                                            : PMPI_Init_thread(argc, argv, level, &provided);
  if (rc == MPI_SUCCESS) init_hook();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, octet_pmpi::wanted_thread_level(required), provided);
  if (rc == MPI_SUCCESS) init_hook();
  return rc;
}

int MPI_Finalize(void) {
  octet_pmpi::run_step("finalize (report)", octet_pmpi::before_finalize);
  return PMPI_Finalize();
}

int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info) {
  return guarded(comm, [&] {
    const int rc = PMPI_Comm_set_info(comm, info);
    if (rc == MPI_SUCCESS) octet_pmpi::info_changed(comm, info);
    return rc;
  });
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  return guarded(comm,
                 [&] { return octet_pmpi::allreduce(sendbuf, recvbuf, count, type, op, comm); });
}

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request) {
  return guarded(comm, [&] {
    return octet_pmpi::iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
  });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm) {
  return guarded(comm, [&] {
    return octet_pmpi::reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return guarded(comm, [&] {
    return octet_pmpi::allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  return guarded(comm, [&] { return octet_pmpi::bcast(buffer, count, type, root, comm); });
}

// Point-to-point: untouched unless every rank opted the communicator in (octet_p2p).
int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  octet_pmpi::CommEntry* e = octet_pmpi::p2p_entry(comm);
  if (!e) return PMPI_Send(buf, count, type, dest, tag, comm);
  return guarded(comm, [&] { return octet_pmpi::p2p_send(e, buf, count, type, dest, tag, comm); });
}

int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  octet_pmpi::CommEntry* e = octet_pmpi::p2p_entry(comm);
  if (!e) return PMPI_Isend(buf, count, type, dest, tag, comm, request);
  return guarded(
      comm, [&] { return octet_pmpi::p2p_isend(e, buf, count, type, dest, tag, comm, request); });
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  octet_pmpi::CommEntry* e = octet_pmpi::p2p_entry(comm);
  if (!e) return PMPI_Recv(buf, count, type, source, tag, comm, status);
  return guarded(
      comm, [&] { return octet_pmpi::p2p_recv(e, buf, count, type, source, tag, comm, status); });
}

int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request) {
  octet_pmpi::CommEntry* e = octet_pmpi::p2p_entry(comm);
  if (!e) return PMPI_Irecv(buf, count, type, source, tag, comm, request);
  return guarded(
      comm, [&] { return octet_pmpi::p2p_irecv(e, buf, count, type, source, tag, comm, request); });
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status* status) {
  octet_pmpi::CommEntry* e = octet_pmpi::p2p_entry(comm);
  if (!e)
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                         source, recvtag, comm, status);
  return guarded(comm, [&] {
    return octet_pmpi::p2p_sendrecv(e, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                                    recvcount, recvtype, source, recvtag, comm, status);
  });
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  octet_pmpi::CommEntry* e = octet_pmpi::p2p_entry(comm);
  if (!e) return PMPI_Probe(source, tag, comm, status);
  return guarded(
      comm, [&] { return octet_pmpi::p2p_probe(e, source, tag, comm, nullptr, status, true); });
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  octet_pmpi::CommEntry* e = octet_pmpi::p2p_entry(comm);
  if (!e) return PMPI_Iprobe(source, tag, comm, flag, status);
  return guarded(comm,
                 [&] { return octet_pmpi::p2p_probe(e, source, tag, comm, flag, status, false); });
}

}  // extern "C"
