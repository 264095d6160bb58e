// octet train: data-parallel, model-parallel and hybrid training of the paper's MLP or an
// AlexNet-style net on Fashion-MNIST under mpirun, one run per (seed, mode, comm), gradients and
// activations sent by plain MPI (fp32) or Octet's compressed collectives (docs/training.md).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/mpi_session.h"
#include "cli/support.h"
#include "predictor/predictor.h"
#include "train/comm_spec.h"
#include "train/idx.h"
#include "train/report.h"
#include "train/stem.h"
#include "train/trainer.h"

namespace octet {
namespace cli {
namespace {

struct TrainArgs {
  std::string model = "mlp", mode = "dp", comm = "fp32,dynamic", data = train::kDefaultDataDir;
  std::string json, svg;
  int epochs = 1, batch = 128, sub_batch = 16;
  size_t train_limit = 0, test_limit = 0;
  int seeds = 1;
  uint64_t first_seed = 1;
  float lr = 0.003f;
  bool barrier = false;
  std::vector<std::string> report;  // --report: files to combine instead of training
};

std::string command_line(const TrainArgs& a) {
  return "octet train --model " + a.model + " --mode " + a.mode + " --comm " + a.comm +
         " --epochs " + std::to_string(a.epochs) + " --batch " + std::to_string(a.batch) +
         " --sub-batch " + std::to_string(a.sub_batch) + " --train-limit " +
         std::to_string(a.train_limit) + " --test-limit " + std::to_string(a.test_limit) +
         " --seeds " + std::to_string(a.seeds) + " --seed " + std::to_string(a.first_seed) +
         " --lr " + std::to_string(a.lr) + " --data " + a.data + (a.barrier ? " --barrier" : "");
}

// The learning curves: one line chart per mode (the predictor's SVG writer), stacked in one SVG;
// a comm has the same colour in every chart.
std::string curves_svg(const std::vector<train::RunResult>& runs, int ranks) {
  static const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::vector<std::string> modes, comms;
  std::map<std::string, std::vector<predictor::Series>> by_mode;
  for (const train::Curve& c : train::learning_curves(runs)) {
    const std::string mode = c.label.substr(0, c.label.find(' ')),
                      comm = c.label.substr(mode.size() + 1);
    if (!by_mode.count(mode)) modes.push_back(mode);
    size_t colour = std::find(comms.begin(), comms.end(), comm) - comms.begin();
    if (colour == comms.size()) comms.push_back(comm);
    by_mode[mode].push_back({comm, palette[colour % 10], c.epochs, c.test_error_percent});
  }
  std::string charts, width = "0";
  double top = 0;
  for (const std::string& mode : modes) {
    std::string chart =
        predictor::render_svg("octet train --mode " + mode + ": test error per epoch, " +
                                  std::to_string(ranks) + " ranks, mean over seeds",
                              "epoch", "test error (%)", by_mode[mode], false);
    // Placed by a y attribute on its own <svg>; its width and height attributes give the size.
    auto attribute = [&](const char* name) {
      const size_t at = chart.find(std::string(name) + "=\"") + std::strlen(name) + 2;
      return chart.substr(at, chart.find('"', at) - at);
    };
    width = attribute("width");
    chart.insert(4, " y=\"" + std::to_string(int(top)) + "\"");
    top += std::stod(attribute("height"));
    charts += chart;
  }
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + width + "\" height=\"" +
         std::to_string(int(top)) + "\">\n" + charts + "</svg>\n";
}

// The tables of `runs`, then --json and --svg.
void finish(const TrainArgs& a, const std::vector<train::RunResult>& runs, int ranks,
            const std::string& command) {
  std::printf("\n%s", train::summary_table(runs).c_str());
  const std::string errors = train::error_table(runs);
  if (!errors.empty()) std::printf("\napproximation error of what was sent\n%s", errors.c_str());
  if (!a.json.empty()) {
    write_file(a.json, train::to_json(runs, command));
    std::printf("wrote %s\n", a.json.c_str());
  }
  if (!a.svg.empty()) {
    write_file(a.svg, curves_svg(runs, ranks));
    std::printf("wrote %s\n", a.svg.c_str());
  }
}

// --report: the runs of several --json files in one table, as if one command had made them (seeds
// of one comparison run as separate jobs, say). A (mode, comm, seed) in two files is an error:
// the paired differences and intervals would count it twice.
void report_runs(const TrainArgs& a) {
  std::vector<train::RunResult> runs;
  std::map<std::tuple<std::string, std::string, uint64_t>, std::string> seen;
  int ranks = 0;
  for (const std::string& file : a.report) {
    const Buffer bytes = read_file(file);
    for (train::RunResult& r : train::from_json(std::string(bytes.begin(), bytes.end()), file)) {
      const auto [it, fresh] = seen.emplace(std::make_tuple(r.mode, r.comm, r.seed), file);
      if (!fresh)
        throw Error(ErrorCode::kInvalidArgument, file + ": " + r.mode + " " + r.comm + " seed " +
                                                     std::to_string(r.seed) + " is in " +
                                                     it->second + " too");
      if (ranks && r.ranks != ranks)
        throw Error(ErrorCode::kInvalidArgument, file + ": runs of " + std::to_string(r.ranks) +
                                                     " ranks beside runs of " +
                                                     std::to_string(ranks));
      ranks = r.ranks;
      runs.push_back(std::move(r));
    }
  }
  std::printf("octet train --report: %zu runs from %zu files, %d ranks\n", runs.size(),
              a.report.size(), ranks);
  std::string command = "octet train --report";
  for (const std::string& f : a.report) command += " " + f;
  finish(a, runs, ranks, command);
}

void run_train(const TrainArgs& a) {
  if (!a.report.empty()) return report_runs(a);
  MpiSession mpi;
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::vector<train::CommSpec> comms;
  std::vector<std::string> modes;
  train::Dataset data;
  train::TrainConfig config;
  config.epochs = a.epochs;
  config.batch = a.batch;
  config.model = a.model;
  config.sub_batch = a.sub_batch;
  config.barrier = a.barrier;
  if (a.model == "alexnet") config.shape = train::alexnet_head();
  config.optimizer.lr = a.lr;
  try {  // the same arguments and files on every rank: the same error
    comms = train::parse_comm_list(a.comm);
    modes = train::parse_mode_list(a.mode);
    data = train::load_fashion_mnist(a.data, a.train_limit, a.test_limit);
    for (const std::string& mode : modes) {
      config.mode = mode;
      train::check_config(data, config, ranks);
    }
  } catch (const Error&) {
    mpi.rethrow_agreed();
  }
  if (mpi.rank() == 0)
    std::printf("octet train: %s, %d ranks, %zu train / %zu test samples, batch %d\n",
                a.model.c_str(), ranks, data.train.count, data.test.count, a.batch);
  std::vector<train::RunResult> runs;
  for (int i = 0; i < a.seeds; ++i)
    for (const std::string& mode : modes)
      for (const train::CommSpec& comm : comms) {
        config.mode = mode;
        const uint64_t seed = a.first_seed + uint64_t(i);
        runs.push_back(train::train_run(data, config, comm, seed, [&](const train::RunResult& r) {
          if (mpi.rank() == 0) std::printf("%s\n", train::epoch_line(r).c_str());
          std::fflush(stdout);
        }));
      }
  if (mpi.rank() != 0) return;
  finish(a, runs, ranks, command_line(a));
}

}  // namespace

void add_train_commands(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* c = app.add_subcommand(
      "train",
      "Train the paper's MLP or an AlexNet-style net on Fashion-MNIST under mpirun (data, model "
      "or hybrid parallel), sending in fp32 (MPI) or with Octet's 8-bit collectives; one run per "
      "(seed, mode, comm), compared in a table");
  c->add_option("--model", args->model,
                "network: mlp (784-1024-1024-10) or alexnet (convolutional stem, then "
                "1568-1024-1024-10)")
      ->check(CLI::IsMember({"mlp", "alexnet"}));
  c->add_option("--mode", args->mode,
                "comma list run side by side: dp (data parallel), mp (model parallel: each "
                "layer's outputs split over the ranks), hybrid (convolutions data parallel, "
                "fully connected layers model parallel over sub-batches)");
  c->add_option("--comm", args->comm,
                "comma list run side by side: fp32 | <type>[+sr][+ef] (sr: stochastic "
                "rounding, ef: error feedback), e.g. fp32,dynamic,linear,dynamic4,dynamic+ef");
  c->add_option("--epochs", args->epochs, "passes over the training set")->check(at_least(1));
  c->add_option("--batch", args->batch, "global minibatch (split over the ranks)")
      ->check(at_least(1));
  c->add_option("--sub-batch", args->sub_batch,
                "hybrid: samples of each rank's shard per sub-batch (transfers of the next "
                "overlap the compute of this one)")
      ->check(at_least(1));
  c->add_option("--train-limit", args->train_limit, "use the first N training samples (0: all)")
      ->check(at_least<size_t>(0));
  c->add_option("--test-limit", args->test_limit, "use the first N test samples (0: all)")
      ->check(at_least<size_t>(0));
  c->add_option("--seeds", args->seeds,
                "runs per (mode, comm), with seeds --seed, --seed + 1, ... (initialisation, "
                "dropout, order); the table gives a 95% interval over them")
      ->check(at_least(1));
  c->add_option("--seed", args->first_seed, "the first seed")->check(at_least<uint64_t>(0));
  c->add_option("--lr", args->lr, "RMSProp learning rate")->check(CLI::PositiveNumber);
  c->add_option("--data", args->data, "folder of the Fashion-MNIST idx files (plain or .gz)");
  c->add_option("--report", args->report,
                "instead of training, combine the runs of these --json files into one table (and "
                "--json/--svg): seeds of one comparison run as separate jobs")
      ->expected(1, -1);
  c->add_flag("--barrier", args->barrier,
              "mp and hybrid: a barrier before every transfer, timed apart as 'wait' (the ranks' "
              "imbalance), so that comm holds the transfers alone; the results stay the same");
  c->add_option("--json", args->json, "write the runs as JSON to this file (atomically)");
  c->add_option("--svg", args->svg,
                "write learning curves (test error per epoch, mean over seeds) as SVG to this "
                "file (atomically)");
  c->callback([args] { run_train(*args); });
}

}  // namespace cli
}  // namespace octet
