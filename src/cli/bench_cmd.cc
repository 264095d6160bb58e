// octet bench allreduce|reduce_scatter|allgather|sendrecv: an nccl-tests/OSU-style sweep, run
// under mpirun, comparing Octet's compressed collective with the plain fp32 MPI call measured in
// the same run. The baseline calls PMPI_* so that a preloaded PMPI shim cannot compress it.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "octet/collectives.h"
#include "octet/transport_mpi.h"

extern char** environ;

namespace octet {
namespace cli {
namespace {

struct BenchArgs {
  std::string op;
  std::string min_size = "8", max_size = "64M";
  double factor = 2;
  int iters = 20, warmup = 5;
  std::string type = "dynamic";
  uint32_t block = 0;
  bool stochastic = false, average = false, check = true, baseline = true;
  size_t min_bytes = 0, chunk_bytes = size_t{1} << 20;
  int window = 4;
  std::string json;
};

size_t parse_size(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  double m = 1;
  if (end && *end) {
    switch (std::toupper(static_cast<unsigned char>(*end))) {
      case 'K':
        m = 1024.0;
        break;
      case 'M':
        m = 1024.0 * 1024;
        break;
      case 'G':
        m = 1024.0 * 1024 * 1024;
        break;
      default:
        throw Error(ErrorCode::kInvalidArgument, "bad size '" + s + "' (use 8, 64K, 1M, 2G)");
    }
  }
  if (!(v > 0)) throw Error(ErrorCode::kInvalidArgument, "bad size '" + s + "'");
  return static_cast<size_t>(v * m);
}

// Element i of rank r's input: deterministic, so any rank can recompute any rank's data.
float value(int rank, size_t i) {
  uint64_t x = (uint64_t(rank) << 48) ^ i;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<float>(double(x >> 11) / double(uint64_t{1} << 53) * 2.0 - 1.0);
}
std::vector<float> slice(int rank, size_t begin, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value(rank, begin + i);
  return v;
}

// max |x| over |k - i| < block: bounds the absmax of any block that holds element i.
std::vector<double> window_max(const std::vector<float>& x, size_t block) {
  std::vector<double> out(x.size());
  std::deque<size_t> q;
  size_t next = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    for (; next < std::min(x.size(), i + block); ++next) {
      while (!q.empty() && std::fabs(x[q.back()]) <= std::fabs(x[next])) q.pop_back();
      q.push_back(next);
    }
    while (q.front() + block <= i) q.pop_front();
    out[i] = std::fabs(x[q.front()]);
  }
  return out;
}

struct Errors {
  double max_abs = 0, max_rel = 0, sum_sq = 0;
  uint64_t wrong = 0, n = 0;
  bool identical = true;
};

struct Row {
  size_t bytes = 0, count = 0;
  double t_avg = 0, t_min = 0, t_max = 0, b_avg = 0, b_min = 0, b_max = 0, ratio = 1;
  Errors octet, mpi;
};

class Bench {
 public:
  explicit Bench(const BenchArgs& a) : a_(a), comm_(make_mpi_transport(MPI_COMM_WORLD)) {
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    PMPI_Comm_size(MPI_COMM_WORLD, &size_);
    o_.codec.type = parse_data_type(a.type);
    o_.codec.block_size = a.block;
    o_.codec.stochastic = a.stochastic;
    o_.codec.seed = 1;
    o_.average = a.average;
    o_.min_bytes = a.min_bytes;
    o_.chunk_bytes = a.chunk_bytes;
    o_.window = a.window;
    block_ = validate_options(o_.codec);
    if (a.op == "allreduce")
      busbw_ = 2.0 * (size_ - 1) / size_;
    else if (a.op == "reduce_scatter" || a.op == "allgather")
      busbw_ = double(size_ - 1) / size_;
    else if (a.op == "sendrecv")
      busbw_ = 1.0;
    else
      throw Error(ErrorCode::kInvalidArgument, "unknown operation '" + a.op + "'");
  }

  Row measure(size_t bytes) {
    Row row;
    const size_t p = size_t(size_), elems = bytes / 4;
    count_ = (a_.op == "reduce_scatter" || a_.op == "allgather") ? elems / p : elems;
    row.count = count_;
    row.bytes = (a_.op == "reduce_scatter" || a_.op == "allgather") ? count_ * p * 4 : count_ * 4;
    in_ = slice(rank_, in_begin(), in_count());
    out_.assign(out_count(), 0.0f);
    time(true, row.t_avg, row.t_min, row.t_max);
    if (a_.check) row.octet = check(true);
    if (a_.baseline) {
      time(false, row.b_avg, row.b_min, row.b_max);
      if (a_.check) row.mpi = check(false);
    }
    row.ratio = compression_ratio();
    return row;
  }

  double busbw_factor() const { return busbw_; }
  uint32_t block() const { return block_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  size_t in_count() const { return a_.op == "reduce_scatter" ? count_ * size_ : count_; }
  size_t in_begin() const { return 0; }
  size_t out_count() const { return a_.op == "allgather" ? count_ * size_ : count_; }

  void run(bool octet_call) {
    float* o = out_.data();
    const float* i = in_.data();
    const int n = static_cast<int>(count_);
    const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
    if (a_.op == "allreduce") {
      if (octet_call)
        allreduce(comm_, i, o, count_, o_);
      else
        PMPI_Allreduce(i, o, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (!octet_call && a_.average)
        for (float& v : out_) v /= static_cast<float>(size_);
    } else if (a_.op == "reduce_scatter") {
      if (octet_call)
        reduce_scatter(comm_, i, o, count_, o_);
      else
        PMPI_Reduce_scatter_block(i, o, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else if (a_.op == "allgather") {
      if (octet_call)
        allgather(comm_, i, o, count_, o_);
      else
        PMPI_Allgather(i, n, MPI_FLOAT, o, n, MPI_FLOAT, MPI_COMM_WORLD);
    } else if (octet_call) {
      Request r = irecv(comm_, o, count_, prev, 0, o_);
      Request s = isend(comm_, i, count_, next, 0, o_);
      r.wait();
      s.wait();
    } else {
      PMPI_Sendrecv(i, n, MPI_FLOAT, next, 0, o, n, MPI_FLOAT, prev, 0, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE);
    }
  }

  // Per-rank average over the timed iterations, then avg/min/max over ranks (seconds).
  void time(bool octet_call, double& avg, double& mn, double& mx) {
    if (count_ > size_t(INT32_MAX)) throw Error(ErrorCode::kInvalidArgument, "size too large");
    for (int w = 0; w < a_.warmup; ++w) run(octet_call);
    PMPI_Barrier(MPI_COMM_WORLD);
    const double t0 = PMPI_Wtime();
    for (int it = 0; it < a_.iters; ++it) run(octet_call);
    const double t = (PMPI_Wtime() - t0) / std::max(1, a_.iters);
    double sum = 0;
    PMPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(&t, &mn, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    avg = sum / size_;
  }

  // The exact result of this rank's output and, per element, the documented bound.
  void reference(std::vector<double>& exact, std::vector<double>& bound) const {
    const size_t n = out_.size();
    exact.assign(n, 0.0);
    bound.assign(n, 0.0);
    const bool compressed = count_ * 4 >= a_.min_bytes;
    const double bf = compressed ? bound_fraction(o_.codec.type) * (a_.stochastic ? 2 : 1) : 0;
    auto add = [&](int r, size_t begin, size_t at, size_t len, double weight) {
      const std::vector<float> x = slice(r, begin, len);
      const std::vector<double> m = window_max(x, block_);
      for (size_t i = 0; i < len; ++i) {
        exact[at + i] += x[i];
        bound[at + i] += weight * m[i] + 1e-6 * (size_ + 2) * m[i];
      }
    };
    if (a_.op == "allreduce") {  // each contribution once, the sum once: (2 + bf) bf sum M_j
      for (int r = 0; r < size_; ++r) add(r, 0, 0, n, size_ > 1 ? bf * (2 + bf) : 0);
      if (a_.average)
        for (size_t i = 0; i < n; ++i) exact[i] /= size_, bound[i] /= size_;
    } else if (a_.op == "reduce_scatter") {
      for (int r = 0; r < size_; ++r) add(r, count_ * rank_, 0, n, r == rank_ ? 0 : bf);
      if (a_.average)
        for (size_t i = 0; i < n; ++i) exact[i] /= size_, bound[i] /= size_;
    } else if (a_.op == "allgather") {
      for (int r = 0; r < size_; ++r) add(r, 0, count_ * r, count_, size_ > 1 ? bf : 0);
    } else {
      add((rank_ + size_ - 1) % size_, 0, 0, n, bf);
    }
  }

  Errors check(bool octet_call) {
    for (auto& v : out_) v = 0.0f;
    run(octet_call);
    std::vector<double> exact, bound;
    reference(exact, bound);
    Errors e;
    double max_exact = 0;
    for (size_t i = 0; i < out_.size(); ++i) {
      const double err = std::fabs(double(out_[i]) - exact[i]);
      e.max_abs = std::max(e.max_abs, err);
      max_exact = std::max(max_exact, std::fabs(exact[i]));
      e.sum_sq += err * err;
      if (!(err <= bound[i])) ++e.wrong;
    }
    e.max_rel = max_exact > 0 ? e.max_abs / max_exact : 0;
    e.n = out_.size();
    Errors all;
    PMPI_Allreduce(&e.max_abs, &all.max_abs, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(&e.max_rel, &all.max_rel, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(&e.sum_sq, &all.sum_sq, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(&e.wrong, &all.wrong, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(&e.n, &all.n, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    all.identical = identical();
    return all;
  }
  // allreduce/allgather: every rank must hold the same bytes.
  bool identical() {
    if (a_.op != "allreduce" && a_.op != "allgather") return true;
    uint64_t h = 1469598103934665603ull, lo = 0, hi = 0;
    const auto* b = reinterpret_cast<const uint8_t*>(out_.data());
    for (size_t i = 0; i < out_.size() * 4; ++i) h = (h ^ b[i]) * 1099511628211ull;
    PMPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
  }

  double compression_ratio() const {
    if (count_ == 0 || count_ * 4 < a_.min_bytes) return 1.0;
    CodecOptions c = o_.codec;
    c.threads = 1;
    std::vector<uint8_t> buf(max_encoded_size(in_.size(), c));
    return double(in_.size() * 4) /
           double(encode(in_.data(), in_.size(), c, buf.data(), buf.size()));
  }

 private:
  BenchArgs a_;
  Comm comm_;
  CollectiveOptions o_;
  int rank_ = 0, size_ = 1;
  uint32_t block_ = 2048;
  double busbw_ = 1;
  size_t count_ = 0;
  std::vector<float> in_, out_;
};

std::vector<std::string> mpi_algorithm_vars() {
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "OMPI_MCA_coll", 13) == 0 || std::strncmp(*e, "OMPI_MCA_pml", 12) == 0 ||
        std::strncmp(*e, "OMPI_MCA_btl", 12) == 0)
      vars.push_back(*e + 9);
  return vars;
}

nlohmann::json errors_json(const Errors& e) {
  return {{"max_abs", e.max_abs},
          {"max_rel", e.max_rel},
          {"rms", e.n ? std::sqrt(e.sum_sq / e.n) : 0.0},
          {"wrong", e.wrong},
          {"identical", e.identical}};
}

void print_header(const BenchArgs& a, const Bench& b) {
  std::printf(
      "# octet bench %s: %d ranks, type %s, block %u%s%s, iters %d, warmup %d, chunk %zu B, "
      "window %d, min_bytes %zu\n",
      a.op.c_str(), b.size(), a.type.c_str(), b.block(), a.stochastic ? ", stochastic" : "",
      a.average ? ", average" : "", a.iters, a.warmup, a.chunk_bytes, a.window, a.min_bytes);
  std::printf("# baseline: fp32 PMPI call; MPI variables set:");
  const auto vars = mpi_algorithm_vars();
  if (vars.empty()) std::printf(" none (OpenMPI picks its algorithm)");
  for (const auto& v : vars) std::printf(" %s", v.c_str());
  std::printf(
      "\n# time in us (avg over ranks of each rank's mean; min/max over ranks); bw in GB/s "
      "of the fp32 size; maxrel = max|err| / max|exact|; #wrong outside the bound\n");
  std::printf(
      "#%11s %11s %5s | %10s %10s %10s %7s %7s %6s %9s %9s %9s %7s %3s | %10s %7s %7s "
      "%9s %6s | %7s\n",
      "size", "count", "ratio", "time", "min", "max", "algbw", "busbw", "", "maxabs", "maxrel",
      "rms", "#wrong", "id", "mpi time", "algbw", "busbw", "maxabs", "#wrong", "speedup");
}

void print_row(const Row& r, const Bench& b, bool check, bool baseline) {
  const double alg = r.t_avg > 0 ? r.bytes / r.t_avg / 1e9 : 0;
  const double balg = r.b_avg > 0 ? r.bytes / r.b_avg / 1e9 : 0;
  std::printf("%12zu %11zu %5.2f | %10.1f %10.1f %10.1f %7.3f %7.3f %6s", r.bytes, r.count, r.ratio,
              r.t_avg * 1e6, r.t_min * 1e6, r.t_max * 1e6, alg, alg * b.busbw_factor(), "");
  if (check)
    std::printf(" %9.2e %9.2e %9.2e %7llu %3s", r.octet.max_abs, r.octet.max_rel,
                r.octet.n ? std::sqrt(r.octet.sum_sq / r.octet.n) : 0.0,
                (unsigned long long)r.octet.wrong, r.octet.identical ? "yes" : "NO");
  else
    std::printf(" %9s %9s %9s %7s %3s", "-", "-", "-", "-", "-");
  if (baseline) {
    std::printf(" | %10.1f %7.3f %7.3f", r.b_avg * 1e6, balg, balg * b.busbw_factor());
    if (check)
      std::printf(" %9.2e %6llu", r.mpi.max_abs, (unsigned long long)r.mpi.wrong);
    else
      std::printf(" %9s %6s", "-", "-");
    std::printf(" | %7.2f\n", r.t_avg > 0 ? r.b_avg / r.t_avg : 0);
  } else {
    std::printf("\n");
  }
  std::fflush(stdout);
}

void run_bench(const BenchArgs& a) {
  int initialized = 0;
  PMPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  nlohmann::json rows = nlohmann::json::array();
  {
    Bench b(a);
    const bool table = b.rank() == 0 && a.json != "-";
    if (table) print_header(a, b);
    const size_t lo = parse_size(a.min_size), hi = parse_size(a.max_size);
    if (!(a.factor > 1)) throw Error(ErrorCode::kInvalidArgument, "-f must be > 1");
    for (double s = double(lo); s <= double(hi) * (1 + 1e-9); s *= a.factor) {
      const size_t bytes = size_t(s) / 4 * 4;
      if (bytes / 4 < ((a.op == "reduce_scatter" || a.op == "allgather") ? size_t(b.size()) : 1))
        continue;
      const Row r = b.measure(bytes);
      if (table) print_row(r, b, a.check, a.baseline);
      rows.push_back(
          {{"bytes", r.bytes},
           {"count", r.count},
           {"ratio", r.ratio},
           {"time_us", {{"avg", r.t_avg * 1e6}, {"min", r.t_min * 1e6}, {"max", r.t_max * 1e6}}},
           {"algbw_GBps", r.t_avg > 0 ? r.bytes / r.t_avg / 1e9 : 0},
           {"busbw_GBps", r.t_avg > 0 ? r.bytes / r.t_avg / 1e9 * b.busbw_factor() : 0},
           {"error", errors_json(r.octet)},
           {"baseline",
            {{"time_us", {{"avg", r.b_avg * 1e6}, {"min", r.b_min * 1e6}, {"max", r.b_max * 1e6}}},
             {"error", errors_json(r.mpi)}}},
           {"speedup", r.t_avg > 0 ? r.b_avg / r.t_avg : 0}});
    }
    if (b.rank() == 0 && !a.json.empty()) {
      nlohmann::json doc = {{"op", a.op},
                            {"ranks", b.size()},
                            {"type", a.type},
                            {"block", b.block()},
                            {"iters", a.iters},
                            {"warmup", a.warmup},
                            {"chunk_bytes", a.chunk_bytes},
                            {"window", a.window},
                            {"min_bytes", a.min_bytes},
                            {"stochastic", a.stochastic},
                            {"average", a.average},
                            {"mpi_vars", mpi_algorithm_vars()},
                            {"rows", rows}};
      if (a.json == "-") {
        std::cout << doc.dump(2) << std::endl;
      } else {
        std::ofstream f(a.json);
        f << doc.dump(2) << "\n";
        if (!f) throw Error(ErrorCode::kInvalidArgument, "cannot write " + a.json);
      }
    }
  }
  if (!initialized) MPI_Finalize();
}

}  // namespace

void add_bench_commands(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* c = app.add_subcommand(
      "bench",
      "Compressed collective vs the fp32 MPI call (run under mpirun). Pin OpenMPI's algorithm "
      "for a fair baseline, e.g. --mca coll_tuned_use_dynamic_rules 1 --mca "
      "coll_tuned_allreduce_algorithm 4 (ring)");
  c->add_option("op", args->op, "allreduce | reduce_scatter | allgather | sendrecv")
      ->required()
      ->check(CLI::IsMember({"allreduce", "reduce_scatter", "allgather", "sendrecv"}));
  c->add_option("-b,--minbytes", args->min_size, "smallest size (fp32 bytes; K/M/G suffixes)");
  c->add_option("-e,--maxbytes", args->max_size, "largest size");
  c->add_option("-f,--stepfactor", args->factor, "size multiplier between rows");
  c->add_option("-n,--iters", args->iters, "timed iterations per size")->check(CLI::PositiveNumber);
  c->add_option("-w,--warmup", args->warmup, "untimed iterations first")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--type", args->type, "codec data type");
  c->add_option("--block", args->block, "block size (0: the type's default)");
  c->add_flag("--stochastic", args->stochastic, "stochastic rounding");
  c->add_flag("--average", args->average, "average instead of sum (allreduce, reduce_scatter)");
  c->add_option("--min-bytes", args->min_bytes, "calls below this fp32 size go uncompressed");
  c->add_option("--chunk-bytes", args->chunk_bytes, "pipeline chunk (fp32 bytes)");
  c->add_option("--window", args->window, "chunks in flight");
  c->add_option("-c,--check", args->check, "error columns and #wrong (0/1)");
  c->add_option("--baseline", args->baseline, "measure the fp32 MPI call too (0/1)");
  c->add_option("--json", args->json, "write JSON to this file ('-': stdout, no table)");
  c->callback([args] { run_bench(*args); });
}

}  // namespace cli
}  // namespace octet
