// What the C handles hold, shared by the C API's translation units (and tests that build a C
// communicator over the thread transport).
#pragma once

#include <memory>
#include <string>

#include "octet/collectives.h"
#include "octet/octet_c.h"

struct octet_comm_s {
  explicit octet_comm_s(std::shared_ptr<octet::Transport> t) : comm(std::move(t)) {}
  octet::Comm comm;
};

struct octet_request_s {
  octet::Request request;
};

namespace octet {
namespace detail {

// Wraps a transport into a C communicator (free with octet_comm_free).
octet_status wrap_comm(std::shared_ptr<Transport> transport, octet_comm* out);
// Runs fn, turning exceptions into a status and the thread's last error message.
octet_status guarded(void (*fn)(void*), void* context);
template <typename Fn>
octet_status guard(Fn&& fn) {
  return guarded([](void* c) { (*static_cast<Fn*>(c))(); }, &fn);
}

}  // namespace detail
}  // namespace octet
