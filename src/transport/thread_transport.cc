// In-process transport: ranks are threads sharing one hub of mailboxes, one per (source,
// destination, tag). Sends copy into the mailbox; posted receives are matched in posting order.
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "octet/transport.h"

namespace octet {
namespace {

struct Posted {
  void* data = nullptr;
  size_t capacity = 0;
  bool done = false;
  size_t bytes = 0;
  size_t too_large = 0;  // size of a message that did not fit (0: none)
};

struct Mailbox {
  std::deque<std::vector<uint8_t>> messages;
  std::deque<std::shared_ptr<Posted>> posted;
};

using Key = std::tuple<int, int, int>;  // source, destination, tag

struct Hub {
  std::mutex mutex;
  std::condition_variable cv;
  std::map<Key, Mailbox> boxes;

  // Pairs the oldest posted receive with the oldest message, as often as possible. Locked.
  void match(Mailbox& box) {
    bool any = false;
    while (!box.messages.empty() && !box.posted.empty()) {
      std::vector<uint8_t>& m = box.messages.front();
      Posted& p = *box.posted.front();
      if (m.size() > p.capacity)
        p.too_large = m.size();
      else if (!m.empty())
        std::memcpy(p.data, m.data(), m.size());
      p.bytes = m.size();
      p.done = true;
      box.messages.pop_front();
      box.posted.pop_front();
      any = true;
    }
    if (any) cv.notify_all();
  }
};

class DoneRequest : public TransportRequest {
 public:
  bool test() override { return true; }
  void wait() override {}
  size_t bytes() const override { return 0; }
};

class ThreadRecv : public TransportRequest {
 public:
  ThreadRecv(std::shared_ptr<Hub> hub, Key key, std::shared_ptr<Posted> posted)
      : hub_(std::move(hub)), key_(key), posted_(std::move(posted)) {}
  ~ThreadRecv() override {
    std::lock_guard<std::mutex> lock(hub_->mutex);
    if (posted_->done) return;
    auto& q = hub_->boxes[key_].posted;
    for (auto it = q.begin(); it != q.end(); ++it)
      if (*it == posted_) {
        q.erase(it);
        break;
      }
  }
  bool test() override {
    std::lock_guard<std::mutex> lock(hub_->mutex);
    return finished();
  }
  void wait() override {
    std::unique_lock<std::mutex> lock(hub_->mutex);
    hub_->cv.wait(lock, [&] { return posted_->done; });
    finished();
  }
  size_t bytes() const override { return posted_->bytes; }

 private:
  bool finished() const {
    if (!posted_->done) return false;
    if (posted_->too_large)
      throw Error(ErrorCode::kMismatch, "message of " + std::to_string(posted_->too_large) +
                                            " bytes from rank " +
                                            std::to_string(std::get<0>(key_)) + " exceeds the " +
                                            std::to_string(posted_->capacity) + " bytes expected");
    return true;
  }
  std::shared_ptr<Hub> hub_;
  Key key_;
  std::shared_ptr<Posted> posted_;
};

class ThreadTransport : public Transport {
 public:
  ThreadTransport(std::shared_ptr<Hub> hub, int rank, int size,
                  std::shared_ptr<const std::vector<int>> hosts)
      : hub_(std::move(hub)), rank_(rank), size_(size), hosts_(std::move(hosts)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int max_tag() const override { return 0x7fffffff; }
  int host_of(int rank) const override { return hosts_ ? (*hosts_)[rank] : rank; }

  TransportRequestPtr isend(const void* data, size_t bytes, int peer, int tag,
                            std::shared_ptr<const void>) override {
    check_peer(peer, tag);
    const auto* p = static_cast<const uint8_t*>(data);
    std::vector<uint8_t> message(p, p + bytes);
    std::lock_guard<std::mutex> lock(hub_->mutex);
    Mailbox& box = hub_->boxes[Key{rank_, peer, tag}];
    box.messages.push_back(std::move(message));
    hub_->match(box);
    return std::make_unique<DoneRequest>();
  }

  TransportRequestPtr irecv(void* data, size_t capacity, int peer, int tag) override {
    check_peer(peer, tag);
    auto posted = std::make_shared<Posted>();
    posted->data = data;
    posted->capacity = capacity;
    const Key key{peer, rank_, tag};
    std::lock_guard<std::mutex> lock(hub_->mutex);
    Mailbox& box = hub_->boxes[key];
    box.posted.push_back(posted);
    hub_->match(box);
    return std::make_unique<ThreadRecv>(hub_, key, posted);
  }

 private:
  void check_peer(int peer, int tag) const {
    if (peer < 0 || peer >= size_)
      throw Error(ErrorCode::kInvalidArgument,
                  "peer " + std::to_string(peer) + " outside a group of " + std::to_string(size_));
    if (tag < 0) throw Error(ErrorCode::kInvalidArgument, "negative tag");
  }
  std::shared_ptr<Hub> hub_;
  int rank_, size_;
  std::shared_ptr<const std::vector<int>> hosts_;  // emulated hosts; null: one per rank
};

std::vector<std::shared_ptr<Transport>> make_group(int size,
                                                   std::shared_ptr<const std::vector<int>> hosts) {
  if (size < 1) throw Error(ErrorCode::kInvalidArgument, "a group needs at least one rank");
  auto hub = std::make_shared<Hub>();
  std::vector<std::shared_ptr<Transport>> out;
  for (int r = 0; r < size; ++r)
    out.push_back(std::make_shared<ThreadTransport>(hub, r, size, hosts));
  return out;
}

}  // namespace

std::vector<std::shared_ptr<Transport>> make_thread_transports(int size) {
  return make_group(size, nullptr);
}

std::vector<std::shared_ptr<Transport>> make_thread_transports(
    const std::vector<int>& host_of_rank) {
  return make_group(static_cast<int>(host_of_rank.size()),
                    std::make_shared<const std::vector<int>>(host_of_rank));
}

std::vector<std::shared_ptr<Transport>> make_thread_transports(int size, int ranks_per_host) {
  if (ranks_per_host < 1)
    throw Error(ErrorCode::kInvalidArgument, "ranks_per_host must be at least 1");
  std::vector<int> hosts;
  for (int r = 0; r < size; ++r) hosts.push_back(r / ranks_per_host);
  return make_thread_transports(hosts);
}

}  // namespace octet
