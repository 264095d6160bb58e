// The engine of `octet bench` (src/cli/bench_cmd.cc is its command line): an nccl-tests/OSU-style
// sweep over message sizes, run under mpirun, that times Octet's compressed collective and the
// plain fp32 MPI call in the same run and checks both against Octet's documented error bound
// (verify/verify.h). The baseline calls PMPI_* so that a preloaded PMPI shim cannot compress it.
// Output: a table on rank 0's stdout and optionally JSON (docs/performance.md shows both).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "octet/collectives.h"
#include "octet/error.h"

namespace octet {
namespace bench {

enum class Operation { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kSendRecv };

// The operations' names in enum order: allreduce reduce_scatter allgather broadcast sendrecv.
const std::vector<std::string>& operation_names();
const std::string& operation_name(Operation op);
// Throws kInvalidArgument for a name not in operation_names().
Operation parse_operation(std::string_view name);

struct Config {
  Operation op = Operation::kAllreduce;
  uint64_t first_bytes = 8;                  // fp32 bytes of the first row
  uint64_t last_bytes = uint64_t{64} << 20;  // no row above this
  double factor = 2;                         // size multiplier between rows (> 1)
  int iters = 20, warmup = 5;                // timed (>= 1) and untimed (>= 0) calls per row
  // Each side's timed calls of a row take at least this long: rows whose `iters` calls would be
  // shorter (the warm-up's calls tell) time more calls, as OSU times more iterations of small
  // messages. 0: exactly `iters`.
  double min_seconds = 0.02;
  int rounds = 1;  // blocks the timed calls are cut into, Octet's and MPI's taking turns
  // Microseconds of busy waiting before every timed call, outside its time: the compute that
  // separates a training step's transfers (a link idle for that long; 0: calls back to back).
  int64_t gap_us = 0;
  CollectiveOptions options;  // type, block, rounding, average, min_bytes, chunks
  bool check = true;          // error columns and #wrong
  bool baseline = true;       // time (and check) the fp32 PMPI call too
  std::string json;  // empty: no JSON; "-": JSON on stdout instead of the table; else a file
  // Runs on the benchmark's Comm before the sweep, on every rank (octet bench --calibration seeds
  // `auto`'s cost curves there); an octet::Error it throws on every rank ends the run as a
  // SweepError.
  std::function<void(Comm&)> prepare;
};

// An error every rank meets alike (a bad argument, a sweep without rows, buffers that would not
// fit in memory), thrown on every rank before anything is measured: a caller may report it from
// one rank only.
class SweepError : public Error {
 public:
  using Error::Error;
};

// Runs the sweep on MPI_COMM_WORLD; MPI must be initialised (MPI_THREAD_FUNNELED suffices).
void run(const Config& config);

}  // namespace bench
}  // namespace octet
