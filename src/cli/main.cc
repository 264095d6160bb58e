// `octet`: one binary, one subcommand per job. Errors print one line and exit non-zero.
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <thread>

#include "cli/commands.h"
#include "cli/support.h"
#include "octet/error.h"

namespace {

// The MPI rank the launcher gave this process, read before MPI is initialised (command-line
// errors are found before it is): 0 when not started by mpirun or srun.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = std::getenv(name);
    if (v == nullptr) continue;
    char* end = nullptr;
    errno = 0;
    const long rank = std::strtol(v, &end, 10);  // atoi's overflow is undefined
    return end != v && *end == '\0' && errno == 0 && rank >= 0 && rank <= INT_MAX
               ? static_cast<int>(rank)
               : 0;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Octet: 8-bit compressed communication for distributed deep learning"};
  app.set_version_flag("--version", OCTET_VERSION_STRING);
  app.require_subcommand(1);
  octet::cli::add_codec_commands(app);
  octet::cli::add_predict_commands(app);
#if OCTET_HAVE_MPI
  octet::cli::add_bench_commands(app);
#endif
#if OCTET_HAVE_TRAIN
  octet::cli::add_train_commands(app);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parses the same command line: rank 0 says what is wrong (or prints help). The
    // others wait a moment, so that mpirun does not end the job before rank 0 has printed.
    if (launcher_rank() == 0) return app.exit(e);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return e.get_exit_code();
  } catch (const octet::cli::QuietFailure&) {
    return 1;
  } catch (const octet::Error& e) {
    octet::cli::print_error(e);
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "octet: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "octet: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
