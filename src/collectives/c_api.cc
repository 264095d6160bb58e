// The C API (octet/octet_c.h): thin wrappers that never let an exception escape.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <new>
#include <string>

#include "collectives/c_comm.h"
#include "octet/codec.h"
#include "octet/units.h"

namespace octet {
namespace detail {
namespace {

thread_local std::string g_last_error;

CodecOptions codec_of(const octet_options* o) {
  CodecOptions c;
  if (!o) return c;
  c.type = static_cast<DataType>(o->type);
  c.block_size = o->block_size;
  c.stochastic = o->stochastic != 0;
  c.seed = o->seed;
  return c;
}

CollectiveOptions convert(const octet_options* o) {
  CollectiveOptions c;
  if (!o) return c;
  c.codec = codec_of(o);
  if (o->error_feedback_key) c.error_feedback_key = o->error_feedback_key;
  c.min_bytes = o->min_bytes;
  c.average = o->average != 0;
  if (o->policy < OCTET_POLICY_AUTO || o->policy > OCTET_POLICY_NEVER)
    throw Error(ErrorCode::kInvalidArgument, "unknown policy " + std::to_string(o->policy));
  c.policy = static_cast<Policy>(o->policy);
  return c;
}

Collective collective_of(octet_collective op) {
  if (op < OCTET_COLLECTIVE_ALLREDUCE || op > OCTET_COLLECTIVE_BROADCAST)
    throw Error(ErrorCode::kInvalidArgument, "unknown collective " + std::to_string(op));
  return static_cast<Collective>(op);
}

Comm& comm_of(octet_comm comm) {
  if (!comm) throw Error(ErrorCode::kInvalidArgument, "null communicator");
  return comm->comm;
}

// Starts a non-blocking operation and hands out its request.
template <typename Start>
octet_status start(octet_request* request, Start&& start_op) {
  return guard([&] {
    if (!request) throw Error(ErrorCode::kInvalidArgument, "null request pointer");
    *request = nullptr;
    auto r = new octet_request_s{start_op()};
    *request = r;
  });
}

}  // namespace

octet_status guarded(void (*fn)(void*), void* context) {
  try {
    fn(context);
    return OCTET_OK;
  } catch (const Error& e) {
    g_last_error = e.what();
    return static_cast<octet_status>(e.code());
  } catch (const std::bad_alloc&) {
    g_last_error = "out of memory";
    return OCTET_ERR_INTERNAL;
  } catch (const std::exception& e) {
    g_last_error = e.what();
    return OCTET_ERR_INTERNAL;
  } catch (...) {
    g_last_error = "unknown exception";
    return OCTET_ERR_INTERNAL;
  }
}

octet_status wrap_comm(std::shared_ptr<Transport> transport, octet_comm* out) {
  return guard([&] {
    if (!out) throw Error(ErrorCode::kInvalidArgument, "null communicator pointer");
    *out = new octet_comm_s(std::move(transport));
  });
}

const char* last_error() {
  return g_last_error.c_str();
}

}  // namespace detail
}  // namespace octet

using octet::detail::codec_of;
using octet::detail::collective_of;
using octet::detail::comm_of;
using octet::detail::convert;
using octet::detail::guard;

extern "C" {

void octet_options_init(octet_options* options) {
  if (!options) return;
  options->type = OCTET_TYPE_DYNAMIC;
  options->block_size = 0;
  options->stochastic = 0;
  options->seed = 0;
  options->error_feedback_key = nullptr;
  options->min_bytes = 0;
  options->average = 0;
  options->policy = OCTET_POLICY_AUTO;
}

octet_status octet_parse_size(const char* text, uint64_t* bytes) {
  return guard([&] {
    if (!text || !bytes) throw octet::Error(octet::ErrorCode::kInvalidArgument, "null argument");
    *bytes = octet::parse_size(text);
  });
}

octet_status octet_data_type_from_name(const char* name, octet_data_type* type) {
  return guard([&] {
    if (!name || !type) throw octet::Error(octet::ErrorCode::kInvalidArgument, "null argument");
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    *type = static_cast<octet_data_type>(octet::parse_data_type(lower));
  });
}

const char* octet_data_type_to_name(octet_data_type type) {
  return octet::data_type_name(static_cast<octet::DataType>(type));
}

size_t octet_simd_targets(char* out, size_t capacity) {
  std::string list;
  try {
    for (const std::string& name : octet::simd_targets()) list += (list.empty() ? "" : " ") + name;
  } catch (...) {  // out of memory: an empty list
    list.clear();
  }
  if (out != nullptr && capacity > 0) std::snprintf(out, capacity, "%s", list.c_str());
  return list.size();
}

octet_status octet_options_validate(const octet_options* options, uint32_t* block) {
  return guard([&] {
    const uint32_t b = octet::validate_options(convert(options).codec);
    if (block) *block = b;
  });
}

octet_status octet_encoded_size(size_t count, const octet_options* options, size_t* bytes) {
  return guard([&] {
    if (!bytes) throw octet::Error(octet::ErrorCode::kInvalidArgument, "null argument");
    *bytes = octet::encoded_size(count, convert(options).codec);
  });
}

octet_status octet_max_encoded_size(size_t count, const octet_options* options, size_t* bytes) {
  return guard([&] {
    if (!bytes) throw octet::Error(octet::ErrorCode::kInvalidArgument, "null argument");
    *bytes = octet::max_encoded_size(count, convert(options).codec);
  });
}

octet_status octet_encode(const float* in, size_t count, const octet_options* options, uint8_t* out,
                          size_t capacity, size_t* written) {
  return guard([&] {
    if (!written) throw octet::Error(octet::ErrorCode::kInvalidArgument, "null argument");
    *written = octet::encode(in, count, convert(options).codec, out, capacity);
  });
}

octet_status octet_decode(const uint8_t* payload, size_t length, float* out, size_t count) {
  return guard(
      [&] { octet::decode(payload, length, out, count, octet::DecodeMode::kOverwrite, 1); });
}

octet_status octet_comm_free(octet_comm comm) {
  return guard([&] { delete comm; });
}

octet_status octet_comm_rank(octet_comm comm, int* rank) {
  return guard([&] {
    if (!rank) throw octet::Error(octet::ErrorCode::kInvalidArgument, "null rank pointer");
    *rank = comm_of(comm).rank();
  });
}

octet_status octet_comm_size(octet_comm comm, int* size) {
  return guard([&] {
    if (!size) throw octet::Error(octet::ErrorCode::kInvalidArgument, "null size pointer");
    *size = comm_of(comm).size();
  });
}

octet_status octet_allreduce(octet_comm comm, const float* sendbuf, float* recvbuf, size_t count,
                             const octet_options* options) {
  return guard([&] { octet::allreduce(comm_of(comm), sendbuf, recvbuf, count, convert(options)); });
}

octet_status octet_reduce_scatter(octet_comm comm, const float* sendbuf, float* recvbuf,
                                  size_t count, const octet_options* options) {
  return guard(
      [&] { octet::reduce_scatter(comm_of(comm), sendbuf, recvbuf, count, convert(options)); });
}

octet_status octet_allgather(octet_comm comm, const float* sendbuf, float* recvbuf, size_t count,
                             const octet_options* options) {
  return guard([&] { octet::allgather(comm_of(comm), sendbuf, recvbuf, count, convert(options)); });
}

octet_status octet_broadcast(octet_comm comm, float* buffer, size_t count, int root,
                             const octet_options* options) {
  return guard([&] { octet::broadcast(comm_of(comm), buffer, count, root, convert(options)); });
}

octet_status octet_send(octet_comm comm, const float* buffer, size_t count, int peer, int tag,
                        const octet_options* options) {
  return guard([&] { octet::send(comm_of(comm), buffer, count, peer, tag, convert(options)); });
}

octet_status octet_recv(octet_comm comm, float* buffer, size_t count, int peer, int tag,
                        const octet_options* options) {
  return guard([&] { octet::recv(comm_of(comm), buffer, count, peer, tag, convert(options)); });
}

octet_status octet_iallreduce(octet_comm comm, const float* sendbuf, float* recvbuf, size_t count,
                              const octet_options* options, octet_request* request) {
  return octet::detail::start(request, [&] {
    return octet::iallreduce(comm_of(comm), sendbuf, recvbuf, count, convert(options));
  });
}

octet_status octet_ireduce_scatter(octet_comm comm, const float* sendbuf, float* recvbuf,
                                   size_t count, const octet_options* options,
                                   octet_request* request) {
  return octet::detail::start(request, [&] {
    return octet::ireduce_scatter(comm_of(comm), sendbuf, recvbuf, count, convert(options));
  });
}

octet_status octet_iallgather(octet_comm comm, const float* sendbuf, float* recvbuf, size_t count,
                              const octet_options* options, octet_request* request) {
  return octet::detail::start(request, [&] {
    return octet::iallgather(comm_of(comm), sendbuf, recvbuf, count, convert(options));
  });
}

octet_status octet_ibroadcast(octet_comm comm, float* buffer, size_t count, int root,
                              const octet_options* options, octet_request* request) {
  return octet::detail::start(request, [&] {
    return octet::ibroadcast(comm_of(comm), buffer, count, root, convert(options));
  });
}

octet_status octet_isend(octet_comm comm, const float* buffer, size_t count, int peer, int tag,
                         const octet_options* options, octet_request* request) {
  return octet::detail::start(request, [&] {
    return octet::isend(comm_of(comm), buffer, count, peer, tag, convert(options));
  });
}

octet_status octet_irecv(octet_comm comm, float* buffer, size_t count, int peer, int tag,
                         const octet_options* options, octet_request* request) {
  return octet::detail::start(request, [&] {
    return octet::irecv(comm_of(comm), buffer, count, peer, tag, convert(options));
  });
}

octet_status octet_policy_decide(octet_comm comm, octet_collective op, size_t count,
                                 const octet_options* options, int* compress) {
  return guard([&] {
    if (!compress) throw octet::Error(octet::ErrorCode::kInvalidArgument, "null argument");
    *compress =
        octet::decide_policy(comm_of(comm), collective_of(op), count, convert(options)) ? 1 : 0;
  });
}

octet_status octet_policy_set_curves(octet_comm comm, octet_collective op,
                                     const octet_options* options,
                                     const octet_policy_curves* curves) {
  return guard([&] {
    octet::Comm& c = comm_of(comm);
    // Every rank takes part in the agreement, so a bad argument is reported there, on every rank.
    octet::PolicyCurves given;
    if (curves && curves->bytes && curves->plain_seconds && curves->compressed_seconds) {
      const size_t n = curves->points;
      given.bytes.assign(curves->bytes, curves->bytes + n);
      given.plain_seconds.assign(curves->plain_seconds, curves->plain_seconds + n);
      given.compressed_seconds.assign(curves->compressed_seconds, curves->compressed_seconds + n);
      if (curves->hierarchical_seconds)
        given.hierarchical_seconds.assign(curves->hierarchical_seconds,
                                          curves->hierarchical_seconds + n);
    }
    octet::set_policy_curves(c, collective_of(op), codec_of(options), given);
  });
}

octet_status octet_policy_load_curves(octet_comm comm, const char* path) {
  return guard([&] {
    octet::Comm& c = comm_of(comm);
    octet::load_policy_curves(c, path ? path : "");
  });
}

octet_status octet_request_compressed(octet_request request, int* compressed) {
  return guard([&] {
    if (!request || !compressed)
      throw octet::Error(octet::ErrorCode::kInvalidArgument, "null argument");
    *compressed = request->request.compressed() ? 1 : 0;
  });
}

octet_status octet_wait(octet_request* request) {
  if (!request) {
    octet::detail::guard(
        [] { throw octet::Error(octet::ErrorCode::kInvalidArgument, "null request pointer"); });
    return OCTET_ERR_INVALID_ARGUMENT;
  }
  octet_request r = *request;
  if (!r) return OCTET_OK;  // like MPI_REQUEST_NULL
  *request = nullptr;
  const octet_status s = guard([&] { r->request.wait(); });
  delete r;
  return s;
}

octet_status octet_test(octet_request* request, int* done) {
  if (!request || !done) {
    return guard([] {
      throw octet::Error(octet::ErrorCode::kInvalidArgument, "null request or done pointer");
    });
  }
  *done = 0;
  octet_request r = *request;
  if (!r) {
    *done = 1;
    return OCTET_OK;
  }
  bool finished = false;
  const octet_status s = guard([&] { finished = r->request.test(); });
  if (finished || s != OCTET_OK) {  // a failed test ends the operation too
    *done = 1;
    *request = nullptr;
    delete r;
  }
  return s;
}

const char* octet_status_string(octet_status status) {
  return octet::error_code_name(static_cast<octet::ErrorCode>(status));
}

const char* octet_last_error_message(void) {
  return octet::detail::last_error();
}

}  // extern "C"
