// A Transport that forwards to another and counts what passes: bytes handed to isend, and the
// seconds spent inside transport calls (isend, irecv, test, wait, poll), which `octet train`
// reports as communication time; the rest of an Octet collective's time is the codec's.
#pragma once

#include <cstdint>
#include <memory>

#include "octet/transport.h"

namespace octet {
namespace train {

struct TransportCounters {
  uint64_t bytes_sent = 0;
  double seconds = 0;
};

class CountingTransport : public Transport {
 public:
  explicit CountingTransport(std::shared_ptr<Transport> inner);
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int max_tag() const override { return inner_->max_tag(); }
  TransportRequestPtr isend(const void* data, size_t bytes, int peer, int tag,
                            std::shared_ptr<const void> keep_alive) override;
  TransportRequestPtr irecv(void* data, size_t capacity, int peer, int tag) override;
  void poll() override;
  int host_of(int rank) const override { return inner_->host_of(rank); }
  size_t eager_bytes() const override { return inner_->eager_bytes(); }
  const TransportCounters& counters() const { return *counters_; }

 private:
  std::shared_ptr<Transport> inner_;
  std::shared_ptr<TransportCounters> counters_;
};

}  // namespace train
}  // namespace octet
