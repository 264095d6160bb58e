// Allreduce: a direct reduce-scatter then allgather, both in the compressed domain.
// Segment r (whole blocks) belongs to rank r. Per chunk k: every rank encodes its chunk k of each
// peer's segment once and sends it to that peer; the owner sums the decoded contributions and
// its own fp32 values in rank order, encodes the reduced chunk once and sends those bytes to
// everyone; every rank, the owner included, decodes the owner's bytes. So an element is quantized
// twice whatever the rank count, and all ranks hold bit-identical results.
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "collectives/collective_op.h"
#include "collectives/hierarchical.h"
#include "collectives/policy.h"
#include "collectives/reduce_chunk.h"

namespace octet {
namespace detail {
namespace {

struct AllreduceUnit : Unit {
  std::vector<ByteBuffer> contributions, reduced;  // received, by rank
  std::vector<size_t> contribution_bytes, reduced_bytes;
  std::vector<TransportRequestPtr> reduced_recvs;
};

class Allreduce : public CollectiveOp {
 public:
  Allreduce(Comm& comm, const float* in, float* out, size_t count, const CollectiveOptions& o)
      : CollectiveOp(comm, 3, o), in_(in ? in : out), out_(out), count_(count) {
    begin(
        OpKind::kAllreduce, count, -1, count * sizeof(float), [&] { return check(); },
        o.codec.type == DataType::kDynamicUnsigned);
  }

 private:
  std::string check() {
    std::string e = check_buffers(in_, out_, count_);
    if (!e.empty()) return e;
    e = check_input(in_, count_, *chunk_codec_, &signs_);
    if (!e.empty()) return e;
    const int p = comm_.size();
    const size_t a = chunk_codec_->align(), blocks = (count_ + a - 1) / a;
    size_t most = 0;
    for (int r = 0; r < p; ++r) {  // whole blocks per segment, as even as possible
      const size_t b0 = blocks * r / p, b1 = blocks * (r + 1) / p;
      const size_t begin = std::min(count_, b0 * a), end = std::min(count_, b1 * a);
      segments_.push_back({begin, end - begin});
      most = std::max(most, end - begin);
    }
    set_units(chunks_in(most, chunk_codec_->chunk_elements()));
    return "";
  }

  bool early_first_stage() const override { return true; }

  Span piece(int rank, size_t k) const {
    return chunk_of(segments_[rank], chunk_codec_->chunk_elements(), k);
  }
  std::string slot(const char* what, int rank, size_t k) const {
    return std::string("allreduce/") + what + "/" + std::to_string(rank) + "/" + std::to_string(k) +
           "/" + std::to_string(comm_.size());
  }

  std::unique_ptr<Unit> make_unit(size_t) override {
    auto u = std::make_unique<AllreduceUnit>();
    const size_t p = static_cast<size_t>(comm_.size());
    u->contributions.resize(p);
    u->reduced.resize(p);
    u->contribution_bytes.assign(p, 0);
    u->reduced_bytes.assign(p, 0);
    return u;
  }

  void run_stage(Unit& base, size_t k, int stage) override {
    auto& u = static_cast<AllreduceUnit&>(base);
    if (stage == 0) post_and_contribute(u, k);
    if (stage == 1) reduce(u, k);
    if (stage == 2) gather(u, k);
  }

  // Stage 0: receives for both phases, then this rank's contribution to every peer's segment.
  void post_and_contribute(AllreduceUnit& u, size_t k) {
    const int me = comm_.rank(), p = comm_.size();
    const Span mine = piece(me, k);
    for (int i = 1; i < p; ++i) {
      const int peer = (me + i) % p;
      if (mine.size) {
        u.contributions[peer].resize(chunk_codec_->capacity(mine.size));
        u.await(1, recv(u.contributions[peer], u.contribution_bytes[peer], peer, 1));
      }
      const Span theirs = piece(peer, k);
      if (theirs.size) {
        u.reduced[peer].resize(chunk_codec_->capacity(theirs.size));
        u.await(2, recv(u.reduced[peer], u.reduced_bytes[peer], peer, 2));
      }
    }
    for (int i = 1; i < p; ++i) {
      const int peer = (me + i) % p;
      const Span s = piece(peer, k);
      if (!s.size) continue;
      Bytes b = chunk_codec_->encode(in_ + s.begin, s.size, s.begin, 1 + me, slot("in", peer, k));
      u.await(3, send(b, peer, 1));
    }
  }

  // Stage 1 (the owner): sum in rank order, encode once, send to all, decode its own bytes.
  void reduce(AllreduceUnit& u, size_t k) {
    const int me = comm_.rank(), p = comm_.size();
    const Span m = piece(me, k);
    if (!m.size) return;
    if (p == 1) {  // nothing travels, so nothing is quantized
      if (out_ != in_) std::memmove(out_ + m.begin, in_ + m.begin, m.size * sizeof(float));
      return;
    }
    const FloatBuffer sum = reduce_chunk(*chunk_codec_, me, p, in_ + m.begin, m.size,
                                         u.contributions, u.contribution_bytes, options_.average);
    Bytes b = chunk_codec_->encode(sum.data(), m.size, m.begin, 0x1000 + me, slot("sum", me, k));
    for (int i = 1; i < p; ++i) {
      const int peer = (me + i) % p;
      u.await(3, send(b, peer, 2));
    }
    chunk_codec_->decode(*b, b->size(), out_ + m.begin, m.size, false, me);
  }

  // Stage 2: decode every other owner's reduced chunk.
  void gather(AllreduceUnit& u, size_t k) {
    const int me = comm_.rank(), p = comm_.size();
    for (int r = 0; r < p; ++r) {
      const Span s = piece(r, k);
      if (r == me || !s.size) continue;
      chunk_codec_->decode(u.reduced[r], u.reduced_bytes[r], out_ + s.begin, s.size, false, r);
    }
  }

  const float* in_;
  float* out_;
  size_t count_;
  std::vector<Span> segments_;
};

}  // namespace
}  // namespace detail

namespace {
auto make_allreduce(Comm& comm, const float* in, float* out, size_t count) {
  return [&comm, in, out, count](const CollectiveOptions& o) -> std::shared_ptr<detail::Operation> {
    if (detail::use_hierarchical(comm, count, o))  // several ranks per host: hierarchical.h
      return detail::make_hierarchical_allreduce(comm, in, out, count, o);
    return std::make_shared<detail::Allreduce>(comm, in, out, count, o);
  };
}
}  // namespace

Request iallreduce(Comm& comm, const float* in, float* out, size_t count,
                   const CollectiveOptions& options) {
  return detail::start_routed(comm, {Collective::kAllreduce, in, out, count}, options,
                              make_allreduce(comm, in, out, count));
}

[[gnu::hot]] void allreduce(Comm& comm, const float* in, float* out, size_t count,
                            const CollectiveOptions& options) {
  detail::run_routed(comm, {Collective::kAllreduce, in, out, count}, options,
                     make_allreduce(comm, in, out, count));
}

}  // namespace octet
