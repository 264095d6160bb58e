#include "train/counting_transport.h"

#include <chrono>
#include <utility>

namespace octet {
namespace train {
namespace {

class Timer {
 public:
  explicit Timer(TransportCounters& c) : c_(c), start_(std::chrono::steady_clock::now()) {}
  ~Timer() {
    c_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  TransportCounters& c_;
  std::chrono::steady_clock::time_point start_;
};

class CountingRequest : public TransportRequest {
 public:
  CountingRequest(TransportRequestPtr inner, std::shared_ptr<TransportCounters> counters)
      : inner_(std::move(inner)), counters_(std::move(counters)) {}
  bool test() override {
    Timer t(*counters_);
    return inner_->test();
  }
  void wait() override {
    Timer t(*counters_);
    inner_->wait();
  }
  size_t bytes() const override { return inner_->bytes(); }

 private:
  TransportRequestPtr inner_;
  std::shared_ptr<TransportCounters> counters_;
};

}  // namespace

CountingTransport::CountingTransport(std::shared_ptr<Transport> inner)
    : inner_(std::move(inner)), counters_(std::make_shared<TransportCounters>()) {}

TransportRequestPtr CountingTransport::isend(const void* data, size_t bytes, int peer, int tag,
                                             std::shared_ptr<const void> keep_alive) {
  Timer t(*counters_);
  counters_->bytes_sent += bytes;
  return std::make_unique<CountingRequest>(
      inner_->isend(data, bytes, peer, tag, std::move(keep_alive)), counters_);
}

TransportRequestPtr CountingTransport::irecv(void* data, size_t capacity, int peer, int tag) {
  Timer t(*counters_);
  return std::make_unique<CountingRequest>(inner_->irecv(data, capacity, peer, tag), counters_);
}

void CountingTransport::poll() {
  Timer t(*counters_);
  inner_->poll();
}

}  // namespace train
}  // namespace octet
