// Hierarchical allreduce (hierarchical.h). The vector is cut into S slices (whole blocks), slice i
// belonging to local rank i of every host (S: the fewest ranks on a host; on hosts with more,
// the extra ranks only contribute and receive). Each slice is cut into H segments as the flat
// allreduce cuts its vector, segment h belonging to host h's owner of the slice. Per chunk k:
//  stage 0 (every rank): post the chunk's receives; send chunk k of every other slice, as raw
//          fp32, to the local rank that owns it (intra-host reduce-scatter);
//  stage 1 (owners): the host's exact fp32 sum of chunk k of the slice, in local-rank order;
//          each other host's segment of it, encoded, to that host's owner of the slice;
//  stage 2 (owners): the flat allreduce's reduction of its own segment (reduce_chunk: its host's
//          exact sum plus the decoded sums of the other hosts, in host order), encoded once, sent
//          to the other hosts' owners and decoded by itself;
//  stage 3 (owners): decode the other hosts' reduced segments; send the slice's chunk, raw fp32,
//          to the other local ranks (intra-host allgather), which receive it in place.
// So an element is quantized twice (its host's sum once, the total once) and every rank ends
// with the bytes its slice's owners decoded: bit-identical everywhere.
#include "collectives/hierarchical.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "collectives/collective_op.h"
#include "collectives/reduce_chunk.h"

namespace octet {
namespace detail {

HostLayout HostLayout::of(const Transport& t) {
  std::map<int, size_t> index;          // host id -> host index, in order of lowest rank
  std::vector<std::vector<int>> ranks;  // by host index
  for (int r = 0; r < t.size(); ++r) {
    const auto it = index.emplace(t.host_of(r), ranks.size()).first;
    if (it->second == ranks.size()) ranks.emplace_back();
    ranks[it->second].push_back(r);
  }
  HostLayout l;
  l.hosts = static_cast<int>(ranks.size());
  l.slices = static_cast<int>(ranks[0].size());
  for (size_t h = 0; h < ranks.size(); ++h) {
    l.slices = std::min(l.slices, static_cast<int>(ranks[h].size()));
    const auto at = std::find(ranks[h].begin(), ranks[h].end(), t.rank());
    if (at == ranks[h].end()) continue;
    l.host = static_cast<int>(h);
    l.local = static_cast<int>(at - ranks[h].begin());
  }
  l.members = ranks[static_cast<size_t>(l.host)];
  if (l.owner())
    for (const auto& host : ranks) l.peers.push_back(host[static_cast<size_t>(l.local)]);
  return l;
}

bool use_hierarchical(const Comm& comm, size_t count, const CollectiveOptions& o) {
  using Algorithm = CollectiveOptions::AllreduceAlgorithm;
  if (o.allreduce_algorithm == Algorithm::kFlat) return false;
  if (o.allreduce_algorithm == Algorithm::kHierarchical) return true;
  // Uncompressed calls stay flat: exact either way, and flat keeps the plain rank-order sum.
  if (count * sizeof(float) < o.min_bytes) return false;
  return hierarchical_fits(comm);
}

bool hierarchical_fits(const Comm& comm) {
  const HostLayout l = HostLayout::of(comm.transport());
  return l.hosts > 1 && l.hosts < comm.size();
}

namespace {

// Raw fp32 buffers (packed chunks) are message buffers (new_buffer), so their pages come back from
// the buffer cache: these are the algorithm's largest buffers (4x a payload), and fresh ones cost
// more than the copies.
struct HierarchicalUnit : Unit {
  std::vector<Bytes> local_in;            // stage 1: by local rank, raw fp32 of my slice
  std::vector<ByteBuffer> contributions;  // stage 2: by host, the encoded sums of my segment
  std::vector<ByteBuffer> reduced;        // stage 3: by host, the encoded totals of its segment
  std::vector<size_t> contribution_bytes, reduced_bytes;
  Bytes own, host_sum;  // chunk k of my slice (packed, fp32): my values, my host's sum
};

float* floats(const Bytes& b) {
  return reinterpret_cast<float*>(b->data());  // operator new's alignment suffices
}

class HierarchicalAllreduce : public CollectiveOp {
  static constexpr int kDone = 4;  // stages 0-3; gate 4 holds what must end before the unit does

 public:
  HierarchicalAllreduce(Comm& comm, const float* in, float* out, size_t count,
                        const CollectiveOptions& o)
      : CollectiveOp(comm, kDone, o),
        in_(in ? in : out),
        out_(out),
        count_(count),
        l_(HostLayout::of(comm.transport())) {
    begin(
        OpKind::kAllreduceHierarchical, count, -1, count * sizeof(float), [&] { return check(); },
        o.codec.type == DataType::kDynamicUnsigned);
  }

 private:
  // Unit 0's stage 0 (receives posted, raw chunks packed for the host's slice owners) runs before
  // the descriptors' verdict: its transfers wait for it, and a small call's first chunk to each
  // owner rides in the descriptor's envelope, so no call spends a round on descriptors alone.
  bool early_first_stage() const override { return true; }

  std::string check() {
    std::string e = check_buffers(in_, out_, count_);
    if (e.empty()) e = check_input(in_, count_, *chunk_codec_, &signs_);
    if (e.empty()) cut_segments();
    return e;
  }

  // Slices and their segments in whole blocks, as even as possible; segment (i, h) is
  // segments_[i * H + h].
  void cut_segments() {
    const size_t s = static_cast<size_t>(l_.slices), h = static_cast<size_t>(l_.hosts);
    const size_t a = chunk_codec_->align(), blocks = (count_ + a - 1) / a;
    size_t most = 0;
    for (size_t i = 0; i < s; ++i) {
      const size_t s0 = blocks * i / s, s1 = blocks * (i + 1) / s;
      for (size_t j = 0; j < h; ++j) {
        const size_t b0 = s0 + (s1 - s0) * j / h, b1 = s0 + (s1 - s0) * (j + 1) / h;
        const size_t begin = std::min(count_, b0 * a), end = std::min(count_, b1 * a);
        segments_.push_back({begin, end - begin});
        most = std::max(most, end - begin);
      }
    }
    set_units(chunks_in(most, chunk_codec_->chunk_elements()));
  }

  Span piece(int slice, int host, size_t k) const {
    return chunk_of(segments_[static_cast<size_t>(slice * l_.hosts + host)],
                    chunk_codec_->chunk_elements(), k);
  }
  // Where host's piece starts in chunk k of slice, packed (pieces in host order); host = H: the
  // packed size.
  size_t offset(int slice, int host, size_t k) const {
    size_t n = 0;
    for (int h = 0; h < host; ++h) n += piece(slice, h, k).size;
    return n;
  }
  size_t packed(int slice, size_t k) const { return offset(slice, l_.hosts, k); }
  // Copies chunk k of a slice from the application's buffer (any alignment) into a packed one.
  void pack(const float* from, int slice, size_t k, uint8_t* to) const {
    uint8_t* p = to;
    for (int h = 0; h < l_.hosts; ++h) {
      const Span s = piece(slice, h, k);
      if (s.size) std::memcpy(p, from + s.begin, s.size * sizeof(float));
      p += s.size * sizeof(float);
    }
  }
  // Intra-host results travel on phase 2, as the contributions between hosts do: their senders
  // are on other hosts, so no (peer, tag) pair carries both.
  static constexpr int kSharePhase = 2;
  std::string slot(const char* what, int host, size_t k) const {
    return std::string("allreduce-h/") + what + "/" + std::to_string(l_.local) + "/" +
           std::to_string(host) + "/" + std::to_string(k) + "/" + std::to_string(l_.slices) + "x" +
           std::to_string(l_.hosts);
  }

  std::unique_ptr<Unit> make_unit(size_t) override {
    auto u = std::make_unique<HierarchicalUnit>();
    const size_t local = l_.members.size(), hosts = static_cast<size_t>(l_.hosts);
    u->local_in.resize(local);
    u->contributions.resize(hosts);
    u->contribution_bytes.assign(hosts, 0);
    u->reduced.resize(hosts);
    u->reduced_bytes.assign(hosts, 0);
    return u;
  }

  void run_stage(Unit& base, size_t k, int stage) override {
    auto& u = static_cast<HierarchicalUnit&>(base);
    if (stage == 0) {
      post(u, k);
      scatter(u, k);
    } else if (l_.owner()) {  // stages 1-3 are the slice owners'
      if (stage == 1) reduce_host(u, k);
      if (stage == 2) reduce_hosts(u, k);
      if (stage == 3) share(u, k);
    }
  }

  // Receives of `n` elements on `phase` that gate `stage` (a payload; raw fp32 into `to`); none
  // when n is 0, which the sender sees too. Through CollectiveOp, which holds them until the
  // verdict when unit 0's stage 0 runs early.
  void receive(Unit& u, int stage, ByteBuffer& buf, size_t& bytes, size_t n, int peer, int phase) {
    if (!n) return;
    buf.resize(chunk_codec_->capacity(n));
    u.await(stage, recv(buf, bytes, peer, phase));
  }
  void receive_raw(Unit& u, int stage, void* to, size_t n, int peer, int phase) {
    if (!n) return;
    u.await(stage, recv_exact(to, n * sizeof(float), peer, phase));
  }
  void send(Unit& u, Bytes b, int peer, int phase) {
    u.await(kDone, CollectiveOp::send(std::move(b), peer, phase));
  }

  // Stage 0: every receive of chunk k.
  void post(HierarchicalUnit& u, size_t k) {
    if (l_.owner()) {
      const size_t mine = packed(l_.local, k);
      for (size_t j = 0; j < l_.members.size(); ++j) {
        if (static_cast<int>(j) == l_.local || !mine) continue;
        u.local_in[j] = new_buffer(mine * sizeof(float));
        receive_raw(u, 1, u.local_in[j]->data(), mine, l_.members[j], 1);
      }
      const size_t own = piece(l_.local, l_.host, k).size;
      for (int h = 0; h < l_.hosts; ++h) {
        if (h == l_.host) continue;
        const size_t theirs = piece(l_.local, h, k).size;
        receive(u, 2, u.contributions[h], u.contribution_bytes[h], own, l_.peers[h], 2);
        receive(u, 3, u.reduced[h], u.reduced_bytes[h], theirs, l_.peers[h], 3);
      }
    }
    // The other slices' results, one message per segment, straight into place (in place too:
    // they come after their owner received this rank's input of the same elements).
    for (int j = 0; j < l_.slices; ++j)
      for (int h = 0; h < l_.hosts && j != l_.local; ++h) {
        const Span s = piece(j, h, k);
        receive_raw(u, kDone, out_ + s.begin, s.size, l_.members[j], kSharePhase);
      }
  }

  // Stage 0: chunk k of every other slice to its owner on this host.
  void scatter(HierarchicalUnit& u, size_t k) {
    for (int j = 0; j < l_.slices; ++j) {
      const size_t n = packed(j, k);
      if (j == l_.local || !n) continue;
      Bytes b = new_buffer(n * sizeof(float));
      pack(in_, j, k, b->data());
      send(u, b, l_.members[j], 1);
    }
  }

  // Stage 1: the host's exact sum of chunk k of my slice, in local-rank order, then its other
  // hosts' segments encoded to their owners.
  void reduce_host(HierarchicalUnit& u, size_t k) {
    const size_t n = packed(l_.local, k);
    if (!n) return;
    u.own = new_buffer(n * sizeof(float));
    pack(in_, l_.local, k, u.own->data());
    std::vector<const float*> parts;  // by local rank
    for (size_t j = 0; j < l_.members.size(); ++j)
      parts.push_back(floats(static_cast<int>(j) == l_.local ? u.own : u.local_in[j]));
    u.host_sum = new_buffer(n * sizeof(float));
    float* sum = floats(u.host_sum);
    std::fill(sum, sum + n, -0.0f);  // -0: IEEE's additive identity, as in reduce_chunk
    for (const float* x : parts) add_elements(sum, x, n);
    if (options_.average) average(sum, n, parts);
    const int me = comm_.rank();
    for (int h = 0; h < l_.hosts; ++h) {
      const Span s = piece(l_.local, h, k);
      if (h == l_.host || !s.size) continue;
      const float* x = sum + offset(l_.local, h, k);
      send(u, chunk_codec_->encode(x, s.size, s.begin, 1 + me, slot("in", h, k)), l_.peers[h], 2);
    }
  }

  // With `average` the host divides its sum by the rank count P before anything is quantized
  // (the hosts' shares then add up to the average). Where the host's fp32 sum is not finite it
  // takes sum_j (x_j / P) instead, as reduce_chunk does, so that an average of finite values
  // stays finite even where their sum overflows.
  void average(float* sum, size_t n, const std::vector<const float*>& parts) const {
    const float ranks = static_cast<float>(comm_.size());
    for (size_t i = 0; i < n; ++i) {
      if (std::isfinite(sum[i])) {
        sum[i] /= ranks;
        continue;
      }
      float a = -0.0f;
      for (const float* x : parts) a += load_element(x, i) / ranks;
      sum[i] = a;
    }
  }

  // Stage 2: my segment's total over hosts, encoded once, to the other hosts and decoded here.
  void reduce_hosts(HierarchicalUnit& u, size_t k) {
    const Span own = piece(l_.local, l_.host, k);
    if (!own.size) return;
    const float* mine = floats(u.host_sum) + offset(l_.local, l_.host, k);
    if (l_.hosts == 1) {  // nothing travels between hosts, so nothing is quantized
      std::memcpy(out_ + own.begin, mine, own.size * sizeof(float));
      return;
    }
    const FloatBuffer total = reduce_chunk(*chunk_codec_, l_.host, l_.hosts, mine, own.size,
                                           u.contributions, u.contribution_bytes, false);
    const int me = comm_.rank();
    Bytes b = chunk_codec_->encode(total.data(), own.size, own.begin, 0x1000 + me,
                                   slot("sum", l_.host, k));
    for (int h = 0; h < l_.hosts; ++h)
      if (h != l_.host) send(u, b, l_.peers[h], 3);
    chunk_codec_->decode(*b, b->size(), out_ + own.begin, own.size, false, me);
  }

  // Stage 3: the other hosts' totals of my slice, then the whole chunk to my host's other ranks.
  void share(HierarchicalUnit& u, size_t k) {
    for (int h = 0; h < l_.hosts; ++h) {
      const Span s = piece(l_.local, h, k);
      if (h == l_.host || !s.size) continue;
      chunk_codec_->decode(u.reduced[h], u.reduced_bytes[h], out_ + s.begin, s.size, false,
                           l_.peers[h]);
    }
    const size_t n = packed(l_.local, k);
    if (!n || l_.members.size() == 1) return;
    Bytes b = new_buffer(n * sizeof(float));
    pack(out_, l_.local, k, b->data());
    for (size_t j = 0; j < l_.members.size(); ++j) {
      if (static_cast<int>(j) == l_.local) continue;
      for (int h = 0; h < l_.hosts; ++h) {  // one message per segment: see post()
        const Span s = piece(l_.local, h, k);
        if (!s.size) continue;
        const size_t at = offset(l_.local, h, k) * sizeof(float);
        u.await(kDone, comm_.transport().isend(b->data() + at, s.size * sizeof(float),
                                               l_.members[j], tag(kSharePhase), b));
      }
    }
  }

  const float* in_;
  float* out_;
  size_t count_;
  const HostLayout l_;
  std::vector<Span> segments_;
};

}  // namespace

std::shared_ptr<Operation> make_hierarchical_allreduce(Comm& comm, const float* in, float* out,
                                                       size_t count,
                                                       const CollectiveOptions& options) {
  return std::make_shared<HierarchicalAllreduce>(comm, in, out, count, options);
}

}  // namespace detail
}  // namespace octet
