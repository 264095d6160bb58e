#include "report.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "octet/codec.h"

extern char** environ;

namespace octet {
namespace bench {
namespace {

// The OpenMPI variables that pick the baseline's algorithm and path, without "OMPI_MCA_".
std::vector<std::string> mpi_algorithm_vars() {
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "OMPI_MCA_coll", 13) == 0 || std::strncmp(*e, "OMPI_MCA_pml", 12) == 0 ||
        std::strncmp(*e, "OMPI_MCA_btl", 12) == 0)
      vars.push_back(*e + 9);
  return vars;
}

nlohmann::json timing_json(const Timing& t) {
  return {{"avg", t.avg * 1e6}, {"min", t.min * 1e6}, {"max", t.max * 1e6}};
}

nlohmann::json check_json(const Checked& c) {
  return {{"max_abs", c.errors.max_abs},
          {"max_rel", c.errors.max_rel},
          {"rms", c.errors.rms()},
          {"wrong", c.errors.wrong},
          {"identical", c.identical}};
}

}  // namespace

Report::Report(const Config& config, int rank, int ranks, uint32_t block, double busbw_factor)
    : config_(config),
      rank_(rank),
      ranks_(ranks),
      block_(block),
      busbw_(busbw_factor),
      table_(rank == 0 && config.json != "-") {
  if (!table_) return;
  const CollectiveOptions& o = config.options;
  std::printf(
      "# octet bench %s: %d ranks, type %s, block %u%s%s, codec %s (rank 0's SIMD target), iters "
      "%d (more for rows faster than %g s), "
      "warmup %d, rounds %d, gap %lld us, chunk %s, window %d, policy %s, min_bytes %zu\n",
      operation_name(config.op).c_str(), ranks, data_type_name(o.codec.type), block,
      o.codec.stochastic ? ", stochastic" : "", o.average ? ", average" : "", simd_target().c_str(),
      config.iters, config.min_seconds, config.warmup, config.rounds,
      static_cast<long long>(config.gap_us),
      o.chunk_bytes ? (std::to_string(o.chunk_bytes) + " B").c_str() : "auto", o.window,
      policy_name(o.policy), o.min_bytes);
  std::printf("# baseline: fp32 PMPI call; MPI variables set:");
  const auto vars = mpi_algorithm_vars();
  if (vars.empty()) std::printf(" none (OpenMPI picks its algorithm)");
  for (const auto& v : vars) std::printf(" %s", v.c_str());
  std::printf(
      "\n# time in us (avg over ranks of each rank's mean, with --rounds > 1 the median of its "
      "blocks' means; min/max over ranks); bw in GB/s "
      "of the fp32 size; maxrel = max|err| / max|exact|; #wrong outside the bound; zip = the "
      "policy compressed the row (hie: with the hierarchical allreduce)\n");
  std::printf(
      "#%11s %11s %3s %5s | %10s %10s %10s %7s %7s %6s %9s %9s %9s %7s %3s | %10s %7s %7s "
      "%9s %6s | %7s\n",
      "size", "count", "zip", "ratio", "time", "min", "max", "algbw", "busbw", "", "maxabs",
      "maxrel", "rms", "#wrong", "id", "mpi time", "algbw", "busbw", "maxabs", "#wrong", "speedup");
}

void Report::add(const Row& r) {
  const double alg = r.octet.avg > 0 ? r.bytes / r.octet.avg / 1e9 : 0;
  const double speedup = r.octet.avg > 0 ? r.baseline.avg / r.octet.avg : 0;
  rows_.push_back(
      {{"bytes", r.bytes},
       {"count", r.count},
       {"calls", r.calls},
       {"ratio", r.ratio},
       {"compressed", r.policy.compress},
       {"hierarchical", r.policy.compress && r.policy.hierarchical},
       {"predicted_us",
        {{"plain", r.policy.plain_seconds * 1e6},
         {"compressed", r.policy.compressed_seconds * 1e6},
         {"flat", r.flat_seconds * 1e6},
         {"hierarchical", r.hierarchical_seconds * 1e6}}},
       {"time_us", timing_json(r.octet)},
       {"algbw_GBps", alg},
       {"busbw_GBps", alg * busbw_},
       {"error", check_json(r.octet_check)},
       {"baseline",
        {{"time_us", timing_json(r.baseline)}, {"error", check_json(r.baseline_check)}}},
       {"speedup", speedup}});
  if (!r.policy.compress)
    break_even_ = 0;
  else if (break_even_ == 0)
    break_even_ = r.bytes;
  if (!table_) return;
  const verify::Errors& e = r.octet_check.errors;
  std::printf("%12zu %11zu %3s %5.2f | %10.1f %10.1f %10.1f %7.3f %7.3f %6s", r.bytes, r.count,
              !r.policy.compress      ? "no"
              : r.policy.hierarchical ? "hie"
                                      : "yes",
              r.ratio, r.octet.avg * 1e6, r.octet.min * 1e6, r.octet.max * 1e6, alg, alg * busbw_,
              "");
  if (config_.check)
    std::printf(" %9.2e %9.2e %9.2e %7llu %3s", e.max_abs, e.max_rel, e.rms(),
                (unsigned long long)e.wrong, r.octet_check.identical ? "yes" : "NO");
  else
    std::printf(" %9s %9s %9s %7s %3s", "-", "-", "-", "-", "-");
  if (config_.baseline) {
    const double balg = r.baseline.avg > 0 ? r.bytes / r.baseline.avg / 1e9 : 0;
    std::printf(" | %10.1f %7.3f %7.3f", r.baseline.avg * 1e6, balg, balg * busbw_);
    if (config_.check)
      std::printf(" %9.2e %6llu", r.baseline_check.errors.max_abs,
                  (unsigned long long)r.baseline_check.errors.wrong);
    else
      std::printf(" %9s %6s", "-", "-");
    std::printf(" | %7.2f\n", speedup);
  } else {
    std::printf("\n");
  }
  std::fflush(stdout);
}

void Report::print_break_even() const {
  if (!table_) return;
  if (break_even_)
    std::printf("# %s: compression pays from %zu bytes on (every row from there compressed)\n",
                policy_name(config_.options.policy), break_even_);
  else
    std::printf("# %s: the last row was not compressed (no break-even in this sweep)\n",
                policy_name(config_.options.policy));
}

void Report::finish() const {
  if (rank_ != 0 || config_.json.empty()) return;
  const CollectiveOptions& o = config_.options;
  const nlohmann::json break_even =  // null where no row breaks even
      break_even_ ? nlohmann::json(break_even_) : nlohmann::json();
  const nlohmann::json doc = {{"op", operation_name(config_.op)},
                              {"ranks", ranks_},
                              {"type", data_type_name(o.codec.type)},
                              {"block", block_},
                              {"simd_target", simd_target()},
                              {"iters", config_.iters},
                              {"min_seconds", config_.min_seconds},
                              {"warmup", config_.warmup},
                              {"rounds", config_.rounds},
                              {"gap_us", config_.gap_us},
                              {"chunk_bytes", o.chunk_bytes},
                              {"window", o.window},
                              {"min_bytes", o.min_bytes},
                              {"policy", policy_name(o.policy)},
                              {"break_even_bytes", break_even},
                              {"stochastic", o.codec.stochastic},
                              {"average", o.average},
                              {"mpi_vars", mpi_algorithm_vars()},
                              {"rows", rows_}};
  if (config_.json == "-") {
    std::cout << doc.dump(2) << std::endl;
    return;
  }
  std::ofstream f(config_.json);
  f << doc.dump(2) << "\n";
  f.close();  // a full disk may show only here, at the last flush
  if (f) return;
  std::error_code ec;  // no partial file left behind
  if (std::filesystem::is_regular_file(config_.json, ec)) std::filesystem::remove(config_.json, ec);
  throw Error(ErrorCode::kInvalidArgument, "cannot write " + config_.json);
}

}  // namespace bench
}  // namespace octet
