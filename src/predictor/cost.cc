// Cost terms: alpha-beta links, the codec's size and speed, ring collectives.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "octet/collectives.h"
#include "octet/detail/quoted.h"
#include "octet/error.h"
#include "octet/transport.h"
#include "predictor/internal.h"
#include "predictor/predictor.h"

namespace octet {
namespace predictor {

double transfer_time(const Link& link, double bytes) {
  if (bytes <= 0) return 0.0;
  const auto& t = link.table;
  if (t.empty()) return link.latency_s + bytes / link.bandwidth_Bps;
  if (t.size() == 1) return t[0].seconds * std::max(1.0, bytes / t[0].bytes);
  if (bytes <= t.front().bytes) return t.front().seconds;
  // The segment that holds `bytes`, or the last one beyond the table.
  size_t i = 1;
  while (i + 1 < t.size() && t[i].bytes < bytes) ++i;
  const double slope = (t[i].seconds - t[i - 1].seconds) / (t[i].bytes - t[i - 1].bytes);
  return std::max(t[i - 1].seconds, t[i - 1].seconds + slope * (bytes - t[i - 1].bytes));
}

Link with_bandwidth(const Link& link, double bandwidth_Bps) {
  Link out;
  out.latency_s = link.table.empty() ? link.latency_s : link.table.front().seconds;
  out.bandwidth_Bps = bandwidth_Bps;
  return out;
}

double exposed_time(double comm_s, double hide_under_s) {
  return std::max(0.0, comm_s - std::max(0.0, hide_under_s));
}

// Finite data: what encode() writes when no block holds NaN/Inf.
double compressed_bytes(double fp32_bytes, const CodecCost& codec) {
  if (fp32_bytes <= 0) return 0.0;
  CodecOptions options;
  options.type = codec.type;
  options.block_size = codec.block_size;
  return static_cast<double>(
      encoded_size(static_cast<size_t>(std::ceil(fp32_bytes / 4.0)), options));
}

double encode_time(double fp32_bytes, const CodecCost& codec) {
  return fp32_bytes <= 0 ? 0.0 : fp32_bytes / codec.encode_Bps;
}

double decode_time(double fp32_bytes, const CodecCost& codec) {
  return fp32_bytes <= 0 ? 0.0 : fp32_bytes / codec.decode_Bps;
}

Collective parse_collective(const std::string& name) {
  if (name == "allreduce" || name == "iallreduce") return Collective::kAllreduce;
  if (name == "reduce_scatter" || name == "reduce_scatter_block") return Collective::kReduceScatter;
  if (name == "allgather" || name == "iallgather") return Collective::kAllgather;
  if (name == "bcast" || name == "ibcast") return Collective::kBcast;
  throw Error(ErrorCode::kInvalidArgument, "unknown collective " + detail::quoted(name) +
                                               " (expected allreduce, iallreduce, "
                                               "reduce_scatter_block, allgather or bcast)");
}

namespace {

// Steps on the critical path and the fp32 bytes each step moves, per algorithm.
struct Shape {
  double steps = 0;
  double step_bytes = 0;
  double encoded = 0;  // fp32 bytes encoded on the critical path
  double decoded = 0;
  double encode_calls = 0, decode_calls = 0;
};

Shape shape(Collective op, double n, int p) {
  const double g = p;
  switch (op) {
    case Collective::kAllreduce:  // reduce-scatter then allgather; chunks stay compressed
      return {2 * (g - 1), n / g, n, 2 * (g - 1) * n / g, g, 2 * (g - 1)};
    case Collective::kReduceScatter:
      return {g - 1, n / g, (g - 1) * n / g, (g - 1) * n / g, g - 1, g - 1};
    case Collective::kAllgather:
      return {g - 1, n / g, n / g, (g - 1) * n / g, 1, g - 1};
    case Collective::kBcast:
      return {std::ceil(std::log2(g)), n, n, n, 1, 1};
  }
  throw Error(ErrorCode::kInternal, "unhandled collective");
}

}  // namespace

double collective_time(Collective op, double fp32_bytes, int ranks, const Link& link,
                       const CodecCost* codec) {
  if (ranks < 1) throw Error(ErrorCode::kInvalidArgument, "collective_time: ranks must be >= 1");
  if (ranks == 1 || fp32_bytes <= 0) return 0.0;
  const Shape s = shape(op, fp32_bytes, ranks);
  if (codec == nullptr) return s.steps * transfer_time(link, s.step_bytes);
  const double step_bytes = compressed_bytes(s.step_bytes, *codec);
  const double link_s = s.steps * transfer_time(link, step_bytes);
  const double codec_s = collective_codec_time(op, fp32_bytes, ranks, *codec);
  // Octet encodes chunk k+1 while chunk k travels and decodes chunks as they arrive, so the codec
  // hides under the transfers (or they under it) but for one chunk's share: the first encode and
  // the last decode. The chunk is the automatic one between hosts, one eager message of
  // OpenMPI's ob1 (octet/collectives.h); a step of one chunk overlaps nothing.
  const double chunks = std::ceil(step_bytes / double(kMpiEagerBytes - kChunkHeaderRoom));
  if (chunks <= 1) return link_s + codec_s;
  return std::max(link_s, codec_s) + codec_s / chunks;
}

double collective_codec_time(Collective op, double fp32_bytes, int ranks, const CodecCost& codec) {
  if (ranks <= 1 || fp32_bytes <= 0) return 0.0;
  const Shape s = shape(op, fp32_bytes, ranks);
  return encode_time(s.encoded, codec) + decode_time(s.decoded, codec) +
         (s.encode_calls + s.decode_calls) * codec.call_overhead_s;
}

const Link& bottleneck(const Cluster& cluster, int gpus) {
  return gpus > cluster.gpus_per_node ? cluster.inter : cluster.intra;
}

double break_even_bandwidth(const std::function<double(double)>& gain) {
  double lo = 1e3, hi = 1e15;
  if (gain(hi) > 0) return std::numeric_limits<double>::infinity();
  if (gain(lo) <= 0) return 0.0;
  for (int i = 0; i < 100 && hi / lo > 1.0 + 1e-9; ++i) {
    const double mid = std::sqrt(lo * hi);
    (gain(mid) > 0 ? lo : hi) = mid;
  }
  return std::sqrt(lo * hi);
}

}  // namespace predictor
}  // namespace octet
