// Measurements on the machine at hand: codec throughput, and an alpha-beta fit of a measured
// per-size time table (the MPI ping-pong itself runs in the CLI, which links MPI).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "octet/codec.h"
#include "predictor/predictor.h"
#include "predictor/internal.h"

namespace octet {
namespace predictor {
namespace {

template <typename F>
double best_seconds(int repeats, F&& run) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  return std::max(best, 1e-9);
}

}  // namespace

CodecCost measure_codec(DataType type, uint32_t block_size, size_t elements, int repeats) {
  if (elements == 0) fail("measure_codec", "elements must be > 0");
  if (repeats < 1) fail("measure_codec", "repeats must be >= 1");
  CodecOptions options;
  options.type = type;
  options.block_size = block_size;
  validate_options(options);
  std::vector<float> x(elements), y(elements);
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  std::vector<uint8_t> payload(max_encoded_size(elements, options));
  size_t size = 0;
  const double enc = best_seconds(
      repeats, [&] { size = encode(x.data(), x.size(), options, payload.data(), payload.size()); });
  const double dec =
      best_seconds(repeats, [&] { decode(payload.data(), size, y.data(), y.size()); });
  // The fixed cost of a call: a one-block round trip, less its share of the streaming time.
  const size_t small = std::min<size_t>(elements, 256);
  const double tiny = best_seconds(repeats * 20, [&] {
    size = encode(x.data(), small, options, payload.data(), payload.size());
    decode(payload.data(), size, y.data(), small, DecodeMode::kOverwrite, 1);
  });
  CodecCost c;
  c.type = type;
  c.block_size = block_size;
  c.encode_Bps = 4.0 * elements / enc;
  c.decode_Bps = 4.0 * elements / dec;
  c.call_overhead_s =
      std::max(0.0, (tiny - 4.0 * small / c.encode_Bps - 4.0 * small / c.decode_Bps) / 2);
  return c;
}

Link fit_link(const std::vector<Link::Point>& points) {
  if (points.size() < 2) fail("fit_link", "need at least two message sizes");
  Link link;
  link.table = points;
  std::sort(link.table.begin(), link.table.end(),
            [](const Link::Point& a, const Link::Point& b) { return a.bytes < b.bytes; });
  for (size_t i = 0; i < link.table.size(); ++i) {
    if (!(link.table[i].seconds > 0)) fail("fit_link", "times must be > 0");
    if (i > 0 && !(link.table[i].bytes > link.table[i - 1].bytes))
      fail("fit_link", "sizes must differ");
  }
  link.latency_s = link.table.front().seconds;
  // Least-squares slope over the larger half: bandwidth where latency no longer dominates.
  const size_t from = link.table.size() / 2;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = from; i < link.table.size(); ++i) {
    const double bx = link.table[i].bytes, ty = link.table[i].seconds;
    n += 1, sx += bx, sy += ty, sxx += bx * bx, sxy += bx * ty;
  }
  const double denom = n * sxx - sx * sx;
  const double slope = denom > 0 ? (n * sxy - sx * sy) / denom : 0;
  const auto& last = link.table.back();
  link.bandwidth_Bps = slope > 0 ? 1.0 / slope : last.bytes / last.seconds;
  return link;
}

}  // namespace predictor
}  // namespace octet
