// Point-to-point transfer of a compressed tensor. The sender first sends its descriptor, the
// receiver answers with its own; both judge the pair the same way, so a disagreement fails both
// sides with kMismatch before any data is decoded. A small tensor rides in the descriptor's
// envelope (the receiver takes every envelope into room for 40 B + kEnvelopePayloadBytes, and
// drops the payload if it disagrees), so the receiver has it one message after the call; larger
// ones are encoded and sent chunk by chunk (pipelined) once the answer is in. Transfers with the
// same peer and tag run one after the other, in call order.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "collectives/comm_core.h"
#include "collectives/handshake.h"
#include "collectives/operation.h"

namespace octet {
namespace detail {
namespace {

struct P2PUnit : Unit {
  ByteBuffer part;
  size_t bytes = 0;
};

class PointToPoint : public Pipeline {
 public:
  PointToPoint(Comm& comm, float* buffer, size_t count, int peer, int user_tag,
               const CollectiveOptions& o, bool sending)
      : Pipeline(comm, 0, 2, o.window),
        buffer_(buffer),
        count_(count),
        peer_(peer),
        sending_(sending) {
    // A bad peer or tag cannot be told to the peer: it fails this side's request alone (at test
    // or wait, like every other operation's errors), and nothing is sent.
    unreachable_ = bad_address(comm, peer, user_tag);
    if (!unreachable_.empty()) return;
    tag_ = core(comm).p2p_tag(user_tag, false);
    ack_tag_ = core(comm).p2p_tag(user_tag, true);
    uint8_t signs = 0;
    try {
      chunk_codec_ = std::make_unique<ChunkCodec>(comm, o, count * sizeof(float));
      local_error_ = buffer || count == 0 ? "" : "null buffer with a non-zero count";
      if (local_error_.empty() && sending)
        local_error_ = check_input(buffer, count, *chunk_codec_, &signs);
    } catch (const Error& e) {
      local_error_ = e.what();
    }
    mine_ = make_descriptor(OpKind::kSendRecv, count, -1,
                            local_error_.empty() ? chunk_codec_.get() : nullptr, o, local_error_);
    if (local_error_.empty()) set_units(chunks_in(count, chunk_codec_->chunk_elements()));
    // Error feedback must not encode for a transfer that may yet fail.
    enveloped_ = sending && local_error_.empty() && count > 0 && o.error_feedback_key.empty() &&
                 unit_count() == 1 && chunk_codec_->capacity(count) <= kEnvelopePayloadBytes;
    ticket_ = core(comm).p2p_ticket(peer, tag_, sending);
  }

 private:
  static std::string bad_address(const Comm& comm, int peer, int user_tag) {
    if (peer < 0 || peer >= comm.size())
      return "peer " + std::to_string(peer) + " outside a group of " + std::to_string(comm.size());
    if (user_tag < 0 || user_tag > comm.max_user_tag())
      return "tag " + std::to_string(user_tag) + " outside [0, " +
             std::to_string(comm.max_user_tag()) + "]";
    return "";
  }

  bool prologue() override {
    if (!unreachable_.empty()) throw Error(ErrorCode::kInvalidArgument, unreachable_);
    if (!turn_) {
      if (!core(comm_).p2p_turn(peer_, tag_, sending_, ticket_)) return false;
      turn_ = true;
      post_descriptors();
    }
    if (!gate_open(pending_)) return false;
    if (!judged_) {
      judged_ = true;
      if (!sending_) {  // answer first, so that the sender reaches the same verdict
        auto ack = std::make_shared<DescriptorBytes>(mine_.pack());
        pending_.push_back(comm_.transport().isend(ack->data(), ack->size(), peer_, ack_tag_, ack));
      }
      judge(their_descriptor());
      take_envelope_payload();
    }
    return gate_open(pending_);
  }
  void block_prologue() override {
    for (auto& r : pending_)
      if (r) {
        r->wait();
        r.reset();
        return;
      }
  }

  void post_descriptors() {
    Transport& t = comm_.transport();
    if (sending_) {
      theirs_.resize(kDescriptorBytes);
      pending_.push_back(sized_recv(t, theirs_, their_bytes_, peer_, ack_tag_));
      Bytes envelope = envelope_of(enveloped_ ? encode(0) : nullptr);
      if (enveloped_) set_units(0);  // the tensor is in the envelope
      pending_.push_back(t.isend(envelope->data(), envelope->size(), peer_, tag_, envelope));
    } else {
      theirs_.resize(kDescriptorBytes + kEnvelopePayloadBytes);
      pending_.push_back(sized_recv(t, theirs_, their_bytes_, peer_, tag_));
    }
  }

  Bytes envelope_of(const Bytes& payload) const {
    Descriptor d = mine_;
    d.carries = payload ? 1 : 0;
    const DescriptorBytes head = d.pack();
    auto out = std::make_shared<ByteBuffer>(kDescriptorBytes + (payload ? payload->size() : 0));
    std::memcpy(out->data(), head.data(), kDescriptorBytes);
    if (payload && !payload->empty())
      std::memcpy(out->data() + kDescriptorBytes, payload->data(), payload->size());
    return out;
  }

  Descriptor their_descriptor() const {
    if (their_bytes_ < kDescriptorBytes)
      throw Error(ErrorCode::kMismatch,
                  "rank " + std::to_string(peer_) + " sent something that is not a descriptor");
    DescriptorBytes head;
    std::memcpy(head.data(), theirs_.data(), kDescriptorBytes);
    return Descriptor::unpack(head);
  }

  // The receiver, once the pair agrees: the whole tensor, if it came in the envelope.
  void take_envelope_payload() {
    if (sending_ || !their_descriptor().carries) return;
    const ByteBuffer payload(theirs_.begin() + kDescriptorBytes, theirs_.begin() + their_bytes_);
    chunk_codec_->decode(payload, payload.size(), buffer_, count_, false, peer_);
    set_units(0);
  }

  Bytes encode(size_t k) const {
    const Span c = chunk_of({0, count_}, chunk_codec_->chunk_elements(), k);
    return chunk_codec_->encode(
        buffer_ + c.begin, c.size, c.begin, 1,
        "p2p/" + std::to_string(peer_) + "/" + std::to_string(tag_) + "/" + std::to_string(k));
  }

  void judge(const Descriptor& other) const {
    const std::string who = "rank " + std::to_string(peer_);
    if (!local_error_.empty()) throw Error(ErrorCode::kInvalidArgument, local_error_);
    if (other.error)
      throw Error(ErrorCode::kInvalidArgument,
                  who + " rejected its arguments for this transfer (its own error says why)");
    if (!other.agrees(mine_))
      throw Error(ErrorCode::kMismatch, std::string(sending_ ? "send: " : "recv: ") + who +
                                            " called " + other.text() + ", this rank " +
                                            mine_.text());
  }

  std::unique_ptr<Unit> make_unit(size_t) override { return std::make_unique<P2PUnit>(); }

  void run_stage(Unit& base, size_t k, int stage) override {
    auto& u = static_cast<P2PUnit&>(base);
    const Span c = chunk_of({0, count_}, chunk_codec_->chunk_elements(), k);
    if (sending_) {
      if (stage != 0) return;
      Bytes b = encode(k);
      u.await(2, comm_.transport().isend(b->data(), b->size(), peer_, tag_, b));
    } else if (stage == 0) {
      u.part.resize(chunk_codec_->capacity(c.size));
      u.await(1, sized_recv(comm_.transport(), u.part, u.bytes, peer_, tag_));
    } else {
      chunk_codec_->decode(u.part, u.bytes, buffer_ + c.begin, c.size, false, peer_);
    }
  }

  void finished() override {
    if (turn_) core(comm_).p2p_done(peer_, tag_, sending_);
  }

  float* buffer_;
  size_t count_;
  int peer_, tag_ = 0, ack_tag_ = 0;
  bool sending_;
  std::unique_ptr<ChunkCodec> chunk_codec_;
  std::string local_error_, unreachable_;
  Descriptor mine_;
  ByteBuffer theirs_;  // the peer's envelope (receiver) or answer (sender)
  size_t their_bytes_ = 0;
  std::vector<TransportRequestPtr> pending_;
  uint64_t ticket_ = 0;
  bool turn_ = false, judged_ = false, enveloped_ = false;
};

Request start(Comm& comm, float* buffer, size_t count, int peer, int tag,
              const CollectiveOptions& options, bool sending) {
  auto op = std::make_shared<PointToPoint>(comm, buffer, count, peer, tag, options, sending);
  return detail::start_request(comm, std::move(op));
}

}  // namespace
}  // namespace detail

Request isend(Comm& comm, const float* buffer, size_t count, int peer, int tag,
              const CollectiveOptions& options) {
  // The sender never writes to its buffer.
  return detail::start(comm, const_cast<float*>(buffer), count, peer, tag, options, true);
}

void send(Comm& comm, const float* buffer, size_t count, int peer, int tag,
          const CollectiveOptions& options) {
  isend(comm, buffer, count, peer, tag, options).wait();
}

Request irecv(Comm& comm, float* buffer, size_t count, int peer, int tag,
              const CollectiveOptions& options) {
  return detail::start(comm, buffer, count, peer, tag, options, false);
}

void recv(Comm& comm, float* buffer, size_t count, int peer, int tag,
          const CollectiveOptions& options) {
  irecv(comm, buffer, count, peer, tag, options).wait();
}

}  // namespace octet
