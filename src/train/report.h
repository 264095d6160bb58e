// What `octet train` prints and writes: one line per epoch, the summary table (one row per comm),
// and the JSON document other tools read (docs/training.md has its schema).
#pragma once

#include <string>
#include <vector>

#include "train/results.h"

namespace octet {
namespace train {

std::string epoch_line(const RunResult& run);

// Mean and half-width of a 95% Student-t interval (half-width 0 for fewer than two values).
struct Interval {
  double mean = 0, half_width = 0;
};
Interval mean_interval(const std::vector<double>& values);

// One row per (mode, comm), in the order first seen: best test error (mean over seeds), its
// difference to fp32 in percentage points (paired by seed, with a 95% interval when there are
// several seeds), bytes sent and saved (against what fp32 sends), step time.
std::string summary_table(const std::vector<RunResult>& runs);

// Table 2-style rows, one per (mode, comm, tensor sent): mean absolute error and mean relative
// error (over non-zero values) of what arrived against what was meant, over all seeds; "" when
// no run measured any (fp32 only).
std::string error_table(const std::vector<RunResult>& runs);

// Test error (percent) per epoch, averaged over seeds, one curve per (mode, comm) in the order
// first seen: what `--svg` draws.
struct Curve {
  std::string label;  // "<mode> <comm>"
  std::vector<double> epochs, test_error_percent;
};
std::vector<Curve> learning_curves(const std::vector<RunResult>& runs);

// {"command", "ranks", "runs": [{mode, comm, seed, epochs: [...], best_test_error, ...}]}.
std::string to_json(const std::vector<RunResult>& runs, const std::string& command);

// The runs of a document to_json wrote (`source` names it in errors), for combining several runs'
// files into one table. Every field is checked: a missing or mistyped one, or a number out of
// range, throws kInvalidArgument "<source>: <key path>: <why>". What the tables use comes back
// as written; the per-run approximation error sums are rebuilt from their means and counts.
std::vector<RunResult> from_json(const std::string& text, const std::string& source);

}  // namespace train
}  // namespace octet
