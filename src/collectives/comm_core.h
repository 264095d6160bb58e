// What a Comm holds beyond its transport: tag allocation, point-to-point ordering, the pending
// operations and their progress, and the error-feedback residuals. Internal to the library; the
// algorithms reach it through detail::core(comm).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <tuple>

#include "collectives/policy.h"
#include "octet/collectives.h"

namespace octet {
namespace detail {

class CommCore {
 public:
  explicit CommCore(Transport& transport) : transport_(transport) {}

  ErrorFeedback& error_feedback() { return feedback_; }
  int max_user_tag() const;
  int collective_tag_base();  // the next collective call's 4 tags
  int p2p_tag(int user_tag, bool ack) const;
  uint64_t p2p_ticket(int peer, int tag, bool sending);
  bool p2p_turn(int peer, int tag, bool sending, uint64_t ticket) const;
  void p2p_done(int peer, int tag, bool sending);
  void start(const std::shared_ptr<Operation>& op);
  void progress();               // advances every pending operation, never blocks
  void complete(Operation& op);  // blocks until op is done (other operations progress)
  void complete_all();           // blocks until every pending operation is done
  bool idle() const { return active_.empty(); }
  PolicyState& policy() { return policy_; }

 private:
  Transport& transport_;
  ErrorFeedback feedback_;
  uint64_t collectives_ = 0;
  struct Turn {
    uint64_t issued = 0, served = 0;
  };
  std::map<std::tuple<int, int, bool>, Turn> turns_;  // (peer, tag, sending)
  std::list<std::shared_ptr<Operation>> active_;
  PolicyState policy_;
};

}  // namespace detail
}  // namespace octet
