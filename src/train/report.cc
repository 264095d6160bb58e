#include "train/report.h"

#include <array>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "octet/error.h"

namespace octet {
namespace train {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

std::string mib(double bytes) {
  return format("%.1f MiB", bytes / 1048576.0);
}

// Two-sided 95% quantile of Student's t with df degrees of freedom.
double t95(size_t df) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return 0;
  if (df <= sizeof table / sizeof table[0]) return table[df - 1];
  // Beyond the table, the quantile at the start of each range: never below the true one.
  return df <= 60 ? 2.042 : df <= 120 ? 2.000 : 1.980;
}

}  // namespace

double RunResult::step_seconds() const {
  double wall = 0;
  int steps = 0;
  for (const EpochResult& e : epochs) {
    wall += e.compute_seconds + e.comm_seconds + e.codec_seconds + e.wait_seconds;
    steps += e.steps;
  }
  return steps ? wall / steps : 0;
}

uint64_t RunResult::bytes_sent() const {
  uint64_t total = 0;
  for (const EpochResult& e : epochs) total += e.bytes_sent;
  return total;
}

std::string epoch_line(const RunResult& run) {
  const EpochResult& e = run.epochs.back();
  std::string line = format(
      "%-6s %-12s seed %-3llu epoch %-3d loss %.4f  test error %6.2f%%  sent %10s  compute %.2f "
      "s  comm %.2f s  codec %.2f s",
      run.mode.c_str(), run.comm.c_str(), (unsigned long long)run.seed, e.epoch, e.train_loss,
      100 * e.test_error, mib(double(e.bytes_sent)).c_str(), e.compute_seconds, e.comm_seconds,
      e.codec_seconds);
  if (e.wait_seconds > 0) line += format("  wait %.2f s", e.wait_seconds);
  return line;
}

Interval mean_interval(const std::vector<double>& v) {
  Interval r;
  if (v.empty()) return r;
  for (double x : v) r.mean += x;
  r.mean /= double(v.size());
  if (v.size() < 2) return r;
  double ss = 0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  r.half_width = t95(v.size() - 1) * std::sqrt(ss / double(v.size() - 1) / double(v.size()));
  return r;
}

std::string summary_table(const std::vector<RunResult>& runs) {
  using Key = std::pair<std::string, std::string>;  // (mode, comm)
  std::vector<Key> rows;
  std::map<Key, std::vector<const RunResult*>> by_row;
  std::map<std::pair<std::string, uint64_t>, const RunResult*> fp32_by_seed;
  for (const RunResult& r : runs) {
    const Key key{r.mode, r.comm};
    if (!by_row.count(key)) rows.push_back(key);
    by_row[key].push_back(&r);
    if (r.comm == "fp32") fp32_by_seed[{r.mode, r.seed}] = &r;
  }
  std::string out = format("%-6s %-14s %-9s %-22s %12s %8s %10s\n", "mode", "comm", "best err",
                           "vs fp32 (pp, 95% CI)", "sent/rank", "saved", "step");
  for (const Key& key : rows) {
    const std::vector<const RunResult*>& group = by_row[key];
    std::vector<double> best, diff;
    double sent = 0, reference = 0, step = 0;
    for (const RunResult* r : group) {
      best.push_back(100 * r->best_test_error);
      auto f = fp32_by_seed.find({r->mode, r->seed});
      if (f != fp32_by_seed.end())
        diff.push_back(100 * (r->best_test_error - f->second->best_test_error));
      sent += double(r->bytes_sent());
      reference += double(r->fp32_reference_bytes);
      step += r->step_seconds() / double(group.size());
    }
    const Interval b = mean_interval(best), d = mean_interval(diff);
    std::string vs = "-";
    if (diff.size() == best.size())
      vs =
          diff.size() > 1 ? format("%+.2f +- %.2f", d.mean, d.half_width) : format("%+.2f", d.mean);
    const double per_run = double(best.size());
    out += format("%-6s %-14s %8.2f%% %-22s %12s %7.1f%% %7.1f ms\n", key.first.c_str(),
                  key.second.c_str(), b.mean, vs.c_str(), mib(sent / per_run).c_str(),
                  reference > 0 ? 100 * (1 - sent / reference) : 0.0, 1000 * step);
  }
  return out;
}

std::string error_table(const std::vector<RunResult>& runs) {
  // Per (mode, comm, tensor), the sums over seeds: one row each, in the order first seen.
  std::vector<std::array<std::string, 3>> rows;
  std::map<std::array<std::string, 3>, ErrorSum> sums;
  for (const RunResult& r : runs)
    for (const auto& [tensor, e] : r.errors) {
      const std::array<std::string, 3> key{r.mode, r.comm, tensor};
      if (!sums.count(key)) rows.push_back(key);
      sums[key].merge(e);
    }
  if (rows.empty()) return "";
  std::string out = format("%-6s %-14s %-14s %14s %14s %12s %14s\n", "mode", "comm", "sent",
                           "mean abs err", "mean rel err", "L1 rel err", "values");
  for (const auto& key : rows) {
    const ErrorSum& e = sums[key];
    const std::string l1 = e.l1_known() ? format("%12.4f", e.l1_rel()) : format("%12s", "-");
    out +=
        format("%-6s %-14s %-14s %14.3e %14.4f %s %14llu\n", key[0].c_str(), key[1].c_str(),
               key[2].c_str(), e.mean_abs(), e.mean_rel(), l1.c_str(), (unsigned long long)e.count);
  }
  return out;
}

std::vector<Curve> learning_curves(const std::vector<RunResult>& runs) {
  std::vector<Curve> curves;
  std::vector<std::vector<int>> counts;  // seeds that reached each epoch
  for (const RunResult& r : runs) {
    const std::string label = r.mode + " " + r.comm;
    size_t c = 0;
    while (c < curves.size() && curves[c].label != label) ++c;
    if (c == curves.size()) {
      curves.push_back({label, {}, {}});
      counts.emplace_back();
    }
    for (size_t e = 0; e < r.epochs.size(); ++e) {
      if (curves[c].epochs.size() <= e) {
        curves[c].epochs.push_back(double(e + 1));
        curves[c].test_error_percent.push_back(0);
        counts[c].push_back(0);
      }
      curves[c].test_error_percent[e] += 100 * r.epochs[e].test_error;
      ++counts[c][e];
    }
  }
  for (size_t c = 0; c < curves.size(); ++c)
    for (size_t e = 0; e < counts[c].size(); ++e) curves[c].test_error_percent[e] /= counts[c][e];
  return curves;
}

std::string to_json(const std::vector<RunResult>& runs, const std::string& command) {
  nlohmann::json doc;
  doc["command"] = command;
  doc["ranks"] = runs.empty() ? 0 : runs.front().ranks;
  doc["runs"] = nlohmann::json::array();
  for (const RunResult& r : runs) {
    nlohmann::json run = {{"mode", r.mode},
                          {"comm", r.comm},
                          {"seed", r.seed},
                          {"best_test_error", r.best_test_error},
                          {"bytes_sent", r.bytes_sent()},
                          {"fp32_reference_bytes", r.fp32_reference_bytes},
                          {"step_seconds", r.step_seconds()},
                          {"params_fnv1a", format("%016llx", (unsigned long long)r.params_hash)}};
    run["approximation_error"] = nlohmann::json::array();
    for (const auto& [tensor, e] : r.errors) {
      nlohmann::json row = {{"sent", tensor},
                            {"mean_abs_error", e.mean_abs()},
                            {"mean_rel_error", e.mean_rel()},
                            {"values", e.count},
                            {"nonzero_values", e.nonzero}};
      if (e.l1_known()) {
        row["l1_rel_error"] = e.l1_rel();
        row["mean_abs_exact"] = e.count ? e.original_sum / double(e.count) : 0.0;  // to combine
      }
      run["approximation_error"].push_back(row);
    }
    run["epochs"] = nlohmann::json::array();
    for (const EpochResult& e : r.epochs)
      run["epochs"].push_back({{"epoch", e.epoch},
                               {"train_loss", e.train_loss},
                               {"test_error", e.test_error},
                               {"bytes_sent", e.bytes_sent},
                               {"steps", e.steps},
                               {"compute_seconds", e.compute_seconds},
                               {"communication_seconds", e.comm_seconds},
                               {"codec_seconds", e.codec_seconds},
                               {"measure_seconds", e.measure_seconds},
                               {"wait_seconds", e.wait_seconds},
                               {"wall_seconds", e.wall_seconds}});
    doc["runs"].push_back(run);
  }
  return doc.dump(2) + "\n";
}

namespace {

// One JSON document's runs, every field checked: errors name the file and the key path.
class RunReader {
 public:
  explicit RunReader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& why) const {
    throw Error(ErrorCode::kInvalidArgument, source_ + ": " + path + ": " + why);
  }
  static std::string join(const std::string& path, const char* key) {
    return path.empty() ? key : path + "." + key;
  }
  const nlohmann::json& at(const nlohmann::json& j, const std::string& path,
                           const char* key) const {
    if (!j.is_object() || !j.contains(key)) fail(join(path, key), "missing");
    return j.at(key);
  }
  std::string text(const nlohmann::json& j, const std::string& path, const char* key) const {
    const nlohmann::json& v = at(j, path, key);
    if (!v.is_string()) fail(join(path, key), "expected a string");
    return v.get<std::string>();
  }
  double number(const nlohmann::json& j, const std::string& path, const char* key, double lo,
                double hi) const {
    const nlohmann::json& v = at(j, path, key);
    if (!v.is_number()) fail(join(path, key), "expected a number");
    const double d = v.get<double>();
    if (!(d >= lo && d <= hi)) fail(join(path, key), "out of range");
    return d;
  }
  uint64_t whole(const nlohmann::json& j, const std::string& path, const char* key) const {
    const nlohmann::json& v = at(j, path, key);
    if (!v.is_number_unsigned()) fail(join(path, key), "expected a whole number >= 0");
    return v.get<uint64_t>();
  }

  EpochResult epoch(const nlohmann::json& j, const std::string& path) const {
    EpochResult e;
    constexpr double kNever = 1e12;  // seconds: a typo, not a run
    e.epoch = int(number(j, path, "epoch", 1, 1e9));
    e.train_loss = number(j, path, "train_loss", 0, 1e30);
    e.test_error = number(j, path, "test_error", 0, 1);
    e.bytes_sent = whole(j, path, "bytes_sent");
    e.steps = int(number(j, path, "steps", 0, 1e9));
    e.compute_seconds = number(j, path, "compute_seconds", 0, kNever);
    e.comm_seconds = number(j, path, "communication_seconds", 0, kNever);
    e.codec_seconds = number(j, path, "codec_seconds", 0, kNever);
    e.wall_seconds = number(j, path, "wall_seconds", 0, kNever);
    // Written since measure and wait were timed apart; older files have neither.
    if (j.contains("measure_seconds"))
      e.measure_seconds = number(j, path, "measure_seconds", 0, kNever);
    if (j.contains("wait_seconds")) e.wait_seconds = number(j, path, "wait_seconds", 0, kNever);
    return e;
  }

  ErrorSum error_sum(const nlohmann::json& j, const std::string& path) const {
    ErrorSum e;
    e.count = whole(j, path, "values");
    // nonzero_values since it is written; older files: every value counted for the mean.
    e.nonzero = j.contains("nonzero_values") ? whole(j, path, "nonzero_values") : e.count;
    if (e.nonzero > e.count) fail(join(path, "nonzero_values"), "more than values");
    e.abs_sum = number(j, path, "mean_abs_error", 0, 1e38) * double(e.count);
    e.rel_sum = number(j, path, "mean_rel_error", 0, 1e38) * double(e.nonzero);
    // mean_abs_exact (with l1_rel_error) since they are written; older files: unknown.
    e.original_sum = -1;
    if (j.contains("mean_abs_exact"))
      e.original_sum = number(j, path, "mean_abs_exact", 0, 1e38) * double(e.count);
    return e;
  }

  RunResult run(const nlohmann::json& j, const std::string& path, int ranks) const {
    RunResult r;
    r.ranks = ranks;
    r.mode = text(j, path, "mode");
    if (r.mode != "dp" && r.mode != "mp" && r.mode != "hybrid")
      fail(join(path, "mode"), "expected dp, mp or hybrid");
    r.comm = text(j, path, "comm");
    if (r.comm.empty()) fail(join(path, "comm"), "empty");
    r.seed = whole(j, path, "seed");
    r.best_test_error = number(j, path, "best_test_error", 0, 1);
    r.fp32_reference_bytes = whole(j, path, "fp32_reference_bytes");
    const std::string hash = text(j, path, "params_fnv1a");
    // Digits only: strtoull would also take a sign, leading blanks or "0x".
    if (hash.size() != 16 || hash.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      fail(join(path, "params_fnv1a"), "expected 16 hex digits");
    r.params_hash = std::strtoull(hash.c_str(), nullptr, 16);
    const nlohmann::json& epochs = at(j, path, "epochs");
    if (!epochs.is_array() || epochs.empty())
      fail(join(path, "epochs"), "expected a non-empty array");
    for (size_t e = 0; e < epochs.size(); ++e)
      r.epochs.push_back(epoch(epochs[e], path + ".epochs[" + std::to_string(e) + "]"));
    const nlohmann::json& errors = at(j, path, "approximation_error");
    if (!errors.is_array()) fail(join(path, "approximation_error"), "expected an array");
    for (size_t e = 0; e < errors.size(); ++e) {
      const std::string at_e = path + ".approximation_error[" + std::to_string(e) + "]";
      const std::string sent = text(errors[e], at_e, "sent");
      if (r.errors.count(sent)) fail(at_e + ".sent", "'" + sent + "' twice");
      r.errors[sent] = error_sum(errors[e], at_e);
    }
    return r;
  }

 private:
  std::string source_;
};

}  // namespace

std::vector<RunResult> from_json(const std::string& text, const std::string& source) {
  const RunReader reader(source);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, source + ": not JSON (" + e.what() + ")");
  }
  const int ranks = int(reader.number(doc, "", "ranks", 1, 1e9));
  const nlohmann::json& runs = reader.at(doc, "", "runs");
  if (!runs.is_array()) reader.fail("runs", "expected an array");
  std::vector<RunResult> out;
  for (size_t i = 0; i < runs.size(); ++i)
    out.push_back(reader.run(runs[i], "runs[" + std::to_string(i) + "]", ranks));
  return out;
}

}  // namespace train
}  // namespace octet
