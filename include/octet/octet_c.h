/* The C API of Octet's compressed collectives: what C programs and the shims call.
 * Every function returns an octet_status (0 = success) and never lets a C++ exception escape;
 * octet_last_error_message() gives the text of the calling thread's last error. */
#ifndef OCTET_OCTET_C_H_
#define OCTET_OCTET_C_H_

#include <stddef.h>
#include <stdint.h>

#include "octet/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Same values as octet::ErrorCode. */
typedef enum {
  OCTET_OK = 0,
  OCTET_ERR_INVALID_ARGUMENT = 1,
  OCTET_ERR_CORRUPT_PAYLOAD = 2,
  OCTET_ERR_TRUNCATED_PAYLOAD = 3,
  OCTET_ERR_UNSUPPORTED = 4,
  OCTET_ERR_UNAVAILABLE = 5,
  OCTET_ERR_MISMATCH = 6,
  OCTET_ERR_TRANSPORT = 7,
  OCTET_ERR_INTERNAL = 8
} octet_status;

/* Same values as octet::DataType. */
typedef enum {
  OCTET_TYPE_DYNAMIC = 1,
  OCTET_TYPE_LINEAR = 2,
  OCTET_TYPE_MANTISSA = 3,
  OCTET_TYPE_STATIC_TREE = 4,
  OCTET_TYPE_DYNAMIC_UNSIGNED = 5,
  OCTET_TYPE_DYNAMIC4 = 6
} octet_data_type;

/* When a collective compresses (octet/policy.h). */
typedef enum {
  OCTET_POLICY_AUTO = 0,   /* where the cost model measured on the communicator predicts a gain */
  OCTET_POLICY_ALWAYS = 1, /* every call at or above min_bytes */
  OCTET_POLICY_NEVER = 2   /* never (MPI's own fp32 collective on MPI communicators) */
} octet_policy;

typedef struct {
  octet_data_type type;           /* default OCTET_TYPE_DYNAMIC */
  uint32_t block_size;            /* 0: the type's default */
  int stochastic;                 /* 0/1 */
  uint64_t seed;                  /* stochastic rounding stream */
  const char* error_feedback_key; /* NULL: no error feedback; else the residual's name */
  size_t min_bytes;               /* fp32 messages smaller than this go uncompressed */
  int average;                    /* allreduce/reduce_scatter: divide the sum by the rank count */
  octet_policy policy;            /* default OCTET_POLICY_AUTO */
} octet_options;

/* Fills *options with the defaults above. */
OCTET_API void octet_options_init(octet_options* options);

/* The library's rules, for C callers and the shims (one source of truth: the C++ codec and
 * include/octet/units.h). Each returns OCTET_ERR_INVALID_ARGUMENT with a one-line
 * octet_last_error_message() when the input breaks the rule. */
OCTET_API octet_status octet_parse_size(const char* text, uint64_t* bytes);
/* "dynamic", "linear", "mantissa", "static_tree" (or "static-tree"), "dynamic_unsigned",
 * "dynamic4", in any letter case. */
OCTET_API octet_status octet_data_type_from_name(const char* name, octet_data_type* type);
OCTET_API const char* octet_data_type_to_name(octet_data_type type); /* "unknown" if invalid */
/* The SIMD targets this CPU and build can run, best first, separated by spaces ("AVX3_DL AVX3 AVX2
 * SSE4 SSSE3 SCALAR"): the names OCTET_SIMD_TARGET accepts. Writes at most capacity bytes, NUL
 * included (out may be NULL when capacity is 0); returns the length of the whole list without
 * the NUL, so a larger buffer can be retried. */
OCTET_API size_t octet_simd_targets(char* out, size_t capacity);
/* Checks the codec part of options (type, block size); *block (may be NULL) gets the effective
 * block size. */
OCTET_API octet_status octet_options_validate(const octet_options* options, uint32_t* block);
/* Payload bytes of count finite fp32 values encoded with options (NaN/Inf add to it). */
OCTET_API octet_status octet_encoded_size(size_t count, const octet_options* options,
                                          size_t* bytes);
/* The largest payload of count values whatever they are (every block holding NaN/Inf): the
 * capacity octet_encode needs. */
OCTET_API octet_status octet_max_encoded_size(size_t count, const octet_options* options,
                                              size_t* bytes);
/* Encodes in[0, count) (any alignment) into out[0, capacity) with the codec part of options
 * (type, block size, stochastic rounding and its seed); *written gets the payload size. */
OCTET_API octet_status octet_encode(const float* in, size_t count, const octet_options* options,
                                    uint8_t* out, size_t capacity, size_t* written);
/* Decodes a whole payload of exactly count values into out (any alignment). Everything is
 * validated before out is written: a bad payload leaves out untouched. */
OCTET_API octet_status octet_decode(const uint8_t* payload, size_t length, float* out,
                                    size_t count);

/* A communicator: a group of ranks over one transport (MPI: see octet_mpi.h). */
typedef struct octet_comm_s* octet_comm;
/* A pending non-blocking operation. */
typedef struct octet_request_s* octet_request;

OCTET_API octet_status octet_comm_free(octet_comm comm);
OCTET_API octet_status octet_comm_rank(octet_comm comm, int* rank);
OCTET_API octet_status octet_comm_size(octet_comm comm, int* size);

/* Collectives on fp32 buffers. sendbuf == recvbuf (or sendbuf == NULL) means in place.
 * count is the per-rank element count of the operation, as in MPI:
 *  allreduce: count elements in and out;
 *  reduce_scatter: count elements out per rank (count * size in);
 *  allgather: count elements in per rank (count * size out);
 *  broadcast: count elements from root; the root's buffer becomes the decoded values too, so
 *  every rank holds bit-identical data.
 * Buffers need no particular alignment. */
OCTET_API octet_status octet_allreduce(octet_comm comm, const float* sendbuf, float* recvbuf,
                                       size_t count, const octet_options* options);
OCTET_API octet_status octet_reduce_scatter(octet_comm comm, const float* sendbuf, float* recvbuf,
                                            size_t count, const octet_options* options);
OCTET_API octet_status octet_allgather(octet_comm comm, const float* sendbuf, float* recvbuf,
                                       size_t count, const octet_options* options);
OCTET_API octet_status octet_broadcast(octet_comm comm, float* buffer, size_t count, int root,
                                       const octet_options* options);
OCTET_API octet_status octet_send(octet_comm comm, const float* buffer, size_t count, int peer,
                                  int tag, const octet_options* options);
OCTET_API octet_status octet_recv(octet_comm comm, float* buffer, size_t count, int peer, int tag,
                                  const octet_options* options);

/* Non-blocking forms: the buffers must stay valid until the request completes. */
OCTET_API octet_status octet_iallreduce(octet_comm comm, const float* sendbuf, float* recvbuf,
                                        size_t count, const octet_options* options,
                                        octet_request* request);
OCTET_API octet_status octet_ireduce_scatter(octet_comm comm, const float* sendbuf, float* recvbuf,
                                             size_t count, const octet_options* options,
                                             octet_request* request);
OCTET_API octet_status octet_iallgather(octet_comm comm, const float* sendbuf, float* recvbuf,
                                        size_t count, const octet_options* options,
                                        octet_request* request);
OCTET_API octet_status octet_ibroadcast(octet_comm comm, float* buffer, size_t count, int root,
                                        const octet_options* options, octet_request* request);
OCTET_API octet_status octet_isend(octet_comm comm, const float* buffer, size_t count, int peer,
                                   int tag, const octet_options* options, octet_request* request);
OCTET_API octet_status octet_irecv(octet_comm comm, float* buffer, size_t count, int peer, int tag,
                                   const octet_options* options, octet_request* request);
/* Completes and frees *request (sets it to NULL); returns the operation's status. */
/* The collectives, for octet_policy_decide. */
typedef enum {
  OCTET_COLLECTIVE_ALLREDUCE = 0,
  OCTET_COLLECTIVE_REDUCE_SCATTER = 1,
  OCTET_COLLECTIVE_ALLGATHER = 2,
  OCTET_COLLECTIVE_BROADCAST = 3
} octet_collective;

/* *compress = whether a call of `count` would compress under options->policy, counted as one of
 * the communicator's calls (octet::decide_policy: collective, in call order, on every rank; for
 * wrappers that run the plain call themselves). */
OCTET_API octet_status octet_policy_decide(octet_comm comm, octet_collective op, size_t count,
                                           const octet_options* options, int* compress);

/* Cost curves for the auto policy (octet::PolicyCurves): `points` ascending fp32 sizes (as
 * octet_policy_decide's count, in bytes) with the times of the plain and the compressed call in
 * seconds; hierarchical_seconds (allreduce only) may be NULL. */
typedef struct {
  size_t points;
  const double* bytes;
  const double* plain_seconds;
  const double* compressed_seconds;
  const double* hierarchical_seconds;
} octet_policy_curves;

/* Seeds the auto policy's cost model for op with the codec of options (type, block, stochastic),
 * instead of measuring it on first use (octet::set_policy_curves: collective, the ranks agree on
 * the curves; invalid curves on any rank fail on every rank). */
OCTET_API octet_status octet_policy_set_curves(octet_comm comm, octet_collective op,
                                               const octet_options* options,
                                               const octet_policy_curves* curves);
/* Seeds it from a policy-curve file, rank 0's copy (octet::load_policy_curves: collective; a bad
 * or unreadable file fails on every rank with one line "<path>:<line>: <why>"). */
OCTET_API octet_status octet_policy_load_curves(octet_comm comm, const char* path);

OCTET_API octet_status octet_wait(octet_request* request);
/* *compressed = whether the started call compresses (its policy's decision: octet/policy.h). */
OCTET_API octet_status octet_request_compressed(octet_request request, int* compressed);
/* *done = 1 when complete (then *request is freed and set to NULL, and the status returned). */
OCTET_API octet_status octet_test(octet_request* request, int* done);

OCTET_API const char* octet_status_string(octet_status status);
OCTET_API const char* octet_last_error_message(void);

#ifdef __cplusplus
}
#endif

#endif /* OCTET_OCTET_C_H_ */
