// The intercepted collectives: which calls are eligible, the compressed path, the shadow path
// (exact result returned, compression error recorded) and the pass-through path.
//
// Eligibility only looks at what MPI requires to be equal on every rank (count, datatype, op,
// communicator) and at the configuration agreed at MPI_Init, so every rank decides alike.
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "shim.h"

namespace octet_pmpi {
namespace {

bool is_fp32(MPI_Datatype type) {
  return type == MPI_FLOAT || type == MPI_REAL;
}

// The cheap local test first: statistics are only kept for fp32 calls, and nothing else is done
// for other calls, so the pass-through path stays a few comparisons long.
bool interesting(MPI_Datatype type) {
  const State& s = state();
  return (s.active || s.recording) && is_fp32(type);
}

// The communicator entry when this call compresses, else nullptr (collective on first use).
CommEntry* eligible(octet_shim_op op, uint64_t message_bytes, bool op_is_sum, MPI_Comm comm) {
  const State& s = state();
  if (!s.active || !octet_shim_config_wants(&s.config, op) || !op_is_sum) return nullptr;
  if (s.config.policy == OCTET_POLICY_NEVER) return nullptr;
  if (message_bytes == 0 || message_bytes < s.config.min_bytes || comm == MPI_COMM_NULL)
    return nullptr;
  return comm_entry(comm);
}

// Whether a compressed MPI_Iallreduce runs on the progress thread (see progress.cc). Shadow mode
// runs it eagerly: the exact call it adds must follow on the caller's thread.
bool background() {
  const State& s = state();
  return s.threads_ok && !s.config.shadow && s.config.progress == OCTET_SHIM_PROGRESS_THREAD;
}

uint64_t encoded_bytes(size_t count) {
  octet_options o;
  octet_options_init(&o);
  o.type = state().config.type;
  o.block_size = state().config.block;
  size_t bytes = 4 * count;
  octet_encoded_size(count, &o, &bytes);  // the configuration was validated at MPI_Init
  return bytes;
}

// Options for one compressed call. The seed advances with the communicator's call counter, which
// is equal on every rank; the error-feedback residual is keyed by where the result goes, since
// frameworks reuse the same gradient buffers every step.
octet_options options_for(CommEntry* entry, octet_shim_op op, const void* buffer, size_t count,
                          std::string* key) {
  const octet_shim_config& c = state().config;
  octet_options o;
  octet_options_init(&o);
  o.type = c.type;
  o.block_size = c.block;
  o.stochastic = c.stochastic;
  o.seed = (next_call_index(entry) + 1) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(op);
  o.min_bytes = 0;  // the floor is checked already (eligible)
  // Shadow mode measures what compression would do, so it always compresses.
  o.policy = c.shadow ? OCTET_POLICY_ALWAYS : c.policy;
  o.average = 0;
  if (c.error_feedback) {
    *key = std::string(octet_shim_op_name(op)) + ":" + std::to_string(entry_id(entry)) + ":" +
           std::to_string(reinterpret_cast<uintptr_t>(buffer)) + ":" + std::to_string(count);
    o.error_feedback_key = key->c_str();
  }
  return o;
}

// Shadow mode: how far the compressed result is from the exact one. Elements whose exact value is
// not finite are skipped (there is no error to speak of); a non-finite approximation of a finite
// value counts as an infinite error.
void measure(const float* approx, const float* exact, size_t n, CallRecord* r) {
  double max_abs = 0, absmax = 0, sum_sq = 0;
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(exact[i])) continue;
    const double e = std::fabs(static_cast<double>(approx[i]) - exact[i]);
    max_abs = std::fmax(max_abs, std::isnan(e) ? INFINITY : e);
    absmax = std::fmax(absmax, std::fabs(exact[i]));
    sum_sq += e * e;
    ++m;
  }
  r->has_error = true;
  r->max_abs_error = max_abs;
  r->max_rel_error = absmax > 0 ? max_abs / absmax : (max_abs > 0 ? INFINITY : 0.0);
  r->sum_sq_error = sum_sq;
  r->error_elements = m;
}

// Records whether a started call compresses (`auto` may send it as MPI's own fp32 call) and the
// bytes it sends; passes the start's status on.
octet_status noted(octet_status started, octet_request* r, CallRecord* rec, size_t count) {
  int compressed = 0;
  if (started != OCTET_OK || octet_request_compressed(*r, &compressed) != OCTET_OK) return started;
  rec->compressed = compressed != 0;
  if (compressed) rec->bytes_sent = encoded_bytes(count);
  return started;
}

// For a blocking call: asks the policy (OCTET_POLICY; counted on every rank in call order, on the
// thread that runs the communicator's Octet work) and starts the Octet operation only where it
// compresses; elsewhere starts nothing and leaves *compress 0, and the caller runs MPI's own call
// on the application's communicator (MPI's semantics and bits). The operation then runs with
// policy `always`, so the call is not counted twice.
template <typename Start>
octet_status start_if_compressed(CommEntry* e, octet_collective op, size_t count,
                                 const octet_options& o, int* compress, const Start& start) {
  const octet_status d = octet_policy_decide(entry_comm(e), op, count, &o, compress);
  if (d != OCTET_OK || !*compress) return d;
  octet_options always = o;
  always.policy = OCTET_POLICY_ALWAYS;
  return start(always);
}

// The compressed allreduce, plain or shadow; shared by MPI_Allreduce and MPI_Iallreduce.
int compressed_allreduce(CommEntry* e, octet_shim_op op, const void* sendbuf, void* recvbuf,
                         int count, MPI_Datatype type, MPI_Comm comm, CallRecord* rec) {
  std::string key;
  const octet_options o = options_for(e, op, recvbuf, count, &key);
  const float* in = sendbuf == MPI_IN_PLACE ? static_cast<const float*>(recvbuf)
                                            : static_cast<const float*>(sendbuf);
  const bool shadow = state().config.shadow;
  std::vector<float> approx(shadow ? count : 0);
  float* out = shadow ? approx.data() : static_cast<float*>(recvbuf);
  const float* send = sendbuf == MPI_IN_PLACE && !shadow ? nullptr : in;
  int compress = 1;
  const octet_status st = run_compressed(e, [&](octet_request* r) {
    return start_if_compressed(
        e, OCTET_COLLECTIVE_ALLREDUCE, count, o, &compress, [&](const octet_options& a) {
          return noted(octet_iallreduce(entry_comm(e), send, out, count, &a, r), r, rec, count);
        });
  });
  if (st != OCTET_OK) return raise_error(comm, st, octet_shim_op_name(op));
  if (!compress) return PMPI_Allreduce(sendbuf, recvbuf, count, type, MPI_SUM, comm);
  if (!shadow) return MPI_SUCCESS;
  const int rc = PMPI_Allreduce(sendbuf, recvbuf, count, type, MPI_SUM, comm);
  if (rc == MPI_SUCCESS) measure(approx.data(), static_cast<float*>(recvbuf), count, rec);
  return rc;
}

// The MPI request of a compressed MPI_Iallreduce: a generalized request, completed by the
// progress thread (or at once in eager mode); MPI_Wait returns the operation's error code.
struct Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  int code = MPI_SUCCESS;
};
int query_pending(void* state, MPI_Status* status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return state ? static_cast<Pending*>(state)->code : MPI_SUCCESS;
}
int free_pending(void* state) {
  delete static_cast<Pending*>(state);
  return MPI_SUCCESS;
}
int cancel_nothing(void*, int) {  // a started collective cannot be cancelled
  return MPI_SUCCESS;
}

int completed_request(MPI_Request* request) {
  int rc = PMPI_Grequest_start(query_pending, free_pending, cancel_nothing, nullptr, request);
  if (rc == MPI_SUCCESS) rc = PMPI_Grequest_complete(*request);
  return rc;
}

// A compressed allreduce on the progress thread, behind an MPI request the application waits on.
int background_allreduce(CommEntry* e, const void* sendbuf, void* recvbuf, int count,
                         MPI_Request* request, CallRecord* rec) {
  auto key = std::make_shared<std::string>();
  octet_options o = options_for(e, OCTET_SHIM_OP_IALLREDUCE, recvbuf, count, key.get());
  auto* pending = new Pending;
  const int rc = PMPI_Grequest_start(query_pending, free_pending, cancel_nothing, pending, request);
  if (rc != MPI_SUCCESS) {
    delete pending;
    return rc;
  }
  pending->request = *request;
  rec->compressed = true;
  rec->bytes_sent = encoded_bytes(count);
  const float* in = sendbuf == MPI_IN_PLACE ? nullptr : static_cast<const float*>(sendbuf);
  float* out = static_cast<float*>(recvbuf);
  start_compressed(
      e,
      [e, in, out, count, o, key](octet_request* r) {
        return octet_iallreduce(entry_comm(e), in, out, count, &o, r);
      },
      [pending](octet_status s) {
        if (s != OCTET_OK) pending->code = error_code(s, "iallreduce");
        PMPI_Grequest_complete(pending->request);
      });
  return MPI_SUCCESS;
}

// Runs one intercepted call: times it and records it, whichever path it took.
template <typename Body>
int timed(octet_shim_op op, uint64_t message_bytes, Body body) {
  CallRecord rec;
  if (!state().recording) return body(&rec);  // no clock reads when nobody reads the times
  rec.op = op;
  rec.message_bytes = message_bytes;
  rec.bytes_sent = message_bytes;
  const double t0 = now_seconds();
  const int rc = body(&rec);
  rec.seconds = now_seconds() - t0;
  record(rec);
  return rc;
}

// A send buffer that is also the receive buffer without MPI_IN_PLACE: MPI forbids it (OpenMPI
// answers MPI_ERR_BUFFER). Such calls go to PMPI_ so the application gets MPI's own answer.
bool aliased(const void* sendbuf, const void* recvbuf) {
  return sendbuf != MPI_IN_PLACE && sendbuf == recvbuf && sendbuf != nullptr;
}

int comm_size(MPI_Comm comm) {
  int size = 0;
  return PMPI_Comm_size(comm, &size) == MPI_SUCCESS ? size : 0;
}

bool is_root(MPI_Comm comm, int root) {
  int rank = -1;
  return PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS && rank == root;
}

}  // namespace

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm) {
  if (!interesting(type) || count < 0 || aliased(sendbuf, recvbuf))
    return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  const uint64_t bytes = 4ull * count;
  return timed(OCTET_SHIM_OP_ALLREDUCE, bytes, [&](CallRecord* rec) {
    CommEntry* e = eligible(OCTET_SHIM_OP_ALLREDUCE, bytes, op == MPI_SUM, comm);
    if (!e) return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    return compressed_allreduce(e, OCTET_SHIM_OP_ALLREDUCE, sendbuf, recvbuf, count, type, comm,
                                rec);
  });
}

int iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm, MPI_Request* request) {
  if (!interesting(type) || count < 0 || aliased(sendbuf, recvbuf))
    return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
  const uint64_t bytes = 4ull * count;
  return timed(OCTET_SHIM_OP_IALLREDUCE, bytes, [&](CallRecord* rec) {
    CommEntry* e = eligible(OCTET_SHIM_OP_IALLREDUCE, bytes, op == MPI_SUM, comm);
    if (!e) return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
    if (background()) return background_allreduce(e, sendbuf, recvbuf, count, request, rec);
    const int rc =
        compressed_allreduce(e, OCTET_SHIM_OP_IALLREDUCE, sendbuf, recvbuf, count, type, comm, rec);
    if (rc != MPI_SUCCESS) {
      *request = MPI_REQUEST_NULL;
      return rc;
    }
    return completed_request(request);
  });
}

int reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type,
                         MPI_Op op, MPI_Comm comm) {
  if (!interesting(type) || recvcount < 0 || aliased(sendbuf, recvbuf))
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  const size_t total = static_cast<size_t>(recvcount) * comm_size(comm);
  return timed(OCTET_SHIM_OP_REDUCE_SCATTER_BLOCK, 4 * total, [&](CallRecord* rec) {
    CommEntry* e = eligible(OCTET_SHIM_OP_REDUCE_SCATTER_BLOCK, 4 * total, op == MPI_SUM, comm);
    if (!e) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
    std::string key;
    const octet_options o =
        options_for(e, OCTET_SHIM_OP_REDUCE_SCATTER_BLOCK, recvbuf, recvcount, &key);
    // In place, the input fills recvbuf and the output overwrites its start: copy the input.
    std::vector<float> copy;
    const float* in = static_cast<const float*>(sendbuf);
    if (sendbuf == MPI_IN_PLACE) {
      copy.assign(static_cast<float*>(recvbuf), static_cast<float*>(recvbuf) + total);
      in = copy.data();
    }
    const bool shadow = state().config.shadow;
    std::vector<float> approx(shadow ? recvcount : 0);
    float* out = shadow ? approx.data() : static_cast<float*>(recvbuf);
    int compress = 1;
    const octet_status st = run_compressed(e, [&](octet_request* r) {
      return start_if_compressed(
          e, OCTET_COLLECTIVE_REDUCE_SCATTER, recvcount, o, &compress, [&](const octet_options& a) {
            return noted(octet_ireduce_scatter(entry_comm(e), in, out, recvcount, &a, r), r, rec,
                         total);
          });
    });
    if (st != OCTET_OK) return raise_error(comm, st, "reduce_scatter_block");
    if (!compress) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
    if (!shadow) return MPI_SUCCESS;
    const int rc = PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
    if (rc == MPI_SUCCESS) measure(out, static_cast<float*>(recvbuf), recvcount, rec);
    return rc;
  });
}

int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!interesting(recvtype) || recvcount < 0 || aliased(sendbuf, recvbuf) ||
      (!in_place && (!is_fp32(sendtype) || sendcount != recvcount)))
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  const int size = comm_size(comm);
  const size_t total = static_cast<size_t>(recvcount) * size;
  return timed(OCTET_SHIM_OP_ALLGATHER, 4 * total, [&](CallRecord* rec) {
    CommEntry* e = eligible(OCTET_SHIM_OP_ALLGATHER, 4 * total, true, comm);
    if (!e) return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    std::string key;
    const octet_options o = options_for(e, OCTET_SHIM_OP_ALLGATHER, recvbuf, recvcount, &key);
    // In place, this rank's block already sits at its slot of recvbuf: copy it out first.
    std::vector<float> copy;
    const float* in = static_cast<const float*>(sendbuf);
    if (in_place) {
      int rank = 0;
      PMPI_Comm_rank(comm, &rank);
      const float* mine =
          static_cast<const float*>(recvbuf) + static_cast<size_t>(rank) * recvcount;
      copy.assign(mine, mine + recvcount);
      in = copy.data();
    }
    const bool shadow = state().config.shadow;
    std::vector<float> approx(shadow ? total : 0);
    float* out = shadow ? approx.data() : static_cast<float*>(recvbuf);
    int compress = 1;
    const octet_status st = run_compressed(e, [&](octet_request* r) {
      return start_if_compressed(
          e, OCTET_COLLECTIVE_ALLGATHER, recvcount, o, &compress, [&](const octet_options& a) {
            return noted(octet_iallgather(entry_comm(e), in, out, recvcount, &a, r), r, rec, total);
          });
    });
    if (st != OCTET_OK) return raise_error(comm, st, "allgather");
    if (!compress)
      return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    if (!shadow) return MPI_SUCCESS;
    const int rc = PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    if (rc == MPI_SUCCESS) measure(out, static_cast<float*>(recvbuf), total, rec);
    return rc;
  });
}

int bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  if (!interesting(type) || count < 0) return PMPI_Bcast(buffer, count, type, root, comm);
  const uint64_t bytes = 4ull * count;
  return timed(OCTET_SHIM_OP_BCAST, bytes, [&](CallRecord* rec) {
    const bool root_ok = root >= 0 && root < comm_size(comm);  // else MPI reports the error
    CommEntry* e = eligible(OCTET_SHIM_OP_BCAST, bytes, root_ok, comm);
    if (!e) return PMPI_Bcast(buffer, count, type, root, comm);
    std::string key;
    const octet_options o = options_for(e, OCTET_SHIM_OP_BCAST, buffer, count, &key);
    // MPI leaves the root's buffer as it is; Octet's broadcast gives the root the decoded values
    // too (every rank bit-identical), so the root broadcasts from a copy.
    const bool shadow = state().config.shadow;
    const bool scratch = shadow || is_root(comm, root);
    float* data = static_cast<float*>(buffer);
    std::vector<float> copy(scratch ? data : nullptr, scratch ? data + count : nullptr);
    float* target = scratch ? copy.data() : data;
    int compress = 1;
    const octet_status st = run_compressed(e, [&](octet_request* r) {
      return start_if_compressed(
          e, OCTET_COLLECTIVE_BROADCAST, count, o, &compress, [&](const octet_options& a) {
            return noted(octet_ibroadcast(entry_comm(e), target, count, root, &a, r), r, rec,
                         count);
          });
    });
    if (st != OCTET_OK) return raise_error(comm, st, "bcast");
    if (!compress) return PMPI_Bcast(buffer, count, type, root, comm);
    if (!shadow) return MPI_SUCCESS;
    const int rc = PMPI_Bcast(buffer, count, type, root, comm);
    if (rc == MPI_SUCCESS) measure(copy.data(), data, count, rec);
    return rc;
  });
}

}  // namespace octet_pmpi
