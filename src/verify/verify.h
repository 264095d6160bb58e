// Checking a collective's result against its documented bound: one module for the collectives'
// tests (tests/collectives/) and `octet bench --check` (bench/collectives/).
//
//  - deterministic per-rank inputs, so that any rank can recompute any rank's data;
//  - the exact result of one rank's output and, per element, the bound its error may not exceed,
//    for every operation (docs/algorithms.md): allreduce, reduce_scatter (with or without
//    average), allgather, broadcast, send/recv;
//  - error statistics against that reference (max abs, max rel, rms, #wrong);
//  - a fingerprint of a buffer for the "identical on every rank" check.
//
// Pure computation on host buffers, no MPI and no transport: callers combine the statistics and
// fingerprints of their ranks themselves. Uses liboctet's public API only and links no library
// (its users link liboctet or octet_internal); what needs a liboctet symbol is inline below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "octet/codec.h"
#include "octet/collectives.h"

namespace octet {
namespace verify {

// ---------------------------------------------------------------- inputs

// Rank `rank`'s input: element i is uniform in [-1, 1) (splitmix64 of seed, rank and i) times a
// scale in [1, spread] that changes every 1000 elements, so that blocks see different
// magnitudes. spread 1 and seed 0 give plain [-1, 1) data (what `octet bench` sends).
struct Inputs {
  uint64_t seed = 1;
  uint64_t spread = 100;

  float value(int rank, size_t i) const;
  // Elements [begin, begin + count) of rank `rank`'s input.
  std::vector<float> slice(int rank, size_t begin, size_t count) const;
};

// The tests' inputs: Inputs{seed}.slice(rank, 0, count).
std::vector<float> input(int rank, size_t count, uint64_t seed = 1);

// Where a reference reads rank r's input elements [begin, begin + count).
using Source = std::function<std::vector<float>(int rank, size_t begin, size_t count)>;
Source source(const Inputs& inputs);  // generated on demand (a copy of `inputs` is kept)
// Inputs held by the caller, one vector per rank (kept by reference: they must outlive the
// Source).
Source source(const std::vector<std::vector<float>>& inputs);

// ---------------------------------------------------------------- bounds

// max |x[k]| over |k - i| < block: a bound of the absmax of any block of that size, wherever it
// starts, that holds element i.
std::vector<double> window_max(const std::vector<float>& x, size_t block);

// One quantization: |x - decode(encode(x))| <= fraction * absmax(block of x).
struct Quantization {
  double fraction = 0;  // 0: the values travel exactly
  uint32_t block = 2048;
};

// What `options` do to a call of `count` elements per rank (the operation's count argument):
// bound_fraction of the type, twice that with stochastic rounding, 0 below min_bytes.
inline Quantization quantization(const CollectiveOptions& options, size_t count) {
  const CodecOptions& c = options.codec;
  Quantization q;
  q.block = validate_options(c);
  if (count * sizeof(float) >= options.min_bytes)
    q.fraction = bound_fraction(c.type, c.mantissa_exponent_offset) * (c.stochastic ? 2 : 1);
  return q;
}

// The exact result of one rank's output (in double) and, per element, the largest error allowed.
struct Reference {
  std::vector<double> exact, bound;
};

// Sums over `ranks` contributions (M_j: the window absmax of contribution j; bf: q.fraction):
// each contribution quantized once and, for allreduce, the sum once more, whose block absmax is
// at most (1 + bf) sum_j M_j; so |err| <= bf sum_j M_j + bf (1 + bf) sum_j M_j, plus fp32 rounding
// of the sum, 1e-6 (ranks + 2) sum_j M_j. One rank: nothing is quantized. With `average` the
// result and its bound are divided by the rank count.
//
// allreduce: out[i] = sum_r in_r[i], in_r = in[0, count) of rank r.
Reference allreduce_reference(const Source& in, int ranks, size_t count, Quantization q,
                              bool average = false);
// reduce_scatter: rank `rank`'s out[i] = sum_r in_r[rank * count + i]; the other ranks'
// contributions are quantized once, its own not at all, the sum not again.
Reference reduce_scatter_reference(const Source& in, int ranks, int rank, size_t count,
                                   Quantization q, bool average = false);

// Copies, quantized once: |err| <= bf M (bound_fraction covers the fp32 rounding of decoding).
// allgather: out[r * count + i] = in_r[i]; exact with one rank.
Reference allgather_reference(const Source& in, int ranks, size_t count, Quantization q);
// broadcast: out[i] = in_root[i] on every rank (the root's too); exact with one rank.
Reference broadcast_reference(const Source& in, int ranks, int root, size_t count, Quantization q);
// send/recv: the receiver's out[i] = the sender's in[i].
Reference send_recv_reference(const Source& in, int sender, size_t count, Quantization q);

// ---------------------------------------------------------------- results

// One rank's output against its reference.
struct Errors {
  double max_abs = 0;  // max |got - exact|
  double max_rel = 0;  // max_abs / max |exact| (0 when exact is all zero)
  double sum_sq = 0;   // sum of (got - exact)^2, for the rms
  uint64_t wrong = 0;  // elements with |got - exact| > bound; NaN counts as wrong
  uint64_t count = 0;  // elements compared

  double rms() const;
};
// got[0, want.exact.size()) against want.
Errors compare(const float* got, const Reference& want);

// FNV-1a of the buffer's bytes: equal fingerprints on every rank = identical results.
uint64_t fingerprint(const float* data, size_t count);

}  // namespace verify
}  // namespace octet
