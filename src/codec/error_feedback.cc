#include "octet/error_feedback.h"

#include <cmath>
#include <limits>

#include "codec/backend.h"

namespace octet {

size_t ErrorFeedback::encode(const std::string& key, const float* in, size_t count,
                             const CodecOptions& options, uint8_t* out, size_t out_capacity) {
  return encode(key, in, count, codec::resolve(options), codec::host_backend(), out, out_capacity);
}

size_t ErrorFeedback::encode(const std::string& key, const float* in, size_t count,
                             const codec::ResolvedOptions& options,
                             const codec::CodecBackend& backend, uint8_t* out,
                             size_t out_capacity) {
  if (in == nullptr && count > 0) throw Error(ErrorCode::kInvalidArgument, "input is null");
  std::vector<float> corrected(in, in + count);
  std::vector<float> residual;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = residuals_.find(key);
    if (it != residuals_.end() && it->second.size() == count) residual = std::move(it->second);
  }
  // A finite input plus its residual can pass FLT_MAX: it is sent as +-FLT_MAX, not as +-Inf
  // (the residual beyond FLT_MAX is dropped).
  if (residual.size() == count)
    for (size_t i = 0; i < count; ++i) {
      const float c = corrected[i] + residual[i];
      corrected[i] = std::isinf(c) && std::isfinite(corrected[i])
                         ? std::copysign(std::numeric_limits<float>::max(), c)
                         : c;
    }
  const size_t written =
      backend.encode(options, corrected.data(), count, out, out_capacity, nullptr);
  residual.resize(count);
  backend.decode(out, written, residual.data(), count, DecodeMode::kOverwrite,
                 options.options.threads, nullptr);
  // No residual is stored as -0, the additive identity, so that a -0 input stays -0 next time.
  for (size_t i = 0; i < count; ++i) {
    const float r = corrected[i] - residual[i];
    residual[i] = std::isfinite(r) && r != 0.0f ? r : -0.0f;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  residuals_[key] = std::move(residual);
  return written;
}

std::vector<float> ErrorFeedback::residual(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = residuals_.find(key);
  return it == residuals_.end() ? std::vector<float>{} : it->second;
}

void ErrorFeedback::reset(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  residuals_.erase(key);
}

void ErrorFeedback::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  residuals_.clear();
}

}  // namespace octet
