// Allgather: per chunk k, every rank encodes its chunk once, sends the same bytes to every peer
// and decodes them itself, so that all ranks hold bit-identical results. Quantized once.
#include <string>
#include <utility>
#include <vector>

#include "collectives/collective_op.h"
#include "collectives/policy.h"

namespace octet {
namespace detail {
namespace {

struct AllgatherUnit : Unit {
  std::vector<ByteBuffer> parts;
  std::vector<size_t> bytes;
  Bytes own;  // this rank's encoded chunk, decoded in stage 1 (stage 0 may run before the verdict)
};

class Allgather : public CollectiveOp {
 public:
  Allgather(Comm& comm, const float* in, float* out, size_t count, const CollectiveOptions& o)
      : CollectiveOp(comm, 2, o), out_(out), count_(count) {
    in_ = in ? in : (out ? out + count * static_cast<size_t>(comm.rank()) : nullptr);
    if (in == out && out) in_ = out + count * static_cast<size_t>(comm.rank());
    begin(
        OpKind::kAllgather, count, -1, count * sizeof(float), [&] { return check(); }, false);
  }

 private:
  std::string check() {
    std::string e = check_buffers(in_, out_, count_);
    if (e.empty()) e = check_input(in_, count_, *chunk_codec_, &signs_);
    if (e.empty()) set_units(chunks_in(count_, chunk_codec_->chunk_elements()));
    return e;
  }

  bool early_first_stage() const override { return true; }

  std::unique_ptr<Unit> make_unit(size_t) override {
    auto u = std::make_unique<AllgatherUnit>();
    u->parts.resize(comm_.size());
    u->bytes.assign(comm_.size(), 0);
    return u;
  }

  void run_stage(Unit& base, size_t k, int stage) override {
    auto& u = static_cast<AllgatherUnit&>(base);
    const int me = comm_.rank(), p = comm_.size();
    const Span c = chunk_of({0, count_}, chunk_codec_->chunk_elements(), k);
    if (stage == 0) {
      for (int i = 1; i < p; ++i) {
        const int peer = (me + i) % p;
        u.parts[peer].resize(chunk_codec_->capacity(c.size));
        u.await(1, recv(u.parts[peer], u.bytes[peer], peer, 1));
      }
      if (p == 1) {  // nothing travels, nothing is quantized
        std::copy(in_ + c.begin, in_ + c.begin + c.size, out_ + c.begin);
        return;
      }
      Bytes b = chunk_codec_->encode(in_ + c.begin, c.size, c.begin, 1 + me,
                                     "allgather/" + std::to_string(k) + "/" + std::to_string(p));
      for (int i = 1; i < p; ++i) {
        const int peer = (me + p - i) % p;
        u.await(2, send(b, peer, 1));
      }
      u.own = std::move(b);
      return;
    }
    if (u.own)
      chunk_codec_->decode(*u.own, u.own->size(), out_ + count_ * me + c.begin, c.size, false, me);
    for (int r = 0; r < p; ++r)
      if (r != me)
        chunk_codec_->decode(u.parts[r], u.bytes[r], out_ + count_ * r + c.begin, c.size, false, r);
  }

  const float* in_;
  float* out_;
  size_t count_;
};

}  // namespace
}  // namespace detail

namespace {
auto make_allgather(Comm& comm, const float* in, float* out, size_t count) {
  return [&comm, in, out, count](const CollectiveOptions& o) {
    return std::make_shared<detail::Allgather>(comm, in, out, count, o);
  };
}
}  // namespace

Request iallgather(Comm& comm, const float* in, float* out, size_t count,
                   const CollectiveOptions& options) {
  return detail::start_routed(comm, {Collective::kAllgather, in, out, count}, options,
                              make_allgather(comm, in, out, count));
}

[[gnu::hot]] void allgather(Comm& comm, const float* in, float* out, size_t count,
                            const CollectiveOptions& options) {
  detail::run_routed(comm, {Collective::kAllgather, in, out, count}, options,
                     make_allgather(comm, in, out, count));
}

}  // namespace octet
