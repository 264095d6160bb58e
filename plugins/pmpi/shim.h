// Internals of the PMPI shim, shared by its C and Fortran entry points.
//
// Layering: entry_c.cc / entry_fortran.cc (MPI symbols, handle conversion) -> collectives.cc
// (eligibility, compressed and shadow paths) -> state.cc (configuration agreed at MPI_Init,
// per-communicator cache) and report.cc (statistics, JSON at MPI_Finalize). Every MPI call the
// shim makes itself goes to a PMPI_ entry point, so no interceptor is ever re-entered.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "octet/octet_c.h"
#include "shim_config.h"

namespace octet_pmpi {

// What the shim knows once MPI_Init returned; read-only afterwards.
struct State {
  octet_shim_config config{};
  bool initialized = false;  // our MPI_Init hook ran (otherwise everything passes through)
  bool agreed = false;       // every rank of MPI_COMM_WORLD has the same configuration
  bool active = false;       // agreed, valid and enabled: eligible calls get compressed
  bool recording = false;    // agreed, valid and a report path is set: collect statistics
  bool threads_ok = false;   // MPI_THREAD_MULTIPLE on every rank: the progress thread may run
  int world_rank = 0;
  int world_size = 1;
};
const State& state();

// Hooks around PMPI_Init* and PMPI_Finalize (collective over MPI_COMM_WORLD).
void after_init();
void before_finalize();
// Runs a hook; an exception is printed with its reason ("octet-pmpi: <step> failed: ...").
void run_step(const char* step, void (*fn)());

// The Octet communicator behind a user communicator, or nullptr when the calls on it must pass
// through (opted out on some rank, an intercommunicator, a single rank, creation failed). The
// first call on a communicator is collective over it; later calls are a cached lookup.
struct CommEntry;
CommEntry* comm_entry(MPI_Comm comm);
octet_comm entry_comm(const CommEntry* entry);
// Counts this entry's compressed calls; equal on every rank, so usable as a shared seed.
uint64_t next_call_index(CommEntry* entry);
uint64_t entry_id(const CommEntry* entry);
// MPI_Comm_set_info (a collective call) may change the opt-out: remember this rank's key and
// decide again at the next eligible call.
void info_changed(MPI_Comm comm, MPI_Info info);

// The entry of a communicator on which every rank opted in to compressed point-to-point
// (info key octet_p2p), else nullptr. Local: a cached lookup.
CommEntry* p2p_entry(MPI_Comm comm);

// The MPI error code of an Octet failure; prints Octet's message (the first few per rank).
int error_code(octet_status status, const char* what);
// The same, and calls comm's error handler with it.
int raise_error(MPI_Comm comm, octet_status status, const char* what);

// Where compressed calls run (progress.cc). start posts an Octet nonblocking operation.
using StartFn = std::function<octet_status(octet_request*)>;
using FinishFn = std::function<void(octet_status)>;
// Runs it to completion: on the caller's thread, or behind this communicator's pending
// background operations (so that every rank starts them in the same order).
octet_status run_compressed(const CommEntry* entry, const StartFn& start);
// Runs it on the progress thread (started on first use); finish is called there on completion.
void start_compressed(const CommEntry* entry, const StartFn& start, const FinishFn& finish);
// Calls poll on the progress thread until it returns true (point-to-point completions).
using PollFn = std::function<bool()>;
void poll_in_background(const PollFn& poll);
// Waits until no operation of entry is pending (before its communicator is freed).
void drain_compressed(const CommEntry* entry);
// Completes everything pending and joins the progress thread (at MPI_Finalize).
void stop_progress();
// The thread level to ask MPI for, given the application's: MPI_THREAD_MULTIPLE when compressed
// nonblocking calls will progress on their own thread (the environment is read here, before
// MPI_Init, and again by after_init).
int wanted_thread_level(int required);

// Statistics for the report (no-ops unless state().recording).
struct CallRecord {
  octet_shim_op op;
  uint64_t message_bytes = 0;  // fp32 message size (see README: per operation)
  bool compressed = false;
  uint64_t bytes_sent = 0;
  double seconds = 0;
  bool has_error = false;  // shadow mode: the fields below are set
  double max_abs_error = 0, max_rel_error = 0, sum_sq_error = 0;
  uint64_t error_elements = 0;
};
void record(const CallRecord& call);
// Gathers every rank's statistics to rank 0, which writes the JSON (collective over WORLD).
void write_report();

// The intercepted collectives, for both language bindings. sendbuf may be MPI_IN_PLACE.
int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm);
int iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm, MPI_Request* request);
int reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type,
                         MPI_Op op, MPI_Comm comm);
int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm);

// Point-to-point on a communicator whose p2p_entry is e (p2p.cc): fp32 messages at or above
// OCTET_MIN_BYTES travel compressed; every receive goes through the communicator's matcher.
int p2p_send(CommEntry* e, const void* buf, int count, MPI_Datatype type, int dest, int tag,
             MPI_Comm comm);
int p2p_isend(CommEntry* e, const void* buf, int count, MPI_Datatype type, int dest, int tag,
              MPI_Comm comm, MPI_Request* request);
int p2p_recv(CommEntry* e, void* buf, int count, MPI_Datatype type, int source, int tag,
             MPI_Comm comm, MPI_Status* status);
int p2p_irecv(CommEntry* e, void* buf, int count, MPI_Datatype type, int source, int tag,
              MPI_Comm comm, MPI_Request* request);
int p2p_sendrecv(CommEntry* e, const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void* recvbuf, int recvcount, MPI_Datatype recvtype, int source,
                 int recvtag, MPI_Comm comm, MPI_Status* status);
// MPI_Probe (blocking) and MPI_Iprobe: report the count the application sent.
int p2p_probe(CommEntry* e, int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status,
              bool blocking);
// Generalized requests completed by the progress thread: a receive's (its status is the
// receive's) and a send's.
int start_receive_request(void* receive, MPI_Request* request);
int start_generalized(MPI_Request* request);
// The communicator of entry is being freed.
void p2p_forget(const CommEntry* entry);

double now_seconds();

}  // namespace octet_pmpi
