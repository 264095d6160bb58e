// The descriptor every rank sends to every other at the start of a collective (operation, count,
// type, block, root, flags), so that ranks that disagree fail together with kMismatch instead of
// hanging or decoding garbage, and an invalid argument on one rank fails the call on all of them.
// It travels in an envelope that may also carry the rank's first message to that peer, so that a
// small call needs no round of its own for it (docs/algorithms.md).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/chunk_codec.h"

namespace octet {
namespace detail {

enum class OpKind : uint8_t {
  kAllreduce = 1,
  kReduceScatter = 2,
  kAllgather = 3,
  kBroadcast = 4,
  kSendRecv = 5,
  kAllreduceHierarchical = 6  // the same operation; a different algorithm must not match it
};
const char* op_name(OpKind op);

constexpr size_t kDescriptorBytes = 40;
using DescriptorBytes = std::array<uint8_t, kDescriptorBytes>;
// The most payload an envelope carries. Every rank receives every envelope into this much room
// whatever it expects, so nothing a disagreeing peer sends can be truncated or left unmatched.
constexpr size_t kEnvelopePayloadBytes = 32 * 1024;

struct Descriptor {
  OpKind op = OpKind::kAllreduce;
  uint8_t type = 0;
  uint8_t flags = 0;    // bit 0 compressed, 1 average, 2 stochastic, 3 checksum
  uint8_t signs = 0;    // signs seen in the input (not compared: see check_input)
  uint8_t error = 0;    // 1: this rank rejected its own arguments
  uint8_t carries = 0;  // 1: the envelope's bytes after the descriptor are a message (not compared)
  uint32_t block = 0;
  int32_t root = -1;
  uint64_t count = 0;
  uint64_t chunk = 0;

  // The fields that must agree; everything but signs, error and carries.
  bool agrees(const Descriptor& other) const;
  std::string text() const;
  DescriptorBytes pack() const;
  static Descriptor unpack(const DescriptorBytes& bytes);
};

// The descriptor of a call; `chunks` may be null when the options were rejected.
Descriptor make_descriptor(OpKind op, size_t count, int root, const ChunkCodec* chunks,
                           const CollectiveOptions& options, const std::string& local_error);

// All-to-all exchange of envelopes. After it, every rank has seen every descriptor and so
// reaches the same verdict: advance() throws on every rank or on none.
class Exchange {
 public:
  // Posts the receives of every peer's envelope.
  Exchange(Comm& comm, int tag, bool same_sign_across_ranks);
  // Sends this rank's envelope to every peer, with payloads[peer] inside where given (at most
  // kEnvelopePayloadBytes; payloads may be empty).
  void send(const Descriptor& mine, std::string local_error, const std::vector<Bytes>& payloads);
  bool advance();  // true once every envelope has come and gone and the verdict passed
  void block();
  // After advance(): the message peer's envelope carried, or null.
  const uint8_t* payload(int peer, size_t* bytes) const;

 private:
  void verdict();
  Comm& comm_;
  int tag_;
  bool same_sign_;
  Descriptor mine_;
  std::string local_error_;
  std::vector<ByteBuffer> in_;
  std::vector<size_t> in_bytes_;
  std::vector<Descriptor> all_;  // every rank's, once all have come
  std::vector<TransportRequestPtr> pending_;
  bool sent_ = false, done_ = false;
};

}  // namespace detail
}  // namespace octet
