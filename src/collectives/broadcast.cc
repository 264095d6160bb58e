// Broadcast: per chunk k, the root encodes once, sends the same bytes to every peer and decodes
// them into its own buffer, so that all ranks hold bit-identical results. Quantized once.
#include <string>
#include <utility>
#include <vector>

#include "collectives/collective_op.h"
#include "collectives/policy.h"

namespace octet {
namespace detail {
namespace {

struct BroadcastUnit : Unit {
  ByteBuffer part;
  size_t bytes = 0;
  Bytes own;  // the root's encoded chunk, decoded in stage 1 (stage 0 may run before the verdict)
};

class Broadcast : public CollectiveOp {
 public:
  Broadcast(Comm& comm, float* buffer, size_t count, int root, const CollectiveOptions& o)
      : CollectiveOp(comm, 2, o), buffer_(buffer), count_(count), root_(root) {
    begin(
        OpKind::kBroadcast, count, root, count * sizeof(float), [&] { return check(); }, false);
  }

 private:
  std::string check() {
    if (root_ < 0 || root_ >= comm_.size())
      return "root " + std::to_string(root_) + " outside a group of " +
             std::to_string(comm_.size());
    std::string e = check_buffers(buffer_, buffer_, count_);
    if (e.empty() && comm_.rank() == root_)
      e = check_input(buffer_, count_, *chunk_codec_, &signs_);
    if (e.empty()) set_units(chunks_in(count_, chunk_codec_->chunk_elements()));
    return e;
  }

  bool early_first_stage() const override { return true; }
  std::unique_ptr<Unit> make_unit(size_t) override { return std::make_unique<BroadcastUnit>(); }

  void run_stage(Unit& base, size_t k, int stage) override {
    auto& u = static_cast<BroadcastUnit&>(base);
    const int me = comm_.rank(), p = comm_.size();
    const Span c = chunk_of({0, count_}, chunk_codec_->chunk_elements(), k);
    if (p == 1) return;  // nothing travels, nothing is quantized
    if (me != root_) {
      if (stage == 0) {
        u.part.resize(chunk_codec_->capacity(c.size));
        u.await(1, recv(u.part, u.bytes, root_, 1));
      } else {
        chunk_codec_->decode(u.part, u.bytes, buffer_ + c.begin, c.size, false, root_);
      }
      return;
    }
    if (stage != 0) {
      chunk_codec_->decode(*u.own, u.own->size(), buffer_ + c.begin, c.size, false, me);
      return;
    }
    u.own = chunk_codec_->encode(buffer_ + c.begin, c.size, c.begin, 1 + me,
                                 "broadcast/" + std::to_string(k));
    for (int i = 1; i < p; ++i) u.await(2, send(u.own, (me + i) % p, 1));
  }

  float* buffer_;
  size_t count_;
  int root_;
};

}  // namespace
}  // namespace detail

namespace {
auto make_broadcast(Comm& comm, float* buffer, size_t count, int root) {
  return [&comm, buffer, count, root](const CollectiveOptions& o) {
    return std::make_shared<detail::Broadcast>(comm, buffer, count, root, o);
  };
}
}  // namespace

Request ibroadcast(Comm& comm, float* buffer, size_t count, int root,
                   const CollectiveOptions& options) {
  return detail::start_routed(comm, {Collective::kBroadcast, buffer, buffer, count, root}, options,
                              make_broadcast(comm, buffer, count, root));
}

[[gnu::hot]] void broadcast(Comm& comm, float* buffer, size_t count, int root,
                            const CollectiveOptions& options) {
  detail::run_routed(comm, {Collective::kBroadcast, buffer, buffer, count, root}, options,
                     make_broadcast(comm, buffer, count, root));
}

}  // namespace octet
