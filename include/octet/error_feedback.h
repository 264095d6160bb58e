// Error feedback (Seide et al. 2014, Strom 2015): keep what compression dropped from a named
// tensor and add it back before the next encode, so the error does not accumulate over steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "octet/codec.h"
#include "octet/export.h"

namespace octet {
namespace codec {
struct ResolvedOptions;
class CodecBackend;
}  // namespace codec

class OCTET_API ErrorFeedback {
 public:
  // Encodes in[0, count) + residual(key) into out and stores the new residual
  // (in + residual - decode(out)). A key seen with a different count starts from zero.
  // Non-finite inputs are encoded as they are and leave a zero residual; a finite input whose sum
  // with its residual would overflow is encoded as +-FLT_MAX (never as +-Inf).
  size_t encode(const std::string& key, const float* in, size_t count, const CodecOptions& options,
                uint8_t* out, size_t out_capacity);
  // The same with options already resolved and a chosen backend (the collectives' chunk path,
  // which validates its options once per call, not once per chunk). Internal to liboctet.
  OCTET_HIDDEN size_t encode(const std::string& key, const float* in, size_t count,
                             const codec::ResolvedOptions& options,
                             const codec::CodecBackend& backend, uint8_t* out, size_t out_capacity);

  // The residual stored for key (empty if none).
  std::vector<float> residual(const std::string& key) const;
  void reset(const std::string& key);
  void clear();

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::vector<float>> residuals_;
};

}  // namespace octet
