// Descriptor exchange before each collective.
#include "collectives/handshake.h"

#include <cstring>

#include "collectives/operation.h"

namespace octet {
namespace detail {
namespace {

constexpr uint32_t kMagic = 0x4f435444;  // "OCTD"

template <typename T>
void put(uint8_t*& p, T v) {
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}
template <typename T>
T get(const uint8_t*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

}  // namespace

const char* op_name(OpKind op) {
  switch (op) {
    case OpKind::kAllreduce:
      return "allreduce";
    case OpKind::kReduceScatter:
      return "reduce_scatter";
    case OpKind::kAllgather:
      return "allgather";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kSendRecv:
      return "send/recv";
    case OpKind::kAllreduceHierarchical:
      return "allreduce (hierarchical)";
  }
  return "?";
}

bool Descriptor::agrees(const Descriptor& o) const {
  return op == o.op && type == o.type && flags == o.flags && block == o.block && root == o.root &&
         count == o.count && chunk == o.chunk;
}

std::string Descriptor::text() const {
  std::string s = std::string(op_name(op)) + " count=" + std::to_string(count);
  s += (flags & 1) ? std::string(" type=") + data_type_name(static_cast<DataType>(type)) +
                         " block=" + std::to_string(block)
                   : std::string(" uncompressed");
  if (flags & 2) s += " average";
  if (flags & 4) s += " stochastic";
  if (flags & 8) s += " checksum";
  if (root >= 0) s += " root=" + std::to_string(root);
  s += " chunk=" + std::to_string(chunk);
  return s;
}

DescriptorBytes Descriptor::pack() const {
  DescriptorBytes b{};
  uint8_t* p = b.data();
  put(p, kMagic);
  put(p, static_cast<uint8_t>(op));
  put(p, type);
  put(p, flags);
  put(p, signs);
  put(p, error);
  put(p, carries);
  put(p, block);
  put(p, root);
  put(p, count);
  put(p, chunk);
  return b;
}

Descriptor Descriptor::unpack(const DescriptorBytes& b) {
  const uint8_t* p = b.data();
  if (get<uint32_t>(p) != kMagic)
    throw Error(ErrorCode::kMismatch, "a peer sent something that is not an Octet descriptor");
  Descriptor d;
  d.op = static_cast<OpKind>(get<uint8_t>(p));
  d.type = get<uint8_t>(p);
  d.flags = get<uint8_t>(p);
  d.signs = get<uint8_t>(p);
  d.error = get<uint8_t>(p);
  d.carries = get<uint8_t>(p);
  d.block = get<uint32_t>(p);
  d.root = get<int32_t>(p);
  d.count = get<uint64_t>(p);
  d.chunk = get<uint64_t>(p);
  return d;
}

Descriptor make_descriptor(OpKind op, size_t count, int root, const ChunkCodec* chunks,
                           const CollectiveOptions& o, const std::string& local_error) {
  Descriptor d;
  d.op = op;
  d.count = count;
  d.root = root;
  d.error = local_error.empty() ? 0 : 1;
  if (!chunks) return d;
  d.type = chunks->compressed() ? static_cast<uint8_t>(o.codec.type) : 0;
  d.block = chunks->compressed() ? chunks->block() : 0;
  d.chunk = chunks->chunk_elements();
  d.flags = static_cast<uint8_t>((chunks->compressed() ? 1 : 0) | (o.average ? 2 : 0) |
                                 (chunks->compressed() && o.codec.stochastic ? 4 : 0) |
                                 (chunks->compressed() && o.codec.checksum ? 8 : 0));
  return d;
}

Exchange::Exchange(Comm& comm, int tag, bool same_sign_across_ranks)
    : comm_(comm),
      tag_(tag),
      same_sign_(same_sign_across_ranks),
      in_(static_cast<size_t>(comm.size())),
      in_bytes_(static_cast<size_t>(comm.size()), 0) {
  const int me = comm.rank(), p = comm.size();
  for (int i = 1; i < p; ++i) {
    const int peer = (me + i) % p;
    in_[peer].resize(kDescriptorBytes + kEnvelopePayloadBytes);
    pending_.push_back(sized_recv(comm.transport(), in_[peer], in_bytes_[peer], peer, tag));
  }
}

void Exchange::send(const Descriptor& mine, std::string local_error,
                    const std::vector<Bytes>& payloads) {
  mine_ = mine;
  local_error_ = std::move(local_error);
  const int me = comm_.rank(), p = comm_.size();
  for (int i = 1; i < p; ++i) {
    const int peer = (me + p - i) % p;
    const Bytes& payload = payloads.empty() ? nullptr : payloads[peer];
    const size_t extra = payload ? payload->size() : 0;
    if (extra > kEnvelopePayloadBytes)
      throw Error(ErrorCode::kInternal, "an envelope's payload is larger than its receivers' room");
    Descriptor d = mine;
    d.carries = payload ? 1 : 0;
    auto out = std::make_shared<ByteBuffer>(kDescriptorBytes + extra);
    const DescriptorBytes head = d.pack();
    std::memcpy(out->data(), head.data(), kDescriptorBytes);
    if (extra) std::memcpy(out->data() + kDescriptorBytes, payload->data(), extra);
    pending_.push_back(comm_.transport().isend(out->data(), out->size(), peer, tag_, out));
  }
  DescriptorBytes own = mine.pack();
  in_[me].assign(own.begin(), own.end());
  in_bytes_[me] = kDescriptorBytes;
  sent_ = true;
}

bool Exchange::advance() {
  if (done_) return true;
  if (!sent_ || !gate_open(pending_)) return false;
  done_ = true;
  verdict();
  return true;
}

void Exchange::block() {
  for (auto& r : pending_)
    if (r) {
      r->wait();
      r.reset();
      return;
    }
}

const uint8_t* Exchange::payload(int peer, size_t* bytes) const {
  const size_t r = static_cast<size_t>(peer);
  *bytes = 0;
  if (!done_ || r >= all_.size() || !all_[r].carries) return nullptr;
  *bytes = in_bytes_[r] - kDescriptorBytes;
  return in_[r].data() + kDescriptorBytes;
}

void Exchange::verdict() {
  if (!local_error_.empty()) throw Error(ErrorCode::kInvalidArgument, local_error_);
  for (size_t r = 0; r < in_.size(); ++r) {
    if (in_bytes_[r] < kDescriptorBytes)
      throw Error(ErrorCode::kMismatch,
                  "rank " + std::to_string(r) + " sent something that is not an Octet descriptor");
    DescriptorBytes head;
    std::memcpy(head.data(), in_[r].data(), kDescriptorBytes);
    all_.push_back(Descriptor::unpack(head));
  }
  const std::vector<Descriptor>& all = all_;
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r].error)
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(op_name(mine_.op)) + ": rank " + std::to_string(r) +
                      " rejected its arguments (its own error says why)");
  uint8_t signs = 0;
  for (size_t r = 0; r < all.size(); ++r) {
    if (!all[r].agrees(all[0]))
      throw Error(ErrorCode::kMismatch, "ranks disagree: rank 0 called " + all[0].text() +
                                            ", rank " + std::to_string(r) + " called " +
                                            all[r].text());
    signs |= all[r].signs;
  }
  if (same_sign_ && signs == 3)
    throw Error(ErrorCode::kInvalidArgument,
                "dynamic_unsigned: the ranks' data have different signs, so their sum does not");
}

}  // namespace detail
}  // namespace octet
