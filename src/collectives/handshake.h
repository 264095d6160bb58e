// The descriptor every rank sends before a collective (operation, count, type, block, root,
// flags), so that ranks that disagree fail together with kMismatch instead of hanging or
// decoding garbage, and an invalid argument on one rank fails the call on all of them.
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

struct Descriptor {
  OpKind op = OpKind::kAllreduce;
  uint8_t type = 0;
  uint8_t flags = 0;  // bit 0 compressed, 1 average, 2 stochastic, 3 checksum
  uint8_t signs = 0;  // signs seen in the input (not compared: see check_input)
  uint8_t error = 0;  // 1: this rank rejected its own arguments
  uint32_t block = 0;
  int32_t root = -1;
  uint64_t count = 0;
  uint64_t chunk = 0;

  // The fields that must agree; everything but signs and error.
  bool agrees(const Descriptor& other) const;
  std::string text() const;
  DescriptorBytes pack() const;
  static Descriptor unpack(const DescriptorBytes& bytes);
};

// The descriptor of a call; `chunks` may be null when the options were rejected.
Descriptor make_descriptor(OpKind op, size_t count, int root, const ChunkCodec* chunks,
                           const CollectiveOptions& options, const std::string& local_error);

// All-to-all exchange of descriptors. After it, every rank has seen every descriptor and so
// reaches the same verdict: advance() throws on every rank or on none.
class Exchange {
 public:
  Exchange(Comm& comm, const Descriptor& mine, int tag, std::string local_error,
           bool same_sign_across_ranks);
  bool advance();
  void block();

 private:
  void verdict() const;
  Comm& comm_;
  Descriptor mine_;
  std::string local_error_;
  bool same_sign_;
  std::shared_ptr<DescriptorBytes> out_;
  std::vector<DescriptorBytes> in_;
  std::vector<TransportRequestPtr> pending_;
  bool done_ = false;
};

}  // namespace detail
}  // namespace octet
