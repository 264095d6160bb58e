// The common start of every collective: options checked into a ChunkCodec, local arguments checked,
// then the descriptor exchange as the pipeline's prologue.
#pragma once

#include <functional>
#include <memory>
#include <string>

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
  // unit count) and posts the descriptor exchange. Local errors are reported on every rank.
  void begin(OpKind op, size_t count, int root, size_t fp32_bytes,
             const std::function<std::string()>& check, bool same_sign_across_ranks) {
    std::string error;
    try {
      chunk_codec_ = std::make_unique<ChunkCodec>(comm_, options_, fp32_bytes);
      error = check();
    } catch (const Error& e) {
      error = e.what();
    }
    if (!error.empty()) set_units(0);
    const Descriptor d = make_descriptor(
        op, count, root, error.empty() ? chunk_codec_.get() : nullptr, options_, error);
    Descriptor with_signs = d;
    with_signs.signs = signs_;
    exchange_ = std::make_unique<Exchange>(comm_, with_signs, tag_, error, same_sign_across_ranks);
  }
  bool prologue() override { return exchange_->advance(); }
  void block_prologue() override { exchange_->block(); }

  int tag(int phase) const { return tag_ + phase; }  // phases 1..3; 0 is the descriptor's

  CollectiveOptions options_;
  int tag_;
  uint8_t signs_ = 0;  // set by check() through check_input
  std::unique_ptr<ChunkCodec> chunk_codec_;
  std::unique_ptr<Exchange> exchange_;
};

// "" or why a buffer argument is invalid.
inline std::string check_buffers(const void* in, const void* out, size_t count) {
  if (count > 0 && (in == nullptr || out == nullptr)) return "null buffer with a non-zero count";
  return "";
}

}  // namespace detail
}  // namespace octet
