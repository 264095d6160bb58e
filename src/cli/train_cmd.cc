// octet train: data-parallel training of the paper's MLP on Fashion-MNIST under mpirun, one run
// per (seed, comm), gradients averaged by plain MPI (fp32) or Octet's allreduce (docs/training.md).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/mpi_session.h"
#include "cli/support.h"
#include "train/comm_spec.h"
#include "train/idx.h"
#include "train/report.h"
#include "train/trainer.h"

namespace octet {
namespace cli {
namespace {

struct TrainArgs {
  std::string model = "mlp", mode = "dp", comm = "fp32,dynamic", data = train::kDefaultDataDir;
  std::string json;
  int epochs = 1, batch = 128;
  size_t train_limit = 0, test_limit = 0;
  std::vector<uint64_t> seeds{1};
  float lr = 0.003f;
};

std::string command_line(const TrainArgs& a) {
  std::string seeds;
  for (uint64_t s : a.seeds) seeds += (seeds.empty() ? "" : ",") + std::to_string(s);
  return "octet train --model " + a.model + " --mode " + a.mode + " --comm " + a.comm +
         " --epochs " + std::to_string(a.epochs) + " --batch " + std::to_string(a.batch) +
         " --train-limit " + std::to_string(a.train_limit) + " --test-limit " +
         std::to_string(a.test_limit) + " --seeds " + seeds + " --lr " + std::to_string(a.lr) +
         " --data " + a.data;
}

void run_train(const TrainArgs& a) {
  MpiSession mpi;
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::vector<train::CommSpec> comms;
  train::Dataset data;
  train::TrainConfig config;
  config.epochs = a.epochs;
  config.batch = a.batch;
  config.optimizer.lr = a.lr;
  try {  // the same arguments and files on every rank: the same error
    comms = train::parse_comm_list(a.comm);
    data = train::load_fashion_mnist(a.data, a.train_limit, a.test_limit);
    train::check_config(data, config, ranks);
  } catch (const Error&) {
    mpi.rethrow_agreed();
  }
  if (mpi.rank() == 0)
    std::printf("octet train: %s, %d ranks, %zu train / %zu test samples, batch %d\n",
                a.model.c_str(), ranks, data.train.count, data.test.count, a.batch);
  std::vector<train::RunResult> runs;
  for (uint64_t seed : a.seeds)
    for (const train::CommSpec& comm : comms)
      runs.push_back(train::train_dp(data, config, comm, seed, [&](const train::RunResult& r) {
        if (mpi.rank() == 0) std::printf("%s\n", train::epoch_line(r).c_str());
        std::fflush(stdout);
      }));
  if (mpi.rank() != 0) return;
  std::printf("\n%s", train::summary_table(runs).c_str());
  if (!a.json.empty()) {
    write_file(a.json, train::to_json(runs, command_line(a)));
    std::printf("wrote %s\n", a.json.c_str());
  }
}

}  // namespace

void add_train_commands(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* c = app.add_subcommand(
      "train",
      "Train the paper's MLP on Fashion-MNIST under mpirun, gradients averaged in fp32 (MPI) or "
      "with Octet's 8-bit allreduce; one run per (seed, comm), compared in a table");
  c->add_option("--model", args->model, "network (this version: mlp, 784-1024-1024-10)")
      ->check(CLI::IsMember({"mlp"}));
  c->add_option("--mode", args->mode, "parallelism (this version: dp, data parallel)")
      ->check(CLI::IsMember({"dp"}));
  c->add_option("--comm", args->comm,
                "comma list run side by side: fp32 | <type>[+sr][+ef] (sr: stochastic "
                "rounding, ef: error feedback), e.g. fp32,dynamic,linear,dynamic4,dynamic+ef");
  c->add_option("--epochs", args->epochs, "passes over the training set")->check(at_least(1));
  c->add_option("--batch", args->batch, "global minibatch (split over the ranks)")
      ->check(at_least(1));
  c->add_option("--train-limit", args->train_limit, "use the first N training samples (0: all)")
      ->check(at_least<size_t>(0));
  c->add_option("--test-limit", args->test_limit, "use the first N test samples (0: all)")
      ->check(at_least<size_t>(0));
  c->add_option("--seeds", args->seeds, "comma list of seeds (init, dropout, order)")
      ->delimiter(',');
  c->add_option("--lr", args->lr, "RMSProp learning rate")->check(CLI::PositiveNumber);
  c->add_option("--data", args->data, "folder of the Fashion-MNIST idx files (plain or .gz)");
  c->add_option("--json", args->json, "write the runs as JSON to this file (atomically)");
  c->callback([args] { run_train(*args); });
}

}  // namespace cli
}  // namespace octet
