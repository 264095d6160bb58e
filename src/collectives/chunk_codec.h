// ChunkCodec: how a chunk of fp32 values travels, as a codec payload made by a codec backend
// (src/codec/backend.h; the host backend today), or as raw fp32 bytes for calls below min_bytes.
// Also the message buffers and chunk layout helpers shared by the algorithms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "codec/backend.h"
#include "collectives/buffer_cache.h"
#include "octet/collectives.h"

namespace octet {
namespace detail {

// The application's buffers may sit at any byte address, as MPI's may (a PMPI shim passes them
// on as they come): their elements are read with memcpy, never through a float lvalue, so a
// misaligned buffer is defined behaviour. The codec reads and writes them the same way.
inline float load_element(const float* x, size_t i) {
  float v;
  std::memcpy(&v, reinterpret_cast<const unsigned char*>(x) + i * sizeof(float), sizeof v);
  return v;
}
// sum[i] += x[i] for i < n; sum is Octet's own (aligned), x the application's.
inline void add_elements(float* sum, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) sum[i] += load_element(x, i);
}

// An allocator whose resize() leaves new elements uninitialized: message buffers are always
// written (by the codec or the transport) before they are read, and zero-filling them cost ~7%
// of a 64 MiB allreduce. Its blocks come from buffer_cache.h, so that they keep their pages from
// one call to the next.
template <typename T>
struct NoInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <typename U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(allocate_buffer(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { release_buffer(p, n * sizeof(T)); }
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using ByteBuffer = std::vector<uint8_t, NoInitAllocator<uint8_t>>;
// A chunk's fp32 values in Octet's own memory (a reduction's sum).
using FloatBuffer = std::vector<float, NoInitAllocator<float>>;
using Bytes = std::shared_ptr<ByteBuffer>;

// A message buffer of `bytes` uninitialized bytes, shared by the algorithm and the transport
// finishing a send. Its block returns to buffer_cache.h when the last owner lets go, so chunks and
// calls reuse the pages of earlier ones instead of faulting in fresh ones.
inline Bytes new_buffer(size_t bytes) {
  return std::make_shared<ByteBuffer>(bytes);
}

struct Span {
  size_t begin = 0, size = 0;
};

inline size_t chunks_in(size_t n, size_t chunk) {
  return (n + chunk - 1) / chunk;
}

// Chunk k of a segment; empty past its end.
inline Span chunk_of(Span segment, size_t chunk, size_t k) {
  const size_t b = k * chunk;
  if (b >= segment.size) return {segment.begin + segment.size, 0};
  return {segment.begin + b, std::min(chunk, segment.size - b)};
}

class ChunkCodec {
 public:
  // Resolves the options once (throws kInvalidArgument for bad ones).
  ChunkCodec(Comm& comm, const CollectiveOptions& options, size_t fp32_bytes);

  bool compressed() const { return compressed_; }
  const CodecOptions& codec() const { return resolved_.options; }
  uint32_t block() const { return resolved_.block; }
  uint32_t align() const { return compressed_ ? resolved_.block : 1; }  // chunk boundaries
  size_t chunk_elements() const { return chunk_; }
  size_t capacity(size_t n) const;  // largest message for n elements

  // Encodes x[0, n), elements [first, first + n) of the tensor (stochastic stream). `salt` makes
  // each encoder's random stream distinct; `slot` names the error-feedback residual.
  Bytes encode(const float* x, size_t n, uint64_t first, uint64_t salt,
               const std::string& slot) const;
  // Decodes a message from rank `from` into out[0, n) (+= when accumulate).
  void decode(const ByteBuffer& message, size_t bytes, float* out, size_t n, bool accumulate,
              int from) const;

 private:
  // CollectiveOptions::chunk_bytes = 0: 1 MiB of fp32, or, for compressed chunks of a group
  // that spans hosts, the most whole blocks whose message fits the transport's eager_bytes().
  size_t auto_chunk_elements(const Transport& t) const;

  Comm& comm_;
  codec::ResolvedOptions resolved_;
  const codec::CodecBackend& backend_;
  std::string feedback_key_;
  bool compressed_;
  size_t chunk_ = 1;
};

// Receives into buf (at most buf.size() bytes); the size lands in `bytes` on completion.
TransportRequestPtr sized_recv(Transport& t, ByteBuffer& buf, size_t& bytes, int peer, int tag);

// "" when x[0, n) can be sent with these options, else why not (dynamic_unsigned needs
// single-signed data). Also reports the signs seen (bit 0: > 0, bit 1: < 0).
std::string check_input(const float* x, size_t n, const ChunkCodec& chunks, uint8_t* signs);

}  // namespace detail
}  // namespace octet
