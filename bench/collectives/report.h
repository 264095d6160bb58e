// What `octet bench` prints: the table on rank 0's stdout and the JSON document. Their formats
// are read by people and scripts (docs/performance.md, docs/emulated-cluster.md,
// bench/cluster/measure.sh): keep columns and keys stable.
#pragma once

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "collective_bench.h"
#include "verify/verify.h"

namespace octet {
namespace bench {

// Seconds per call: the average over ranks of each rank's mean, and the min/max over ranks.
struct Timing {
  double avg = 0, min = 0, max = 0;
};

// One side's check, combined over ranks.
struct Checked {
  verify::Errors errors;
  bool identical = true;  // every rank ended with the same bytes (where it must)
};

struct Row {
  size_t bytes = 0, count = 0;
  int calls = 0;          // timed calls of each side (Config::iters, min_seconds)
  double ratio = 1;       // fp32 bytes / payload bytes of this rank's input (1: not compressed)
  PolicyEstimate policy;  // what the policy chose (after the row's calls) and its predictions
  // allreduce under `auto`: the compressed call's predicted seconds with each algorithm forced
  // (where the hierarchical one is no candidate, its curve is the flat one); 0: not asked.
  double flat_seconds = 0, hierarchical_seconds = 0;
  Timing octet, baseline;
  Checked octet_check, baseline_check;
};

class Report {
 public:
  // Prints the table's header where this rank prints the table (rank 0, no --json -).
  Report(const Config& config, int rank, int ranks, uint32_t block, double busbw_factor);
  // Prints the row and keeps it for the JSON.
  void add(const Row& row);
  // Writes the JSON (rank 0, when asked for).
  void finish() const;
  // Prints (rank 0) the smallest size from which `auto` compresses, as the rows showed it.
  void print_break_even() const;

 private:
  const Config& config_;
  const int rank_, ranks_;
  const uint32_t block_;
  const double busbw_;
  const bool table_;
  nlohmann::json rows_ = nlohmann::json::array();
  size_t break_even_ = 0;  // the first row compressed after which all are; 0: none
};

}  // namespace bench
}  // namespace octet
