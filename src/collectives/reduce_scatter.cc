// Reduce-scatter: the first half of allreduce. Per chunk k, every rank encodes its chunk k of
// each peer's segment once and sends it there; each owner sums the decoded contributions and its
// own fp32 values in rank order. Each element is quantized once; nothing is re-encoded.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "collectives/collective_op.h"
#include "collectives/policy.h"
#include "collectives/reduce_chunk.h"

namespace octet {
namespace detail {
namespace {

struct ReduceScatterUnit : Unit {
  std::vector<ByteBuffer> contributions;
  std::vector<size_t> bytes;
};

class ReduceScatter : public CollectiveOp {
 public:
  ReduceScatter(Comm& comm, const float* in, float* out, size_t count, const CollectiveOptions& o)
      : CollectiveOp(comm, 2, o), in_(in ? in : out), out_(out), count_(count) {
    begin(
        OpKind::kReduceScatter, count, -1, count * sizeof(float), [&] { return check(); },
        o.codec.type == DataType::kDynamicUnsigned);
  }

 private:
  std::string check() {
    const size_t total = count_ * static_cast<size_t>(comm_.size());
    std::string e = check_buffers(in_, out_, count_);
    if (e.empty()) e = check_input(in_, total, *chunk_codec_, &signs_);
    if (e.empty()) set_units(chunks_in(count_, chunk_codec_->chunk_elements()));
    return e;
  }
  bool early_first_stage() const override { return true; }
  Span piece(int rank, size_t k) const {
    return chunk_of({count_ * static_cast<size_t>(rank), count_}, chunk_codec_->chunk_elements(),
                    k);
  }

  std::unique_ptr<Unit> make_unit(size_t) override {
    auto u = std::make_unique<ReduceScatterUnit>();
    u->contributions.resize(comm_.size());
    u->bytes.assign(comm_.size(), 0);
    return u;
  }

  void run_stage(Unit& base, size_t k, int stage) override {
    auto& u = static_cast<ReduceScatterUnit&>(base);
    const int me = comm_.rank(), p = comm_.size();
    const Span mine = piece(me, k);
    if (stage == 0) {
      for (int i = 1; i < p; ++i) {
        const int peer = (me + i) % p;
        u.contributions[peer].resize(chunk_codec_->capacity(mine.size));
        u.await(1, recv(u.contributions[peer], u.bytes[peer], peer, 1));
      }
      for (int i = 1; i < p; ++i) {
        const int peer = (me + i) % p;
        const Span s = piece(peer, k);
        Bytes b = chunk_codec_->encode(in_ + s.begin, s.size, s.begin - count_ * peer, 1 + me,
                                       "reduce_scatter/" + std::to_string(peer) + "/" +
                                           std::to_string(k) + "/" + std::to_string(p));
        u.await(2, send(b, peer, 1));
      }
      return;
    }
    // Stage 1: the sum in rank order, written where the result goes (in place: out[0, count),
    // whose input chunk was already encoded or is read first, below).
    const FloatBuffer sum = reduce_chunk(*chunk_codec_, me, p, in_ + mine.begin, mine.size,
                                         u.contributions, u.bytes, options_.average);
    std::copy(sum.begin(), sum.end(), out_ + (mine.begin - count_ * me));
  }

  const float* in_;
  float* out_;
  size_t count_;
};

}  // namespace
}  // namespace detail

namespace {
auto make_reduce_scatter(Comm& comm, const float* in, float* out, size_t count) {
  return [&comm, in, out, count](const CollectiveOptions& o) {
    return std::make_shared<detail::ReduceScatter>(comm, in, out, count, o);
  };
}
}  // namespace

Request ireduce_scatter(Comm& comm, const float* in, float* out, size_t count,
                        const CollectiveOptions& options) {
  return detail::start_routed(comm, {Collective::kReduceScatter, in, out, count}, options,
                              make_reduce_scatter(comm, in, out, count));
}

[[gnu::hot]] void reduce_scatter(Comm& comm, const float* in, float* out, size_t count,
                                 const CollectiveOptions& options) {
  detail::run_routed(comm, {Collective::kReduceScatter, in, out, count}, options,
                     make_reduce_scatter(comm, in, out, count));
}

}  // namespace octet
