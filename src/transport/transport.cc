// The parts of the transport interface that every backend shares.
#include "octet/transport.h"

#include <exception>

namespace octet {

void Transport::send(const void* data, size_t bytes, int peer, int tag) {
  isend(data, bytes, peer, tag)->wait();
}

size_t Transport::recv(void* data, size_t capacity, int peer, int tag) {
  TransportRequestPtr r = irecv(data, capacity, peer, tag);
  r->wait();
  return r->bytes();
}

void wait_all(std::vector<TransportRequestPtr>& requests) {
  std::exception_ptr first;
  for (auto& r : requests) {
    if (!r) continue;
    try {
      r->wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace octet
