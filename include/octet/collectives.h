// Compressed collectives on fp32 buffers over any Transport (octet/transport.h).
//
// Every operation has a blocking form and a non-blocking one returning a Request. Buffers must
// stay valid until the request completes. `in == out` (or in == nullptr) means in place, with
// MPI's conventions: allgather's input is out[rank * count, +count), reduce_scatter's input is
// out[0, size * count) and its result lands in out[0, count).
//
// Guarantees (docs/algorithms.md has the steps and the bytes on the wire):
//  - every rank ends with bit-identical results (allreduce, allgather, broadcast);
//  - allreduce quantizes each element at most twice whatever the rank count (contributions once,
//    the reduced chunk once); reduce_scatter, allgather, broadcast and send/recv once;
//  - a rank sends at most 2(P-1)/P of the compressed size in allreduce;
//  - ranks that disagree on the operation, count, type, block, root or flags all fail with
//    ErrorCode::kMismatch (a descriptor is exchanged first), rather than hang or return garbage;
//    so do all ranks when one rank's arguments are invalid (kInvalidArgument on that rank);
//  - NaN/Inf travel as they are: a sum with a NaN is NaN, as in fp32.
//
// A Comm and its requests belong to one thread at a time (the MPI transport calls MPI only from
// that thread, so MPI_THREAD_FUNNELED suffices); non-blocking operations progress inside
// Request::test() and Request::wait() and inside any other call on the same Comm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "octet/codec.h"
#include "octet/error_feedback.h"
#include "octet/export.h"
#include "octet/policy.h"
#include "octet/transport.h"

namespace octet {

class Comm;
namespace detail {
class Operation;
class CommCore;
CommCore& core(Comm& comm);
}  // namespace detail
class Request;
namespace detail {
// Starts op on comm and hands out its request (the algorithms' one way to create a Request);
// `compressed`: whether the call compresses (octet/policy.h).
Request start_request(Comm& comm, std::shared_ptr<Operation> op, bool compressed = true);
}  // namespace detail

// A group of ranks over one transport, plus the state its collectives share (the call counter
// that keeps the messages of concurrent operations apart, pending operations, error-feedback
// residuals), which lives in the library (detail::CommCore).
class OCTET_API Comm {
 public:
  explicit Comm(std::shared_ptr<Transport> transport);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return transport_->rank(); }
  int size() const { return transport_->size(); }
  Transport& transport() const { return *transport_; }
  ErrorFeedback& error_feedback();
  // User tags of send/recv lie in [0, max_user_tag()]; the rest of the tag space is Octet's.
  int max_user_tag() const;

 private:
  friend detail::CommCore& detail::core(Comm& comm);
  std::shared_ptr<Transport> transport_;
  std::unique_ptr<detail::CommCore> core_;
};

// The automatic chunk size between hosts (CollectiveOptions::chunk_bytes = 0): a compressed
// chunk's message takes at most the transport's eager_bytes() less this room for the transport's
// own headers (OpenMPI's ob1 and TCP headers take about 30 bytes).
constexpr size_t kChunkHeaderRoom = 256;

struct CollectiveOptions {
  CodecOptions codec;              // type, block size, stochastic rounding and its seed, checksum
  std::string error_feedback_key;  // empty: none; else residuals are kept under this name
  // Whether a call compresses (octet/policy.h): `auto` where the measured cost model predicts a
  // gain. Calls left uncompressed run the transport's own fp32 collective where it has one (MPI),
  // with its semantics, else Octet's uncompressed path.
  Policy policy = Policy::kAuto;
  size_t min_bytes = 0;  // calls whose fp32 size (count * 4) is below never compress
  // allreduce/reduce_scatter: divide the sum by the rank count (an average of finite values is
  // finite even where their fp32 sum overflows; docs/algorithms.md, "Edges of the float range").
  bool average = false;
  // Pipeline chunk: fp32 bytes per message, rounded to whole blocks. 0: automatic, 1 MiB, except
  // that compressed chunks of a group spanning hosts fit one eager message of the transport
  // (Transport::eager_bytes(): over OpenMPI's ob1 64 KiB, 248 KiB of fp32 for 8-bit types; over
  // other layers 16 KiB): a larger message waits a round trip for the receiver
  // (docs/algorithms.md, "Pipeline").
  size_t chunk_bytes = 0;
  int window = 4;   // chunks in flight
  int threads = 1;  // codec threads per encode/decode (1: calling thread)
  // allreduce's algorithm for compressed calls, where the transport reports more than one host
  // and some host holds more than one rank (Transport::host_of): kAuto takes the cheaper of the
  // hierarchical one (exact fp32 inside each host, compressed between hosts) and the flat one
  // under policy `auto` (its cost curves, octet/policy.h), the hierarchical one under `always`;
  // kFlat and kHierarchical force one. docs/algorithms.md.
  enum class AllreduceAlgorithm : uint8_t { kAuto, kFlat, kHierarchical };
  AllreduceAlgorithm allreduce_algorithm = AllreduceAlgorithm::kAuto;
};

// A pending operation. Destroying an unfinished request waits for it (errors are dropped).
class OCTET_API Request {
 public:
  Request() = default;
  Request(Request&&) noexcept;
  Request& operator=(Request&&) noexcept;
  ~Request();

  bool valid() const { return op_ != nullptr; }
  // Whether the call compresses: its policy's decision (`auto`, min_bytes), known at the start.
  bool compressed() const { return compressed_; }
  // True once complete (then the request becomes invalid); throws the operation's error.
  bool test();
  void wait();

 private:
  friend Request detail::start_request(Comm& comm, std::shared_ptr<detail::Operation> op,
                                       bool compressed);
  OCTET_HIDDEN Request(Comm* comm, std::shared_ptr<detail::Operation> op, bool compressed);
  Comm* comm_ = nullptr;
  std::shared_ptr<detail::Operation> op_;
  bool compressed_ = false;
};

// Sum (or average) of every rank's in[0, count) into out[0, count) on every rank.
OCTET_API void allreduce(Comm& comm, const float* in, float* out, size_t count,
                         const CollectiveOptions& options = {});
OCTET_API Request iallreduce(Comm& comm, const float* in, float* out, size_t count,
                             const CollectiveOptions& options = {});

// out[0, count) on rank r = sum over ranks of in[r * count, +count).
OCTET_API void reduce_scatter(Comm& comm, const float* in, float* out, size_t count,
                              const CollectiveOptions& options = {});
OCTET_API Request ireduce_scatter(Comm& comm, const float* in, float* out, size_t count,
                                  const CollectiveOptions& options = {});

// out[r * count, +count) = rank r's in[0, count), on every rank.
OCTET_API void allgather(Comm& comm, const float* in, float* out, size_t count,
                         const CollectiveOptions& options = {});
OCTET_API Request iallgather(Comm& comm, const float* in, float* out, size_t count,
                             const CollectiveOptions& options = {});

// buffer[0, count) of root, on every rank. The root's own buffer becomes the decoded values too,
// so every rank holds bit-identical data (the PMPI shim's MPI_Bcast leaves the root's buffer as
// it was instead, as MPI does).
OCTET_API void broadcast(Comm& comm, float* buffer, size_t count, int root,
                         const CollectiveOptions& options = {});
OCTET_API Request ibroadcast(Comm& comm, float* buffer, size_t count, int root,
                             const CollectiveOptions& options = {});

// Point-to-point transfer of a compressed tensor (paper 001's model-parallel activations). Both
// sides must agree on count and options (else both fail with kMismatch). The sender's buffer is
// left as it is. Transfers with the same peer and tag complete in call order.
OCTET_API void send(Comm& comm, const float* buffer, size_t count, int peer, int tag,
                    const CollectiveOptions& options = {});
OCTET_API Request isend(Comm& comm, const float* buffer, size_t count, int peer, int tag,
                        const CollectiveOptions& options = {});
OCTET_API void recv(Comm& comm, float* buffer, size_t count, int peer, int tag,
                    const CollectiveOptions& options = {});
OCTET_API Request irecv(Comm& comm, float* buffer, size_t count, int peer, int tag,
                        const CollectiveOptions& options = {});

}  // namespace octet
