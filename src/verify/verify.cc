#include "verify/verify.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "octet/detail/hash.h"

namespace octet {
namespace verify {
namespace {

using detail::splitmix64;

Reference zeros(size_t n) {
  Reference r;
  r.exact.assign(n, 0.0);
  r.bound.assign(n, 0.0);
  return r;
}

// Adds contribution x, placed at output element `at`, to the exact result, and `weight` times its
// window absmax to the bound.
void add(Reference& r, const std::vector<float>& x, size_t at, double weight, uint32_t block) {
  const std::vector<double> m = window_max(x, block);
  for (size_t i = 0; i < x.size(); ++i) {
    r.exact[at + i] += x[i];
    r.bound[at + i] += weight * m[i];
  }
}

// sum_r in_r[begin, begin + count), contribution r quantized once where quantized(r), the sum once
// more if `requantized` (see verify.h).
Reference sum(const Source& in, int ranks, size_t begin, size_t count,
              const std::function<bool(int)>& quantized, bool requantized, Quantization q,
              bool average) {
  Reference r = zeros(count);
  const double bf = q.fraction, rounding = 1e-6 * (ranks + 2);
  for (int j = 0; j < ranks; ++j) {
    const double weight =
        (quantized(j) ? bf : 0.0) + (requantized ? bf * (1 + bf) : 0.0) + rounding;
    add(r, in(j, begin, count), 0, weight, q.block);
  }
  if (average)
    for (size_t i = 0; i < count; ++i) r.exact[i] /= ranks, r.bound[i] /= ranks;
  return r;
}

Reference copy(const Source& in, int from, size_t count, double fraction, uint32_t block) {
  Reference r = zeros(count);
  add(r, in(from, 0, count), 0, fraction, block);
  return r;
}

}  // namespace

float Inputs::value(int rank, size_t i) const {
  const uint64_t h = splitmix64(seed * 0x100000001b3ull ^ (uint64_t(rank) << 48) ^ i);
  const double u = double(h >> 11) / double(uint64_t{1} << 53) * 2.0 - 1.0;
  const double scale =
      1.0 + double(splitmix64(seed ^ (i / 1000) ^ (uint64_t(rank) << 40)) % spread);
  return float(u * scale);
}

std::vector<float> Inputs::slice(int rank, size_t begin, size_t count) const {
  std::vector<float> x(count);
  for (size_t i = 0; i < count; ++i) x[i] = value(rank, begin + i);
  return x;
}

std::vector<float> input(int rank, size_t count, uint64_t seed) {
  return Inputs{seed}.slice(rank, 0, count);
}

Source source(const Inputs& inputs) {
  return
      [inputs](int rank, size_t begin, size_t count) { return inputs.slice(rank, begin, count); };
}

Source source(const std::vector<std::vector<float>>& inputs) {
  return [&inputs](int rank, size_t begin, size_t count) {
    const auto first = inputs[rank].begin() + begin;
    return std::vector<float>(first, first + count);
  };
}

std::vector<double> window_max(const std::vector<float>& x, size_t block) {
  const size_t n = x.size();
  std::vector<double> out(n, 0.0);
  std::deque<size_t> q;  // indices with decreasing |x|
  size_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t hi = std::min(n, i + block);  // window [i - block + 1, i + block - 1]
    for (; next < hi; ++next) {
      while (!q.empty() && std::fabs(x[q.back()]) <= std::fabs(x[next])) q.pop_back();
      q.push_back(next);
    }
    while (q.front() + block <= i) q.pop_front();
    out[i] = std::fabs(x[q.front()]);
  }
  return out;
}

Reference allreduce_reference(const Source& in, int ranks, size_t count, Quantization q,
                              bool average) {
  const bool quantized = ranks > 1;
  return sum(
      in, ranks, 0, count, [&](int) { return quantized; }, quantized, q, average);
}

Reference reduce_scatter_reference(const Source& in, int ranks, int rank, size_t count,
                                   Quantization q, bool average) {
  return sum(
      in, ranks, count * size_t(rank), count, [&](int j) { return j != rank; }, false, q, average);
}

Reference allgather_reference(const Source& in, int ranks, size_t count, Quantization q) {
  Reference r = zeros(count * size_t(ranks));
  for (int j = 0; j < ranks; ++j)
    add(r, in(j, 0, count), count * size_t(j), ranks > 1 ? q.fraction : 0.0, q.block);
  return r;
}

Reference broadcast_reference(const Source& in, int ranks, int root, size_t count, Quantization q) {
  return copy(in, root, count, ranks > 1 ? q.fraction : 0.0, q.block);
}

Reference send_recv_reference(const Source& in, int sender, size_t count, Quantization q) {
  return copy(in, sender, count, q.fraction, q.block);
}

double Errors::rms() const {
  return count ? std::sqrt(sum_sq / double(count)) : 0.0;
}

Errors compare(const float* got, const Reference& want) {
  Errors e;
  double max_exact = 0;
  e.count = want.exact.size();
  for (size_t i = 0; i < e.count; ++i) {
    const double err = std::fabs(double(got[i]) - want.exact[i]);
    e.max_abs = std::max(e.max_abs, err);
    max_exact = std::max(max_exact, std::fabs(want.exact[i]));
    e.sum_sq += err * err;
    if (!(err <= want.bound[i])) ++e.wrong;
  }
  e.max_rel = max_exact > 0 ? e.max_abs / max_exact : 0;
  return e;
}

uint64_t fingerprint(const float* data, size_t count) {
  return detail::fnv1a64(data, count * sizeof(float));
}

}  // namespace verify
}  // namespace octet
