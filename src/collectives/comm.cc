// Comm (tags, point-to-point ordering, progress of pending operations) and Request.
#include <utility>

#include "collectives/comm_core.h"
#include "collectives/operation.h"

namespace octet {

Comm::Comm(std::shared_ptr<Transport> transport) : transport_(std::move(transport)) {
  if (!transport_) throw Error(ErrorCode::kInvalidArgument, "null transport");
  core_ = std::make_unique<detail::CommCore>(*transport_);
}

Comm::~Comm() = default;

ErrorFeedback& Comm::error_feedback() {
  return core_->error_feedback();
}

int Comm::max_user_tag() const {
  return core_->max_user_tag();
}

namespace detail {

[[gnu::hot]] CommCore& core(Comm& comm) {
  return *comm.core_;
}

// The tag space is split in halves: point-to-point below, collectives above.
int CommCore::max_user_tag() const {
  const int half = transport_.max_tag() / 2 + 1;
  return half / 2 - 1;
}

int CommCore::collective_tag_base() {
  const int half = transport_.max_tag() / 2 + 1;
  const uint64_t slots = static_cast<uint64_t>(half / 4);
  return half + static_cast<int>(collectives_++ % slots) * 4;
}

int CommCore::p2p_tag(int user_tag, bool ack) const {
  return 2 * user_tag + (ack ? 1 : 0);
}

uint64_t CommCore::p2p_ticket(int peer, int tag, bool sending) {
  return turns_[std::make_tuple(peer, tag, sending)].issued++;
}

bool CommCore::p2p_turn(int peer, int tag, bool sending, uint64_t ticket) const {
  auto it = turns_.find(std::make_tuple(peer, tag, sending));
  return it != turns_.end() && it->second.served == ticket;
}

void CommCore::p2p_done(int peer, int tag, bool sending) {
  ++turns_[std::make_tuple(peer, tag, sending)].served;
}

void CommCore::start(const std::shared_ptr<Operation>& op) {
  active_.push_back(op);
  progress();
}

void CommCore::progress() {
  for (auto it = active_.begin(); it != active_.end();) {
    auto op = *it;  // keep it alive while it runs
    if (op->step())
      it = active_.erase(it);
    else
      ++it;
  }
}

void CommCore::complete(Operation& op) {
  while (!op.done()) {
    progress();
    if (op.done() || active_.empty()) break;
    active_.front()->block_once();  // the oldest operation never waits on a younger one
  }
}

void CommCore::complete_all() {
  while (!active_.empty()) {
    const auto op = active_.front();  // errors stay with the operation's request
    complete(*op);
    progress();
  }
}

Request start_request(Comm& comm, std::shared_ptr<Operation> op, bool compressed) {
  core(comm).start(op);
  return Request(&comm, std::move(op), compressed);
}

}  // namespace detail

Request::Request(Comm* comm, std::shared_ptr<detail::Operation> op, bool compressed)
    : comm_(comm), op_(std::move(op)), compressed_(compressed) {}

Request::Request(Request&& o) noexcept
    : comm_(o.comm_), op_(std::move(o.op_)), compressed_(o.compressed_) {}

Request& Request::operator=(Request&& o) noexcept {
  if (this != &o) {
    if (op_) {
      try {
        detail::core(*comm_).complete(*op_);
      } catch (...) {
      }
    }
    comm_ = o.comm_;
    op_ = std::move(o.op_);
    compressed_ = o.compressed_;
  }
  return *this;
}

Request::~Request() {
  if (!op_) return;
  try {
    detail::core(*comm_).complete(*op_);
  } catch (...) {
  }
}

bool Request::test() {
  if (!op_) throw Error(ErrorCode::kInvalidArgument, "test() on an invalid request");
  detail::core(*comm_).progress();
  if (!op_->done()) return false;
  auto error = op_->error();
  op_.reset();
  if (error) std::rethrow_exception(error);
  return true;
}

void Request::wait() {
  if (!op_) throw Error(ErrorCode::kInvalidArgument, "wait() on an invalid request");
  detail::core(*comm_).complete(*op_);
  auto error = op_->error();
  op_.reset();
  if (error) std::rethrow_exception(error);
}

}  // namespace octet
