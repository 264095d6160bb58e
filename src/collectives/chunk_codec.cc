// Chunk encoding for the algorithms: codec payloads through the codec backend (with optional
// error feedback and a per-encoder stochastic stream) or raw fp32 for small calls.
#include "collectives/chunk_codec.h"

#include <algorithm>
#include <cstring>

#include "collectives/hierarchical.h"
#include "octet/detail/hash.h"

namespace octet {
namespace detail {
namespace {

class SizedRecv : public TransportRequest {
 public:
  SizedRecv(TransportRequestPtr inner, size_t& bytes) : inner_(std::move(inner)), bytes_(bytes) {}
  bool test() override {
    if (!inner_->test()) return false;
    bytes_ = inner_->bytes();
    return true;
  }
  void wait() override {
    inner_->wait();
    bytes_ = inner_->bytes();
  }
  size_t bytes() const override { return inner_->bytes(); }

 private:
  TransportRequestPtr inner_;
  size_t& bytes_;
};

}  // namespace

TransportRequestPtr sized_recv(Transport& t, ByteBuffer& buf, size_t& bytes, int peer, int tag) {
  return std::make_unique<SizedRecv>(t.irecv(buf.data(), buf.size(), peer, tag), bytes);
}

ChunkCodec::ChunkCodec(Comm& comm, const CollectiveOptions& o, size_t fp32_bytes)
    : comm_(comm),
      resolved_(codec::resolve(o.codec)),
      backend_(codec::host_backend()),
      feedback_key_(o.error_feedback_key),
      compressed_(fp32_bytes >= o.min_bytes) {
  if (o.window < 1) throw Error(ErrorCode::kInvalidArgument, "window must be at least 1");
  if (o.threads < 0) throw Error(ErrorCode::kInvalidArgument, "threads must be >= 0");
  resolved_.options.threads = o.threads;
  // One MPI message stays far below 2 GiB; at least one block per chunk.
  const size_t cap = size_t{1} << 28;
  const size_t want = o.chunk_bytes == 0 ? auto_chunk_elements(comm.transport())
                                         : std::min(std::max<size_t>(o.chunk_bytes / 4, 1), cap);
  const size_t a = align();
  chunk_ = std::max<size_t>(a, want / a * a);
}

size_t ChunkCodec::auto_chunk_elements(const Transport& t) const {
  constexpr size_t kDefault = (size_t{1} << 20) / sizeof(float);
  const size_t eager = t.eager_bytes();
  if (!compressed_ || eager <= kChunkHeaderRoom || HostLayout::of(t).hosts < 2) return kDefault;
  // The most whole blocks whose payload fits (a block with NaN or Inf adds its classes; such a
  // chunk then takes a rendezvous, and is only slower).
  const size_t budget = eager - kChunkHeaderRoom, block = resolved_.block;
  size_t blocks = std::min(kDefault / block, budget * 8 / (block * data_type_bits(codec().type)));
  while (blocks > 1 && encoded_size(blocks * block, codec()) > budget) --blocks;
  return std::max<size_t>(blocks, 1) * block;
}

size_t ChunkCodec::capacity(size_t n) const {
  return compressed_ ? max_encoded_size(n, resolved_.options) : n * sizeof(float);
}

Bytes ChunkCodec::encode(const float* x, size_t n, uint64_t first, uint64_t salt,
                         const std::string& slot) const {
  Bytes out = new_buffer(capacity(n));
  if (!compressed_) {
    if (n) std::memcpy(out->data(), x, n * sizeof(float));
    return out;
  }
  codec::ResolvedOptions r = resolved_;
  r.options.seed = splitmix64(resolved_.options.seed ^ splitmix64(salt));
  r.options.index_offset = resolved_.options.index_offset + first;
  size_t bytes;
  if (feedback_key_.empty())
    bytes = backend_.encode(r, x, n, out->data(), out->size(), nullptr);
  else
    bytes = comm_.error_feedback().encode(feedback_key_ + "|" + slot, x, n, r, backend_,
                                          out->data(), out->size());
  out->resize(bytes);
  comm_.transport().poll();  // keep earlier chunks moving while we compute
  return out;
}

void ChunkCodec::decode(const ByteBuffer& message, size_t bytes, float* out, size_t n,
                        bool accumulate, int from) const {
  if (compressed_) {
    try {
      backend_.decode(message.data(), bytes, out, n,
                      accumulate ? DecodeMode::kAccumulate : DecodeMode::kOverwrite,
                      resolved_.options.threads, nullptr);
    } catch (const Error& e) {
      throw Error(e.code(), "data from rank " + std::to_string(from) + ": " + e.what());
    }
    return;
  }
  if (bytes != n * sizeof(float))
    throw Error(ErrorCode::kMismatch, "rank " + std::to_string(from) + " sent " +
                                          std::to_string(bytes) + " bytes, expected " +
                                          std::to_string(n * sizeof(float)));
  if (!accumulate) {
    if (n) std::memcpy(out, message.data(), bytes);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, message.data() + i * sizeof(float), sizeof v);
    out[i] += v;
  }
}

std::string check_input(const float* x, size_t n, const ChunkCodec& chunks, uint8_t* signs) {
  *signs = 0;
  if (!chunks.compressed() || chunks.codec().type != DataType::kDynamicUnsigned) return "";
  uint8_t s = 0;
  for (size_t i = 0; i < n && s != 3; ++i) {
    const float v = load_element(x, i);
    s |= (v > 0.0f ? 1 : 0) | (v < 0.0f ? 2 : 0);
  }
  *signs = s;
  if (s == 3) return "dynamic_unsigned needs data of one sign (all >= 0 or all <= 0) on each rank";
  return "";
}

}  // namespace detail
}  // namespace octet
