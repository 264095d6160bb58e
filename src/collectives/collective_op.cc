// CollectiveOp: the descriptor exchange, and the early first stage whose transfers wait for it.
#include "collectives/collective_op.h"

#include <cstring>
#include <utility>

namespace octet {
namespace detail {

// A transfer the early stage asked for: carried by the envelope, or posted at the verdict.
struct CollectiveOp::Deferred {
  bool sending = false;
  Bytes message;                 // sending
  ByteBuffer* buffer = nullptr;  // receiving into a buffer sized for the payload
  size_t* bytes = nullptr;
  void* exact = nullptr;  // receiving exactly exact_bytes here instead
  size_t exact_bytes = 0;
  int peer = 0, phase = 0;
  TransportRequestPtr inner;  // once posted
  bool done = false;
};

namespace {

class DeferredRequest : public TransportRequest {
 public:
  explicit DeferredRequest(std::shared_ptr<CollectiveOp::Deferred> d) : d_(std::move(d)) {}
  bool test() override {
    if (!d_->done && d_->inner) d_->done = d_->inner->test();
    return d_->done;
  }
  void wait() override {
    if (d_->done) return;
    if (!d_->inner)  // the pipeline waits on transfers only after the prologue
      throw Error(ErrorCode::kInternal, "a transfer was waited on before the descriptors' verdict");
    d_->inner->wait();
    d_->done = true;
  }
  size_t bytes() const override {
    if (d_->inner) return d_->inner->bytes();
    if (d_->sending) return d_->message->size();
    return d_->exact ? d_->exact_bytes : *d_->bytes;
  }

 private:
  std::shared_ptr<CollectiveOp::Deferred> d_;
};

Error wrong_size(int peer, size_t sent, size_t expected) {
  return Error(ErrorCode::kMismatch, "rank " + std::to_string(peer) + " sent " +
                                         std::to_string(sent) + " bytes, expected " +
                                         std::to_string(expected));
}

// A receive that must bring exactly `want` bytes.
class ExactRecv : public TransportRequest {
 public:
  ExactRecv(TransportRequestPtr inner, size_t want, int peer)
      : inner_(std::move(inner)), want_(want), peer_(peer) {}
  bool test() override {
    if (!inner_->test()) return false;
    check();
    return true;
  }
  void wait() override {
    inner_->wait();
    check();
  }
  size_t bytes() const override { return inner_->bytes(); }

 private:
  void check() const {
    if (inner_->bytes() != want_) throw wrong_size(peer_, inner_->bytes(), want_);
  }
  TransportRequestPtr inner_;
  size_t want_;
  int peer_;
};

}  // namespace

void CollectiveOp::begin(OpKind op, size_t count, int root, size_t fp32_bytes,
                         const std::function<std::string()>& check, bool same_sign_across_ranks) {
  std::string error;
  try {
    chunk_codec_ = std::make_unique<ChunkCodec>(comm_, options_, fp32_bytes);
    error = check();
  } catch (const Error& e) {
    error = e.what();
  }
  if (!error.empty()) set_units(0);
  exchange_ = std::make_unique<Exchange>(comm_, tag_, same_sign_across_ranks);
  // Error feedback updates residuals as it encodes: a call that fails must not have touched them.
  const bool early = error.empty() && unit_count() > 0 && comm_.size() > 1 && early_first_stage() &&
                     options_.error_feedback_key.empty();
  const bool in_envelope =
      early && chunk_codec_->capacity(fp32_bytes / sizeof(float)) <= kEnvelopePayloadBytes;
  auto descriptor = [&] {
    Descriptor d = make_descriptor(op, count, root, error.empty() ? chunk_codec_.get() : nullptr,
                                   options_, error);
    d.signs = signs_;
    return d;
  };
  if (!in_envelope) exchange_->send(descriptor(), error, {});
  if (early) error = run_early(in_envelope);
  if (in_envelope) exchange_->send(descriptor(), error, envelope_payloads_);
}

// Unit 0's stage 0, now. Before the envelopes are sent, a failure is still a local error that
// every rank will hear of; after, it ends this rank's call at its first step.
std::string CollectiveOp::run_early(bool in_envelope) {
  enveloping_ = in_envelope;
  envelope_payloads_.assign(static_cast<size_t>(comm_.size()), nullptr);
  std::string error;
  try {
    run_first_stage_early();
  } catch (const std::exception& e) {
    if (!in_envelope) early_error_ = std::current_exception();
    error = e.what();
  }
  enveloping_ = false;
  if (!error.empty() && in_envelope) {
    drop_units();
    deferred_.clear();
    envelope_payloads_.clear();
    return error;
  }
  return "";
}

bool CollectiveOp::prologue() {
  if (early_error_) std::rethrow_exception(early_error_);
  if (!exchange_->advance()) return false;
  verdict_passed_ = true;
  post_deferred();
  return true;
}

TransportRequestPtr CollectiveOp::send(Bytes message, int peer, int phase) {
  if (verdict_passed_)
    return comm_.transport().isend(message->data(), message->size(), peer, tag(phase), message);
  auto d = std::make_shared<Deferred>();
  d->sending = true;
  d->peer = peer;
  d->phase = phase;
  Bytes& slot = envelope_payloads_[static_cast<size_t>(peer)];
  if (enveloping_ && phase == 1 && !slot && message->size() <= kEnvelopePayloadBytes) {
    slot = message;  // the envelope copies it, and the exchange completes before any unit does
    d->done = true;
  }
  d->message = std::move(message);
  deferred_.push_back(d);
  return std::make_unique<DeferredRequest>(d);
}

TransportRequestPtr CollectiveOp::recv(ByteBuffer& buffer, size_t& bytes, int peer, int phase) {
  auto d = std::make_shared<Deferred>();
  d->buffer = &buffer;
  d->bytes = &bytes;
  return deferred_recv(std::move(d), peer, phase);
}

TransportRequestPtr CollectiveOp::recv_exact(void* to, size_t bytes, int peer, int phase) {
  auto d = std::make_shared<Deferred>();
  d->exact = to;
  d->exact_bytes = bytes;
  return deferred_recv(std::move(d), peer, phase);
}

TransportRequestPtr CollectiveOp::deferred_recv(std::shared_ptr<Deferred> d, int peer, int phase) {
  d->peer = peer;
  d->phase = phase;
  if (verdict_passed_) {
    post_recv(*d);
    if (d->done) return std::make_unique<DeferredRequest>(d);
    return std::move(d->inner);
  }
  deferred_.push_back(d);
  return std::make_unique<DeferredRequest>(d);
}

// A peer's first phase-1 message may have come in its envelope, whatever this rank's own mode
// (the ranks' modes differ where only their error feedback does).
void CollectiveOp::post_recv(Deferred& d) {
  size_t n = 0;
  const uint8_t* carried = nullptr;
  const size_t peer = static_cast<size_t>(d.peer);
  if (d.phase == 1 && !first_taken_[peer]) {
    first_taken_[peer] = true;
    carried = exchange_->payload(d.peer, &n);
  }
  if (!carried) {
    if (d.exact)
      d.inner = std::make_unique<ExactRecv>(
          comm_.transport().irecv(d.exact, d.exact_bytes, d.peer, tag(d.phase)), d.exact_bytes,
          d.peer);
    else
      d.inner = sized_recv(comm_.transport(), *d.buffer, *d.bytes, d.peer, tag(d.phase));
    return;
  }
  if (d.exact) {
    if (n != d.exact_bytes) throw wrong_size(d.peer, n, d.exact_bytes);
    if (n) std::memcpy(d.exact, carried, n);
    d.done = true;
    return;
  }
  if (n > d.buffer->size())
    throw Error(ErrorCode::kMismatch, "rank " + std::to_string(d.peer) + " sent " +
                                          std::to_string(n) + " bytes where at most " +
                                          std::to_string(d.buffer->size()) + " fit");
  if (n) std::memcpy(d.buffer->data(), carried, n);
  *d.bytes = n;
  d.done = true;
}

// In the order the early stage asked for them, so that messages with one tag are posted in the
// same order on every rank.
void CollectiveOp::post_deferred() {
  first_taken_.assign(static_cast<size_t>(comm_.size()), false);
  for (const auto& d : deferred_) {
    if (!d->sending)
      post_recv(*d);
    else if (!d->done)
      d->inner = comm_.transport().isend(d->message->data(), d->message->size(), d->peer,
                                         tag(d->phase), d->message);
  }
  deferred_.clear();
}

}  // namespace detail
}  // namespace octet
