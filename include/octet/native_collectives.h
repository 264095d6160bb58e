// A transport's own fp32 collectives (MPI's tuned algorithms), which Octet runs for the calls it
// leaves uncompressed (octet/policy.h): where a backend has them they beat Octet's own
// uncompressed path, so declining to compress never costs more than the plain call.
//
// Sum only, on the transport's group, in call order on every rank (as MPI's collectives).
// `in == out` means in place. Counts are elements; reduce_scatter's and allgather's are per rank.
// Errors throw octet::Error (kTransport).
#pragma once

#include <cstddef>

#include "octet/export.h"
#include "octet/transport.h"

namespace octet {

class OCTET_API NativeCollectives {
 public:
  virtual ~NativeCollectives() = default;
  // Largest count one call takes (MPI: INT_MAX elements); Octet's own path takes larger ones.
  virtual size_t max_count() const = 0;

  virtual void allreduce(const float* in, float* out, size_t count) = 0;
  virtual void reduce_scatter(const float* in, float* out, size_t count) = 0;
  virtual void allgather(const float* in, float* out, size_t count) = 0;
  virtual void broadcast(float* buffer, size_t count, int root) = 0;

  // Non-blocking forms; destroying an unfinished request waits for it (MPI cannot cancel a
  // collective).
  virtual TransportRequestPtr iallreduce(const float* in, float* out, size_t count) = 0;
  virtual TransportRequestPtr ireduce_scatter(const float* in, float* out, size_t count) = 0;
  virtual TransportRequestPtr iallgather(const float* in, float* out, size_t count) = 0;
  virtual TransportRequestPtr ibroadcast(float* buffer, size_t count, int root) = 0;
};

}  // namespace octet
