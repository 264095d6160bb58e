// Transports: how Octet's collectives move bytes between ranks (in the style of gloo's
// device/pair layer). A Transport is one rank's end of a group: tagged, ordered, non-blocking
// send/recv of byte buffers to any peer. The collectives (octet/collectives.h) are written over
// this interface only; backends: threads in one process (tests) and MPI (octet/transport_mpi.h).
//
// Ordering: messages from one peer with one tag are received in the order they were sent, and
// receives posted for one (peer, tag) are matched in the order they were posted (as in MPI).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "octet/error.h"
#include "octet/export.h"

namespace octet {

// A pending send or receive. test() never blocks; wait() blocks until done. Both throw
// octet::Error (kTransport, or kMismatch when a message did not fit its receive buffer).
// Destroying a pending request cancels it when the backend can (receives) and otherwise lets it
// finish in the background; the caller must then keep the buffer alive (see Transport::isend).
class OCTET_API TransportRequest {
 public:
  virtual ~TransportRequest() = default;
  virtual bool test() = 0;
  virtual void wait() = 0;
  // Bytes that arrived (receives), valid once complete.
  virtual size_t bytes() const = 0;
};
using TransportRequestPtr = std::unique_ptr<TransportRequest>;

class NativeCollectives;

class OCTET_API Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Largest tag this transport carries (MPI: MPI_TAG_UB, at least 32767).
  virtual int max_tag() const = 0;

  // Sends bytes [data, data + bytes) to peer. `keep_alive` (may be null) is held until the send
  // has completed, even when the request is abandoned on an error path.
  virtual TransportRequestPtr isend(const void* data, size_t bytes, int peer, int tag,
                                    std::shared_ptr<const void> keep_alive = nullptr) = 0;
  // Receives one message of at most `capacity` bytes from peer; a larger message fails the
  // request with kMismatch instead of being truncated silently.
  virtual TransportRequestPtr irecv(void* data, size_t capacity, int peer, int tag) = 0;
  // Lets pending transfers progress (MPI without a progress thread only moves data inside MPI
  // calls); the collectives call it between encodes. Never blocks.
  virtual void poll() {}
  // The backend's own fp32 collectives (octet/native_collectives.h), or null where it has none
  // (threads); Octet runs the calls it leaves uncompressed there.
  virtual NativeCollectives* native_collectives() { return nullptr; }
  // The host (shared-memory node) of `rank`, 0 <= rank < size(): ranks with equal ids share a
  // host, the same answer on every rank. The hierarchical allreduce uses it. Default, for a
  // backend that does not know: every rank on a host of its own (so the flat algorithms run).
  // A transport that wraps another should forward it.
  virtual int host_of(int rank) const { return rank; }
  // The largest message (bytes, headers included) this backend sends between hosts without
  // waiting for the receiver first (MPI's eager limit), or 0 where there is none to respect.
  // A larger message costs a rendezvous round trip, which needs the receiver's process on a core:
  // the collectives' automatic chunk size (CollectiveOptions::chunk_bytes = 0) keeps compressed
  // messages under it when the group spans hosts. A transport that wraps another should forward
  // it.
  virtual size_t eager_bytes() const { return 0; }
};

// What the MPI transport reports as eager_bytes(): OpenMPI's default eager limit of its ob1
// layer over TCP (btl_tcp_eager_limit) where ob1 carries the job, else a smaller size that UCX
// over TCP also sends eagerly (measured: 16 KB messages eager, 24 KB and more by rendezvous).
// Constants, not the job's settings, so that every rank cuts the same chunks.
constexpr size_t kMpiEagerBytes = 65536;
constexpr size_t kMpiSmallEagerBytes = 16384;

// `size` connected in-process transports, one per rank, for ranks run as threads. Sends are
// buffered (they complete at once); receives complete when a matching message is there.
OCTET_API std::vector<std::shared_ptr<Transport>> make_thread_transports(int size);
// The same with emulated hosts, for tests of the hierarchical algorithms: rank r is on host
// host_of_rank[r] (any ints; equal = same host), or on host r / ranks_per_host.
OCTET_API std::vector<std::shared_ptr<Transport>> make_thread_transports(
    const std::vector<int>& host_of_rank);
OCTET_API std::vector<std::shared_ptr<Transport>> make_thread_transports(int size,
                                                                         int ranks_per_host);

}  // namespace octet
