// The common start of every collective: options checked into a ChunkCodec, local arguments
// checked, then the exchange of descriptors as the pipeline's prologue. Where an algorithm allows
// it, its first unit's first stage runs at once, before the verdict: its first message to each
// peer rides in the descriptor's envelope when small (no round of its own for the descriptors),
// and otherwise its encoding overlaps the envelopes' flight. Everything else that stage sends or
// receives waits for the verdict, so a disagreement still leaves no message behind.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/chunk_codec.h"
#include "collectives/handshake.h"
#include "collectives/operation.h"

namespace octet {
namespace detail {

class CollectiveOp : public Pipeline {
 public:
  CollectiveOp(Comm& comm, int stages, const CollectiveOptions& options)
      : Pipeline(comm, 0, stages, options.window),
        options_(options),
        tag_(core(comm).collective_tag_base()) {}

 protected:
  // Builds the chunk codec, runs `check` (returns "" or why the arguments are invalid; sets the
  // unit count) and starts the descriptor exchange. Local errors are reported on every rank.
  void begin(OpKind op, size_t count, int root, size_t fp32_bytes,
             const std::function<std::string()>& check, bool same_sign_across_ranks);
  bool prologue() override;
  void block_prologue() override { exchange_->block(); }

  // Whether unit 0's stage 0 may run before the verdict: it must only read the input, encode and
  // move messages through send() and recv() below.
  virtual bool early_first_stage() const { return false; }

  // The algorithm's transfers on phase `phase` (1..3).
  TransportRequestPtr send(Bytes message, int peer, int phase);
  TransportRequestPtr recv(ByteBuffer& buffer, size_t& bytes, int peer, int phase);
  // A receive of exactly `bytes` into `to`: raw fp32 travels only between ranks that agreed on
  // the call, so another size means a bug, reported (kMismatch) rather than read.
  TransportRequestPtr recv_exact(void* to, size_t bytes, int peer, int phase);

  int tag(int phase) const { return tag_ + phase; }  // phases 1..3; 0 is the descriptor's

  CollectiveOptions options_;
  int tag_;
  uint8_t signs_ = 0;  // set by check() through check_input
  std::unique_ptr<ChunkCodec> chunk_codec_;
  std::unique_ptr<Exchange> exchange_;

 private:
 public:
  struct Deferred;  // a transfer of the early stage, posted at the verdict

 private:
  std::string run_early(bool in_envelope);
  TransportRequestPtr deferred_recv(std::shared_ptr<Deferred> d, int peer, int phase);
  void post_deferred();
  void post_recv(Deferred& d);

  bool verdict_passed_ = false;
  bool enveloping_ = false;        // the early stage's first send to each peer goes in the envelope
  std::vector<bool> first_taken_;  // per peer: its first phase-1 message was received
  std::vector<Bytes> envelope_payloads_;
  std::vector<std::shared_ptr<Deferred>> deferred_;
  std::exception_ptr early_error_;
};

// "" or why a buffer argument is invalid.
inline std::string check_buffers(const void* in, const void* out, size_t count) {
  if (count > 0 && (in == nullptr || out == nullptr)) return "null buffer with a non-zero count";
  return "";
}

}  // namespace detail
}  // namespace octet
