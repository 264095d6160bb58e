// octet predict paper|model|sweep|report|presets, and octet calibrate (docs/predictor.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/support.h"
#include "octet/error.h"
#include "octet/units.h"
#include "predictor/predictor.h"
#if OCTET_HAVE_MPI
#include "cli/mpi_session.h"
#endif

namespace octet {
namespace cli {
namespace {

namespace pr = octet::predictor;
using nlohmann::json;

// ---------------------------------------------------------------- shared options

struct ScenarioArgs {
  std::string preset;
  std::vector<std::string> files;
  int gpus = 0;
};

void add_scenario_options(CLI::App* cmd, ScenarioArgs& a) {
  cmd->add_option("--preset", a.preset, "built-in scenario (see `octet predict presets`)");
  cmd->add_option("files", a.files, "scenario files (.toml/.json); later ones replace sections");
  cmd->add_option("--gpus", a.gpus, "GPUs to predict for (default: the file's, else the cluster)")
      ->check(at_least(1));
}

pr::ScenarioParts load_parts(const ScenarioArgs& a) {
  pr::ScenarioParts parts;
  if (!a.preset.empty()) parts = pr::preset(a.preset);
  for (const auto& f : a.files) pr::merge_into(parts, pr::load_scenario_file(f));
  if (a.gpus > 0) parts.scenario.gpus = a.gpus;
  return parts;
}

pr::Scenario load_scenario(const ScenarioArgs& a) {
  pr::ScenarioParts parts = load_parts(a);
  std::string missing;
  if (!parts.has_workload) missing += " [workload]";
  if (!parts.has_cluster) missing += " [cluster]";
  if (!parts.has_codec) missing += " [codec]";
  if (!missing.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "scenario incomplete, missing" + missing + " (give --preset or more files)");
  pr::validate(parts.scenario);
  return parts.scenario;
}

std::string gbps(double bytes_per_s) {
  char buf[64];
  if (std::isinf(bytes_per_s)) return "any bandwidth";
  if (bytes_per_s <= 0) return "never";
  std::snprintf(buf, sizeof buf, "%.3g GB/s (%.3g Gbit/s)", bytes_per_s / 1e9,
                bytes_per_s * 8 / 1e9);
  return buf;
}

// ---------------------------------------------------------------- predict paper

void run_paper(const std::string& mode_name, bool as_json) {
  if (mode_name != "paper" && mode_name != "corrected")
    throw Error(ErrorCode::kInvalidArgument, "--mode must be paper or corrected");
  const auto mode = mode_name == "paper" ? pr::PaperMode::kPaper : pr::PaperMode::kCorrected;
  const pr::PaperReport r = pr::reproduce_paper(mode);
  static const char* kinds[] = {"computed", "input", "check"};
  if (as_json) {
    json cells = json::array();
    for (const auto& c : r.cells)
      cells.push_back({{"table", c.table},
                       {"row", c.row},
                       {"column", c.column},
                       {"published", c.published},
                       {"value", c.value},
                       {"kind", kinds[int(c.kind)]},
                       {"reproduces", pr::reproduces(c.value, c.published, c.decimals)}});
    std::printf(
        "%s\n",
        json{{"mode", mode_name}, {"summary", r.summary}, {"cells", cells}}.dump(2).c_str());
    return;
  }
  std::printf("Paper 001 (Dettmers), mode: %s\n", mode_name.c_str());
  // One block per table, in the paper's order.
  std::vector<pr::PaperCell> cells = r.cells;
  static const char* order[] = {"4-GPU", "Table 1", "Table 6", "Table 6 alpha-beta", "Table 7"};
  auto rank = [](const std::string& t) {
    for (int i = 0; i < 5; ++i)
      if (t == order[i]) return i;
    return 5;
  };
  std::stable_sort(cells.begin(), cells.end(), [&](const pr::PaperCell& a, const pr::PaperCell& b) {
    return rank(a.table) < rank(b.table);
  });
  std::string table;
  for (const auto& c : cells) {
    if (c.table != table) {
      table = c.table;
      std::printf("\n%s\n%-28s %-26s %10s %10s %8s\n", table.c_str(), "row", "column", "published",
                  "model", "diff");
    }
    const double diff = c.published != 0 ? 100 * (c.value / c.published - 1) : 0;
    const char* note = c.kind == pr::CellKind::kInput ? "  (paper input)"
                       : mode == pr::PaperMode::kPaper && c.kind == pr::CellKind::kComputed &&
                               !pr::reproduces(c.value, c.published, c.decimals)
                           ? "  MISMATCH"
                           : "";
    std::printf("%-28s %-26s %10.*f %10.*f %+7.2f%%%s\n", c.row.c_str(), c.column.c_str(),
                c.decimals, c.published, c.decimals + 2, c.value, diff, note);
  }
  std::printf("\n%s\n", r.summary.c_str());
}

// ---------------------------------------------------------------- predict model

json step_json(const pr::StepTime& t) {
  return {{"step_s", t.step_s},   {"comm_s", t.comm_s},         {"exposed_comm_s", t.exposed_s},
          {"codec_s", t.codec_s}, {"start_delay_s", t.start_s}, {"speedup", t.speedup}};
}

void run_model(const ScenarioArgs& a, bool as_json) {
  const pr::Scenario s = load_scenario(a);
  const pr::Prediction p = pr::predict(s);
  const std::string codec = data_type_name(s.codec.type);
  if (as_json) {
    std::printf("%s\n",
                json{{"workload", s.workload.name},
                     {"gpus", p.gpus},
                     {"single_gpu_step_s", p.single_gpu_step_s},
                     {"fp32", step_json(p.fp32)},
                     {"compressed", step_json(p.int8)},
                     {"codec", codec},
                     {"break_even_Bps", std::isinf(p.break_even_Bps) ? -1.0 : p.break_even_Bps}}
                    .dump(2)
                    .c_str());
    return;
  }
  const pr::Link& link = pr::bottleneck(s.cluster, p.gpus);
  std::printf("%s on %d GPUs (%d per node), bottleneck link %s, codec %s\n",
              s.workload.name.c_str(), p.gpus, s.cluster.gpus_per_node,
              link.table.empty() ? gbps(link.bandwidth_Bps).c_str() : "from a measured table",
              codec.c_str());
  std::printf("one GPU: %.2f ms per step of %d samples\n\n", p.single_gpu_step_s * 1e3,
              s.workload.batch);
  std::printf("%-10s %12s %12s %12s %12s %12s %9s\n", "", "step (ms)", "comm (ms)", "exposed (ms)",
              "codec (ms)", "start (ms)", "speedup");
  for (auto [name, t] : {std::pair<const char*, pr::StepTime>{"32-bit", p.fp32},
                         std::pair<const char*, pr::StepTime>{codec.c_str(), p.int8}})
    std::printf("%-10s %12.2f %12.2f %12.2f %12.2f %12.2f %8.2fx\n", name, t.step_s * 1e3,
                t.comm_s * 1e3, t.exposed_s * 1e3, t.codec_s * 1e3, t.start_s * 1e3, t.speedup);
  std::printf("\n%s is faster than 32-bit below a bottleneck bandwidth of %s: %s here.\n",
              codec.c_str(), gbps(p.break_even_Bps).c_str(),
              p.int8.step_s < p.fp32.step_s ? "it pays off" : "it does not pay off");
}

// ---------------------------------------------------------------- predict sweep

// A --values item of a GPU or sub-batch sweep.
double whole_value(const std::string& item) {
  const std::string why = whole_number_error<int>(item, 1);
  if (!why.empty()) throw Error(ErrorCode::kInvalidArgument, "--values: " + why);
  int v = 0;
  CLI::detail::lexical_cast(item, v);
  return v;
}

std::vector<double> sweep_values(pr::SweepVariable v, const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (v == pr::SweepVariable::kBandwidth)
      out.push_back(pr::parse_bandwidth(item));
    else if (v == pr::SweepVariable::kMessageSize)
      out.push_back(pr::parse_size(item));
    else
      out.push_back(whole_value(item));
  }
  if (out.empty()) throw Error(ErrorCode::kInvalidArgument, "--values: no values");
  return out;
}

std::string default_values(pr::SweepVariable v) {
  switch (v) {
    case pr::SweepVariable::kGpus:
      return "1,2,4,8,16,32,64,96,128";
    case pr::SweepVariable::kSubBatch:
      return "128,256,512,1024,2048,4096";
    case pr::SweepVariable::kBandwidth:
      return "0.1 GB/s,0.3 GB/s,1 GB/s,3 GB/s,10 GB/s,30 GB/s,100 GB/s,300 GB/s";
    case pr::SweepVariable::kMessageSize:
      return "4 KiB,64 KiB,1 MiB,16 MiB,256 MiB";
  }
  return "";
}

void run_sweep(const ScenarioArgs& a, const std::string& var, std::string values,
               const std::string& svg, bool as_json) {
  const pr::SweepVariable v = pr::parse_sweep_variable(var);
  const pr::Scenario s = load_scenario(a);
  if (values.empty()) values = default_values(v);
  const auto points = pr::sweep(s, v, sweep_values(v, values));
  const bool message = v == pr::SweepVariable::kMessageSize;
  const bool bandwidth = v == pr::SweepVariable::kBandwidth;
  const double xscale = bandwidth ? 1e-9 : 1.0;
  const std::string xlabel = bandwidth                       ? "bottleneck bandwidth (GB/s)"
                             : message                       ? "allreduce message size (bytes)"
                             : v == pr::SweepVariable::kGpus ? "GPUs"
                                                             : "sub-batch (samples)";
  const std::string ylabel =
      message ? "effective allreduce GB/s (fp32 bytes)" : "speedup over 1 GPU";
  const std::string codec = data_type_name(s.codec.type);
  if (as_json) {
    json rows = json::array();
    for (const auto& p : points)
      rows.push_back({{"x", p.x}, {"fp32", p.fp32}, {"compressed", p.int8}});
    std::printf("%s\n", json{{"variable", var}, {"y", ylabel}, {"points", rows}}.dump(2).c_str());
  } else {
    std::printf("%s, %s\n%-28s %12s %12s %8s\n", s.workload.name.c_str(), ylabel.c_str(),
                xlabel.c_str(), "32-bit", codec.c_str(), "ratio");
    for (const auto& p : points)
      std::printf("%-28.6g %12.3f %12.3f %8.2f\n", p.x * xscale, p.fp32, p.int8,
                  p.fp32 > 0 ? p.int8 / p.fp32 : 0.0);
  }
  if (svg.empty()) return;
  pr::Series a32{"32-bit", "#1f77b4", {}, {}}, a8{codec, "#d62728", {}, {}};
  for (const auto& p : points) {
    a32.x.push_back(p.x * xscale), a32.y.push_back(p.fp32);
    a8.x.push_back(p.x * xscale), a8.y.push_back(p.int8);
  }
  const bool log_x = message || bandwidth || v == pr::SweepVariable::kGpus;
  write_file(svg,
             pr::render_svg(s.workload.name + ": " + ylabel, xlabel, ylabel, {a32, a8}, log_x));
  if (!as_json) std::printf("wrote %s\n", svg.c_str());
}

// ---------------------------------------------------------------- predict report

void run_report(const ScenarioArgs& a, const std::string& report, bool as_json) {
  pr::ScenarioParts parts = load_parts(a);
  if (!parts.has_cluster || !parts.has_codec)
    throw Error(ErrorCode::kInvalidArgument,
                "predict report needs [cluster] and [codec] (--preset or files)");
  const Buffer text = read_file(report);
  const pr::ReportAnalysis r = pr::analyze_report(std::string(text.begin(), text.end()),
                                                  parts.scenario.cluster, parts.scenario.codec);
  if (as_json) {
    json rows = json::array();
    for (const auto& b : r.buckets)
      rows.push_back({{"op", b.op},
                      {"bucket_min_bytes", b.bucket_min_bytes},
                      {"bucket_max_bytes", b.bucket_max_bytes},
                      {"calls", b.calls},
                      {"message_bytes", b.message_bytes},
                      {"fp32_s", b.fp32_s},
                      {"compressed_s", b.int8_s},
                      {"measured_s", b.measured_s},
                      {"break_even_Bps", std::isinf(b.break_even_Bps) ? -1.0 : b.break_even_Bps},
                      {"pays_off", b.pays_off}});
    std::printf("%s\n", json{{"ranks", r.ranks},
                             {"buckets", rows},
                             {"fp32_total_s", r.fp32_total_s},
                             {"compressed_total_s", r.int8_total_s}}
                            .dump(2)
                            .c_str());
    return;
  }
  std::printf("%d ranks; per call, predicted on this cluster\n", r.ranks);
  std::printf("%-22s %-22s %7s %11s %11s %11s  %s\n", "op", "bucket (bytes)", "calls", "fp32 (us)",
              "8-bit (us)", "meas. (us)", "verdict");
  for (const auto& b : r.buckets) {
    char bucket[64], meas[32] = "-";
    std::snprintf(bucket, sizeof bucket, "%.0f-%.0f", b.bucket_min_bytes, b.bucket_max_bytes);
    if (b.measured_s >= 0) std::snprintf(meas, sizeof meas, "%.1f", b.measured_s * 1e6);
    std::printf("%-22s %-22s %7.0f %11.1f %11.1f %11s  %s (pays below %s)\n", b.op.c_str(), bucket,
                b.calls, b.fp32_s * 1e6, b.int8_s * 1e6, meas,
                b.pays_off ? "compress" : "send fp32", gbps(b.break_even_Bps).c_str());
  }
  std::printf("total: fp32 %.3f ms, compressing where it pays %.3f ms\n", r.fp32_total_s * 1e3,
              r.int8_total_s * 1e3);
}

// ---------------------------------------------------------------- calibrate

struct CalibrateArgs {
  std::string type = "dynamic";
  uint32_t block = 0;
  size_t elements = size_t(1) << 22;
  int repeats = 5;
  std::string out = "octet-calibration.json";
  std::string max_bytes = "64M";
};

#if OCTET_HAVE_MPI
bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}
#endif

void run_calibrate(const CalibrateArgs& a) {
  const DataType type = parse_data_type(a.type);
  const uint64_t max_bytes = octet::parse_size(a.max_bytes);
  if (max_bytes < 8 || max_bytes > (uint64_t{1} << 30))
    throw Error(ErrorCode::kInvalidArgument, "--max-bytes must lie in [8, 1G]");
  // Bytes per value: the input and the decoded copy (4 each) and the payload (about 1).
  check_memory(9.0 * double(a.elements), "--elements " + std::to_string(a.elements));
  std::unique_ptr<pr::Cluster> cluster;
  pr::CodecCost codec;
  bool root = true, measured = false;
  int ranks = 1;
#if OCTET_HAVE_MPI
  if (launched_by_mpirun()) {
    MpiSession mpi;
    root = mpi.rank() == 0;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    try {
      cluster = pr::measure_mpi_cluster(max_bytes);
      codec = pr::measure_mpi_codec(type, a.block, a.elements, a.repeats);
      measured = true;
    } catch (const Error&) {  // thrown on every rank alike
      mpi.rethrow_agreed();
    }
  }
#endif
  if (!root) return;
  if (!measured) codec = pr::measure_codec(type, a.block, a.elements, a.repeats);
  std::printf(
      "codec %s: encode %.2f GB/s, decode %.2f GB/s per rank, one thread each, %d rank(s) at "
      "once (fp32 bytes, %zu values)\n",
      a.type.c_str(), codec.encode_Bps / 1e9, codec.decode_Bps / 1e9, ranks, a.elements);
  if (cluster) {
    std::printf("%d node(s) x %d rank(s)\n", cluster->nodes, cluster->gpus_per_node);
    for (auto [name, link] : {std::pair<const char*, const pr::Link*>{"intra", &cluster->intra},
                              std::pair<const char*, const pr::Link*>{"inter", &cluster->inter}}) {
      if (link->table.empty()) continue;
      std::printf("%s: latency %.2f us, bandwidth %.2f GB/s\n", name, link->latency_s * 1e6,
                  link->bandwidth_Bps / 1e9);
      for (const auto& p : link->table)
        std::printf("  %10.0f B  %10.2f us  %8.3f GB/s\n", p.bytes, p.seconds * 1e6,
                    p.bytes / p.seconds / 1e9);
    }
    std::printf("start delay (a transfer right after computing, every rank computing):\n");
    for (const pr::StartDelay& d : cluster->start)
      std::printf("  after %8.2f ms  %8.2f ms\n", d.after_s * 1e3, d.delay_s * 1e3);
  } else {
    std::printf("no link measured (run under mpirun with 2 or more ranks to measure them)\n");
  }
  write_file(a.out, pr::calibration_json(cluster.get(), codec));
  std::printf("wrote %s\n", a.out.c_str());
}

// ---------------------------------------------------------------- predict curves

struct CurvesArgs {
  std::string calibration, type, out = "-";
  int ranks = 0, hosts = 1;
  uint32_t block = 0;
  bool stochastic = false;
};

// The policy-curve file of a job of a.ranks ranks on a.hosts hosts, from a calibration.
void run_curves(const CurvesArgs& a) {
  const pr::ScenarioParts parts = pr::load_calibration(a.calibration);
  if (a.hosts > a.ranks) throw Error(ErrorCode::kInvalidArgument, "--hosts exceeds --ranks");
  CodecOptions setting;
  setting.type = a.type.empty() ? parts.scenario.codec.type : parse_data_type(a.type);
  setting.block_size = a.block;
  setting.stochastic = a.stochastic;
  validate_options(setting);
  pr::CodecCost codec = parts.scenario.codec;
  codec.type = setting.type;
  codec.block_size = setting.block_size;
  const std::string text = format_policy_curves(
      pr::policy_curve_sets(parts.scenario.cluster, codec, setting, a.ranks, a.hosts));
  if (a.out == "-") return (void)std::fputs(text.c_str(), stdout);
  write_file(a.out, text);
  std::printf("wrote %s\n", a.out.c_str());
}

void add_curves_command(CLI::App* predict) {
  static CurvesArgs a;
  auto* c = predict->add_subcommand(
      "curves", "The auto policy's cost curves for a job, from a calibration (OCTET_CALIBRATION)");
  c->add_option("calibration", a.calibration, "file written by octet calibrate")->required();
  c->add_option("--ranks", a.ranks, "ranks of the communicator")->required()->check(at_least(1));
  c->add_option("--hosts", a.hosts, "hosts they run on (default 1)")->check(at_least(1));
  c->add_option("--type", a.type, "codec data type (default: the calibration's)");
  c->add_option("--block", a.block, "block size (0: the type's default)")
      ->check(at_least<uint32_t>(0));
  c->add_flag("--stochastic", a.stochastic, "stochastic rounding");
  c->add_option("--out", a.out, "file to write ('-': stdout, the default)");
  c->callback([] { run_curves(a); });
}

}  // namespace

void add_predict_commands(CLI::App& app) {
  auto* predict =
      app.add_subcommand("predict", "Will 8-bit communication pay off? (docs/predictor.md)");
  predict->require_subcommand(1);
  static bool as_json = false;
  static ScenarioArgs scenario;

  static std::string mode = "corrected";
  auto* paper = predict->add_subcommand("paper", "Reproduce paper 001's Tables 1, 6 and 7");
  paper->add_option("--mode", mode, "paper (its printed arithmetic) or corrected (default)");
  paper->add_flag("--json", as_json, "JSON output");
  paper->callback([] { run_paper(mode, as_json); });

  auto* model =
      predict->add_subcommand("model", "Step time and speedup of a workload on a cluster");
  add_scenario_options(model, scenario);
  model->add_flag("--json", as_json, "JSON output");
  model->callback([] { run_model(scenario, as_json); });

  static std::string var = "gpus", values, svg;
  auto* sw =
      predict->add_subcommand("sweep", "Speedup over GPUs, sub-batch, bandwidth or message size");
  add_scenario_options(sw, scenario);
  sw->add_option("--var", var, "gpus | sub-batch | bandwidth | message");
  sw->add_option("--values", values, "comma-separated values (bandwidth/message with units)");
  sw->add_option("--svg", svg, "write an SVG plot here");
  sw->add_flag("--json", as_json, "JSON output");
  sw->callback([] { run_sweep(scenario, var, values, svg, as_json); });

  static std::string report;
  auto* rep = predict->add_subcommand("report", "Per message size: does compressing pay off?");
  rep->add_option("report", report, "shim report JSON (OCTET_REPORT)")->required();
  rep->add_option("--preset", scenario.preset, "built-in cluster and codec");
  rep->add_option("--config", scenario.files, "cluster/codec files (e.g. from octet calibrate)");
  rep->add_flag("--json", as_json, "JSON output");
  rep->callback([] { run_report(scenario, report, as_json); });

  add_curves_command(predict);

  auto* presets = predict->add_subcommand("presets", "List the built-in scenarios");
  presets->callback([] {
    for (const auto& n : pr::preset_names()) std::printf("%s\n", n.c_str());
  });

  static CalibrateArgs cal;
  auto* calibrate = app.add_subcommand(
      "calibrate", "Measure codec throughput (and, under mpirun, the link) for octet predict");
  calibrate->add_option("--type", cal.type, "codec data type");
  calibrate->add_option("--block", cal.block, "block size (0: the type's default)")
      ->check(at_least<uint32_t>(0));
  calibrate->add_option("--elements", cal.elements, "values per codec timing")
      ->check(at_least<size_t>(1));
  calibrate->add_option("--repeats", cal.repeats, "timings per measurement (best kept)")
      ->check(at_least(1));
  calibrate->add_option("--max-bytes", cal.max_bytes,
                        "largest message of the link measurement (8 to 1G; each rank holds two)");
  calibrate->add_option("--out", cal.out, "file to write (JSON, read by octet predict)");
  calibrate->callback([] { run_calibrate(cal); });
}

}  // namespace cli
}  // namespace octet
