// A Transport wrapper for the tests that check bytes on the wire: forwards everything (the
// topology too) and counts what this rank hands to its transport.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "octet/transport.h"

namespace octet {
namespace test {

class CountingTransport : public Transport {
 public:
  explicit CountingTransport(std::shared_ptr<Transport> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int max_tag() const override { return inner_->max_tag(); }
  int host_of(int rank) const override { return inner_->host_of(rank); }
  size_t eager_bytes() const override { return eager ? eager : inner_->eager_bytes(); }
  void poll() override { inner_->poll(); }
  TransportRequestPtr isend(const void* data, size_t bytes, int peer, int tag,
                            std::shared_ptr<const void> keep_alive) override {
    sends += 1;
    bytes_sent += bytes;
    if (bytes > largest) largest = bytes;
    if (host_of(peer) != host_of(rank())) between_hosts += bytes;
    return inner_->isend(data, bytes, peer, tag, std::move(keep_alive));
  }
  TransportRequestPtr irecv(void* data, size_t capacity, int peer, int tag) override {
    return inner_->irecv(data, capacity, peer, tag);
  }

  uint64_t sends = 0, bytes_sent = 0, between_hosts = 0, largest = 0;
  size_t eager = 0;  // nonzero: what eager_bytes() reports instead of the inner transport's

 private:
  std::shared_ptr<Transport> inner_;
};

}  // namespace test
}  // namespace octet
