// octet bench allreduce|reduce_scatter|allgather|broadcast|sendrecv: the command line of the
// collective benchmark, whose engine is bench/collectives/ (run under mpirun).
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "bench/collectives/collective_bench.h"
#include "cli/commands.h"
#include "cli/mpi_session.h"
#include "cli/support.h"
#include "octet/units.h"
#include "predictor/predictor.h"

namespace octet {
namespace cli {
namespace {

struct BenchArgs {
  std::string op, first = "8", last = "64M", min_bytes = "0", chunk_bytes = "auto";
  std::string type = "dynamic", policy = "auto";
  double factor = 2;
  int iters = 20, warmup = 5, window = 4, rounds = 1;
  int64_t gap_us = 0;
  double min_seconds = bench::Config{}.min_seconds;
  uint32_t block = 0;
  bool stochastic = false, average = false, check = true, baseline = true;
  std::string json;
  std::string algorithm = "auto";
  std::string calibration;
};

// The hosts of comm's ranks, as Transport::host_of names them.
int hosts_of(const Comm& comm) {
  std::set<int> hosts;
  for (int r = 0; r < comm.size(); ++r) hosts.insert(comm.transport().host_of(r));
  return static_cast<int>(hosts.size());
}

// Seeds `auto`'s curves for op from a calibration file (read now, so that a bad file fails
// before MPI work), as the predictor costs op on the benchmark's ranks and hosts; the codec's
// throughput is the calibration's, its type and block the benchmark's.
std::function<void(Comm&)> seed_from(const std::string& path, bench::Operation op,
                                     const CodecOptions& setting) {
  if (op == bench::Operation::kSendRecv)
    throw Error(ErrorCode::kInvalidArgument, "--calibration: sendrecv has no policy");
  const predictor::ScenarioParts parts = predictor::load_calibration(path);
  predictor::CodecCost codec = parts.scenario.codec;
  codec.type = setting.type;
  codec.block_size = setting.block_size;
  const auto collective = static_cast<Collective>(op);  // the same order up to broadcast
  return [cluster = parts.scenario.cluster, codec, setting, collective](Comm& comm) {
    set_policy_curves(
        comm, collective, setting,
        predictor::policy_curves(cluster, codec, collective, comm.size(), hosts_of(comm)));
  };
}

bench::Config to_config(const BenchArgs& a) {
  bench::Config c;
  c.op = bench::parse_operation(a.op);
  c.first_bytes = parse_size(a.first);
  c.last_bytes = parse_size(a.last);
  c.factor = a.factor;
  c.iters = a.iters;
  c.warmup = a.warmup;
  c.min_seconds = a.min_seconds;
  c.rounds = a.rounds;
  c.gap_us = a.gap_us;
  c.options.codec.type = parse_data_type(a.type);
  c.options.codec.block_size = a.block;
  c.options.codec.stochastic = a.stochastic;
  c.options.codec.seed = 1;
  c.options.average = a.average;
  c.options.policy = parse_policy(a.policy);
  using Algorithm = CollectiveOptions::AllreduceAlgorithm;
  c.options.allreduce_algorithm = a.algorithm == "flat"           ? Algorithm::kFlat
                                  : a.algorithm == "hierarchical" ? Algorithm::kHierarchical
                                                                  : Algorithm::kAuto;
  c.options.min_bytes = parse_size(a.min_bytes);
  c.options.chunk_bytes = a.chunk_bytes == "auto" ? 0 : parse_size(a.chunk_bytes);
  c.options.window = a.window;
  c.check = a.check;
  c.baseline = a.baseline;
  c.json = a.json;
  if (!a.calibration.empty()) c.prepare = seed_from(a.calibration, c.op, c.options.codec);
  return c;
}

void run_bench(const BenchArgs& a) {
  MpiSession mpi;
  bench::Config config;
  try {
    config = to_config(a);
  } catch (const Error&) {  // the same arguments on every rank
    mpi.rethrow_agreed();
  }
  try {
    bench::run(config);
  } catch (const bench::SweepError&) {
    mpi.rethrow_agreed();
  }
}

}  // namespace

void add_bench_commands(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* c = app.add_subcommand(
      "bench",
      "Compressed collective vs the fp32 MPI call (run under mpirun). Pin OpenMPI's algorithm "
      "for a fair baseline, e.g. --mca coll_tuned_use_dynamic_rules 1 --mca "
      "coll_tuned_allreduce_algorithm 4 (ring)");
  c->add_option("op", args->op, "allreduce | reduce_scatter | allgather | broadcast | sendrecv")
      ->required()
      ->check(CLI::IsMember(bench::operation_names()));
  c->add_option("-b,--minbytes", args->first, "smallest size (fp32 bytes; 1K = 1024, M, G)");
  c->add_option("-e,--maxbytes", args->last, "largest size");
  c->add_option("-f,--stepfactor", args->factor, "size multiplier between rows");
  c->add_option("-n,--iters", args->iters, "timed iterations per size")->check(at_least(1));
  c->add_option("-w,--warmup", args->warmup, "untimed iterations first")->check(at_least(0));
  c->add_option("--min-time", args->min_seconds,
                "seconds each side's timed iterations of a size take at least: faster sizes "
                "(as the warm-up times them) run more than -n (0: exactly -n)")
      ->check(seconds_between(0, 3600));
  c->add_option("--rounds", args->rounds,
                "cut the timed iterations into this many blocks, Octet's and MPI's alternating; "
                "each side's time is the median of its blocks")
      ->check(at_least(1));
  c->add_option("--gap-us", args->gap_us,
                "busy-wait this many microseconds before every timed call, outside its time (the "
                "compute between a training step's transfers; 0: back to back)")
      ->check(at_least<int64_t>(0));
  c->add_option("--type", args->type, "codec data type");
  c->add_option("--block", args->block, "block size (0: the type's default)")
      ->check(at_least<uint32_t>(0));
  c->add_flag("--stochastic", args->stochastic, "stochastic rounding");
  c->add_flag("--average", args->average, "average instead of sum (allreduce, reduce_scatter)");
  c->add_option("--policy", args->policy,
                "auto (compress where the cost measured on this job predicts a gain), always, "
                "never");
  c->add_option("--min-bytes", args->min_bytes, "calls below this fp32 size never compress");
  c->add_option("--algorithm", args->algorithm, "allreduce: auto, flat, hierarchical")
      ->check(CLI::IsMember({"auto", "flat", "hierarchical"}));
  c->add_option("--calibration", args->calibration,
                "seed auto's cost curves from this `octet calibrate` file instead of measuring");
  c->add_option("--chunk-bytes", args->chunk_bytes,
                "pipeline chunk (fp32 bytes), or auto: 1M, compressed chunks between hosts sized "
                "to fit one eager message");
  c->add_option("--window", args->window, "chunks in flight")->check(at_least(1));
  c->add_option("-c,--check", args->check, "error columns and #wrong (0/1)");
  c->add_option("--baseline", args->baseline, "measure the fp32 MPI call too (0/1)");
  c->add_option("--json", args->json, "write JSON to this file ('-': stdout, no table)");
  c->callback([args] { run_bench(*args); });
}

}  // namespace cli
}  // namespace octet
