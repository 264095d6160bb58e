#include "collective_bench.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "octet/transport_mpi.h"
#include "operations.h"
#include "report.h"

namespace octet {
namespace bench {
namespace {

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(uint64_t{1} << 30));
  return buf;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The rows' sizes (fp32 bytes, before the operation rounds them to its count): first_bytes,
// times factor, up to last_bytes. Throws SweepError for arguments that give no sweep.
std::vector<size_t> row_sizes(const Config& c, const BenchOp& op, int ranks) {
  auto fail = [](const std::string& what) { throw SweepError(ErrorCode::kInvalidArgument, what); };
  if (c.first_bytes == 0) fail("-b must be at least 1 byte");
  if (c.first_bytes > c.last_bytes)
    fail("-b (" + std::to_string(c.first_bytes) + " bytes) is larger than -e (" +
         std::to_string(c.last_bytes) + " bytes)");
  if (!(c.factor > 1 && std::isfinite(c.factor)))
    fail("-f must be a finite number > 1, not " + number(c.factor));
  if (c.iters < 1) fail("-n must be at least 1");
  if (c.rounds < 1) fail("--rounds must be at least 1");
  if (c.gap_us < 0 || c.gap_us > 10000000) fail("--gap-us must be in 0..10000000");
  if (c.warmup < 0) fail("-w must be at least 0");
  if (!(c.min_seconds >= 0 && c.min_seconds <= 3600))
    fail("--min-time must be in 0..3600 seconds, not " + number(c.min_seconds));
  std::vector<size_t> sizes;
  for (double s = double(c.first_bytes); s <= double(c.last_bytes) * (1 + 1e-9); s *= c.factor) {
    const size_t bytes = size_t(s) / 4 * 4;  // a small factor repeats a size: one row each
    if (op.count(bytes) > 0 && (sizes.empty() || sizes.back() != bytes)) sizes.push_back(bytes);
  }
  if (sizes.empty())
    fail("-b " + std::to_string(c.first_bytes) + " to -e " + std::to_string(c.last_bytes) +
         " gives no row: " + operation_name(c.op) + " on " + std::to_string(ranks) +
         " ranks needs at least " + std::to_string(op.row_bytes(1)) + " bytes");
  return sizes;
}

// The fp32 baseline passes counts to MPI as int.
void check_int_count(const Config& c, const BenchOp& op, size_t largest_bytes) {
  if (c.baseline && op.count(largest_bytes) > size_t(INT_MAX))
    throw SweepError(ErrorCode::kInvalidArgument,
                     "-e " + std::to_string(c.last_bytes) + ": more than " +
                         std::to_string(INT_MAX) +
                         " elements per call, beyond MPI's int count (--baseline 0 has no limit)");
}

// Bytes one rank holds for a row of `count` (an estimate on the safe side): input and output; as
// much as the input again for the compression ratio's payload and again for Octet's and MPI's
// transient buffers; with --check the reference (exact result and bound in double) and one
// contribution with its window absmax.
double row_memory(const Config& c, const BenchOp& op, size_t count) {
  const double in = double(op.input_count(count)) * 4, out = double(op.output_count(count)) * 4;
  double bytes = 3 * in + out;
  if (c.check) bytes += 4 * out + 3 * double(count) * 4;
  return bytes;
}

// Refuses, on every rank alike, a sweep whose largest row would not fit: each rank may use half
// of its node's physical memory divided by the ranks on that node.
void check_memory(const Config& c, const BenchOp& op, size_t largest_bytes) {
  MPI_Comm node;
  PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 1;
  PMPI_Comm_size(node, &local);
  PMPI_Comm_free(&node);
  const double physical = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  double allowed = physical / 2 / local;
  PMPI_Allreduce(MPI_IN_PLACE, &allowed, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  const double needed = row_memory(c, op, op.count(largest_bytes));
  if (needed > allowed)
    throw SweepError(ErrorCode::kInvalidArgument,
                     "-e " + std::to_string(c.last_bytes) + ": the " +
                         std::to_string(largest_bytes) + "-byte row needs about " + gib(needed) +
                         " per rank (buffers, reference), more than the " + gib(allowed) +
                         " a rank may use (half of the node's memory over its " +
                         std::to_string(local) + " ranks); lower -e");
}

// Times and checks one operation, row by row.
class Engine {
 public:
  Engine(const Config& c, BenchOp& op, Comm& comm)
      : c_(c), op_(op), comm_(comm), rank_(comm.rank()), ranks_(comm.size()) {}

  Row measure(size_t bytes) {
    Row row;
    const size_t count = op_.count(bytes);
    row.count = count;
    row.bytes = op_.row_bytes(count);
    in_ = inputs_.slice(rank_, 0, op_.input_count(count));
    out_.assign(op_.output_count(count), 0.0f);
    const Sides seconds = time_sides(count, row.calls);
    row.octet = over_ranks(seconds.octet);
    row.policy = choice(count);
    if (c_.op == Operation::kAllreduce && c_.options.policy == Policy::kAuto) {
      row.flat_seconds = forced(count, CollectiveOptions::AllreduceAlgorithm::kFlat);
      row.hierarchical_seconds =
          forced(count, CollectiveOptions::AllreduceAlgorithm::kHierarchical);
    }
    verify::Reference want;
    if (c_.check) {
      want = op_.reference(verify::source(inputs_), count, verify::quantization(c_.options, count));
      row.octet_check = check(true, count, want);
    }
    if (c_.baseline) {
      row.baseline = over_ranks(seconds.baseline);
      if (c_.check) row.baseline_check = check(false, count, want);
    }
    row.ratio = row.policy.compress ? compression_ratio(count) : 1.0;
    return row;
  }

 private:
  void call(bool octet, size_t count) {
    if (octet)
      op_.run_octet(in_.data(), out_.data(), count);
    else
      op_.run_baseline(in_.data(), out_.data(), count);
  }

  struct Sides {
    double octet = 0, baseline = 0;  // this rank's seconds per call
  };

  // This rank's time per call of each side: the timed calls in `rounds` blocks, Octet's and
  // MPI's blocks taking turns (ABBA), each side's time the median of its blocks' means, so that
  // a burst of load on a shared machine lands in one block of one side instead of skewing a
  // whole column. One round: all of Octet's calls, then all of MPI's. `calls`: how many each
  // side timed (timed_calls).
  Sides time_sides(size_t count, int& calls) {
    const bool sides[2] = {true, c_.baseline};
    std::vector<double> warm;  // seconds of each warm-up call, both sides
    for (int s = 0; s < 2; ++s) {
      if (!sides[s]) continue;
      op_.prepare(in_, out_);
      for (int w = 0; w < c_.warmup; ++w) {
        const double t0 = PMPI_Wtime();
        call(s == 0, count);
        warm.push_back(PMPI_Wtime() - t0);
      }
    }
    calls = timed_calls(warm);
    const int rounds = std::min(c_.rounds, calls);
    std::vector<double> blocks[2];
    for (int r = 0; r < rounds; ++r) {
      const int n = calls / rounds + (r < calls % rounds ? 1 : 0);
      for (int turn = 0; turn < 2; ++turn) {
        const int s = r % 2 ? 1 - turn : turn;
        if (sides[s]) blocks[s].push_back(time_block(s == 0, count, n));
      }
    }
    return {median(blocks[0]), sides[1] ? median(blocks[1]) : 0.0};
  }

  // -n, or more where -n calls would take less than --min-time: a block of a few calls of a few
  // microseconds is mostly the barrier before it and the scheduler's noise. The time of a call is
  // the median warm-up call's (the first may set up the policy), the largest over ranks, so that
  // every rank makes the same calls.
  int timed_calls(const std::vector<double>& warm) const {
    double t = warm.empty() ? 0.0 : median(warm);
    PMPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (!(t > 0) || c_.min_seconds <= 0) return c_.iters;
    constexpr double kMaxCalls = 1e6;
    return static_cast<int>(
        std::min(std::max(double(c_.iters), std::ceil(c_.min_seconds / t)), kMaxCalls));
  }

  double time_block(bool octet, size_t count, int calls) {
    op_.prepare(in_, out_);
    PMPI_Barrier(MPI_COMM_WORLD);
    if (c_.gap_us > 0) return time_spaced_calls(octet, count, calls);
    const double t0 = PMPI_Wtime();
    for (int it = 0; it < calls; ++it) call(octet, count);
    return (PMPI_Wtime() - t0) / calls;
  }

  // --gap-us: each call timed alone after a busy wait, as a training step computes between its
  // transfers (busy: a sleeping rank would also measure the scheduler's wake-up).
  double time_spaced_calls(bool octet, size_t count, int calls) {
    const double gap = double(c_.gap_us) * 1e-6;
    double total = 0;
    for (int it = 0; it < calls; ++it) {
      const double idle = PMPI_Wtime();
      while (PMPI_Wtime() - idle < gap) {
      }
      const double t0 = PMPI_Wtime();
      call(octet, count);
      total += PMPI_Wtime() - t0;
    }
    return total / calls;
  }

  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  }

  // avg/min/max over ranks of each rank's time per call.
  Timing over_ranks(double t) {
    Timing r;
    double sum = 0;
    PMPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(&t, &r.min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&t, &r.max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    r.avg = sum / ranks_;
    return r;
  }

  // One call from a prepared output, compared with `want` and combined over ranks.
  Checked check(bool octet, size_t count, const verify::Reference& want) {
    op_.prepare(in_, out_);
    call(octet, count);
    const verify::Errors e = verify::compare(out_.data(), want);
    Checked all;
    verify::Errors& a = all.errors;
    PMPI_Allreduce(&e.max_abs, &a.max_abs, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(&e.max_rel, &a.max_rel, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(&e.sum_sq, &a.sum_sq, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(&e.wrong, &a.wrong, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(&e.count, &a.count, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (op_.identical_on_every_rank()) {
      const uint64_t h = verify::fingerprint(out_.data(), out_.size());
      uint64_t lo = 0, hi = 0;
      PMPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
      PMPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
      all.identical = lo == hi;
    }
    return all;
  }

  // What the policy chose for the row, after its calls (so with the corrections they brought).
  PolicyEstimate choice(size_t count) {
    static const Collective kCollective[] = {Collective::kAllreduce, Collective::kReduceScatter,
                                             Collective::kAllgather, Collective::kBroadcast};
    if (c_.op == Operation::kSendRecv) {  // point-to-point has no policy: min_bytes decides
      PolicyEstimate e;
      e.compress = count * sizeof(float) >= c_.options.min_bytes;
      return e;
    }
    return estimate_policy(comm_, kCollective[static_cast<int>(c_.op)], count, c_.options);
  }

  // The compressed allreduce's predicted seconds with `algorithm` forced.
  double forced(size_t count, CollectiveOptions::AllreduceAlgorithm algorithm) {
    CollectiveOptions o = c_.options;
    o.allreduce_algorithm = algorithm;
    return estimate_policy(comm_, Collective::kAllreduce, count, o).compressed_seconds;
  }

  // fp32 bytes over payload bytes of this rank's input.
  double compression_ratio(size_t count) const {
    CodecOptions codec = c_.options.codec;
    codec.threads = 1;
    std::vector<uint8_t> payload(max_encoded_size(in_.size(), codec));
    return double(in_.size() * sizeof(float)) /
           double(encode(in_.data(), in_.size(), codec, payload.data(), payload.size()));
  }

  const Config& c_;
  BenchOp& op_;
  Comm& comm_;
  const int rank_, ranks_;
  const verify::Inputs inputs_{/*seed=*/0, /*spread=*/1};  // uniform in [-1, 1)
  std::vector<float> in_, out_;
};

}  // namespace

const std::vector<std::string>& operation_names() {
  static const std::vector<std::string> names = {"allreduce", "reduce_scatter", "allgather",
                                                 "broadcast", "sendrecv"};
  return names;
}

const std::string& operation_name(Operation op) {
  return operation_names().at(static_cast<size_t>(op));
}

Operation parse_operation(std::string_view name) {
  const auto& names = operation_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end())
    throw Error(ErrorCode::kInvalidArgument, "unknown operation '" + std::string(name) + "'");
  return static_cast<Operation>(it - names.begin());
}

void run(const Config& config) {
  Comm comm(make_mpi_transport(MPI_COMM_WORLD));
  const int rank = comm.rank(), ranks = comm.size();
  uint32_t block = 0;
  try {
    block = validate_options(config.options.codec);
  } catch (const Error& e) {
    throw SweepError(e.code(), e.what());
  }
  const std::unique_ptr<BenchOp> op = make_bench_op(config.op, comm, config.options);
  const std::vector<size_t> sizes = row_sizes(config, *op, ranks);
  check_memory(config, *op, sizes.back());
  check_int_count(config, *op, sizes.back());
  // A JSON file that rank 0 cannot write fails now, on every rank, rather than after the sweep.
  int writable =
      rank != 0 || config.json.empty() || config.json == "-" || std::ofstream(config.json).good();
  PMPI_Bcast(&writable, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!writable) throw SweepError(ErrorCode::kInvalidArgument, "cannot write " + config.json);
  if (config.prepare) try {
      config.prepare(comm);
    } catch (const Error& e) {
      throw SweepError(e.code(), e.what());
    }
  Engine engine(config, *op, comm);
  Report report(config, rank, ranks, block, op->busbw_factor());
  for (size_t bytes : sizes) report.add(engine.measure(bytes));
  report.print_break_even();
  report.finish();
}

}  // namespace bench
}  // namespace octet
