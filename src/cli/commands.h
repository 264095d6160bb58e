// Each area of the `octet` command line registers its subcommands here.
#pragma once

#include <CLI/CLI.hpp>

#include "octet/config.h"

namespace octet {
namespace cli {

// Thrown instead of an error that every rank of an MPI command met alike, on the ranks other
// than 0 (which reports it): main exits with status 1 without printing.
struct QuietFailure {};

void add_codec_commands(CLI::App& app);    // codec_cmd.cc: octet codec error|encode|decode
void add_predict_commands(CLI::App& app);  // predict_cmd.cc: octet predict ..., octet calibrate
#if OCTET_HAVE_MPI
void add_bench_commands(CLI::App& app);  // bench_cmd.cc: octet bench (under mpirun)
#endif
#if OCTET_HAVE_TRAIN
void add_train_commands(CLI::App& app);  // train_cmd.cc: octet train (under mpirun)
#endif

}  // namespace cli
}  // namespace octet
