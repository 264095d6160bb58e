// Approximation error of what a run sends (paper 001's Table 2 rows, measured in training): mean
// absolute error, mean relative error over the non-zero originals (the definition of `octet codec
// error`, docs/codec.md), and the L1 relative error sum |sent - exact| / sum |exact|, accumulated
// per tensor name over a run. The mean relative error is dominated by originals near zero where
// what is sent need not be (stochastic rounding, error feedback's residual); the L1 one is not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace octet {
namespace train {

struct ErrorSum {
  double abs_sum = 0, rel_sum = 0;
  uint64_t count = 0, nonzero = 0;
  double original_sum = 0;  // sum |exact|; < 0: unknown (a file written before it was)
  void add(const float* original, const float* received, size_t n);
  void merge(const ErrorSum& other);
  double mean_abs() const { return count ? abs_sum / double(count) : 0; }
  double mean_rel() const { return nonzero ? rel_sum / double(nonzero) : 0; }
  // Unknown, too, where every exact value was zero but not every value sent (no finite ratio).
  bool l1_known() const { return original_sum > 0 || (original_sum == 0 && abs_sum == 0); }
  double l1_rel() const { return original_sum > 0 ? abs_sum / original_sum : 0; }
};

// Keyed by what was sent, e.g. "grad layer 1" or "act layer 2"; ordered for printing.
using ErrorTable = std::map<std::string, ErrorSum>;

// Sums every rank's table into rank 0's (a collective over MPI_COMM_WORLD; every rank must hold
// the same keys, which every mode guarantees: all ranks send every tensor).
ErrorTable sum_over_ranks(const ErrorTable& local);

}  // namespace train
}  // namespace octet
