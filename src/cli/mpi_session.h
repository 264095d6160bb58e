// MPI for the length of one command (octet bench, octet calibrate under mpirun).
#pragma once

#include <mpi.h>

#include <exception>

#include "cli/commands.h"
#include "cli/support.h"
#include "octet/error.h"

namespace octet {
namespace cli {

// Initialises MPI (MPI_THREAD_FUNNELED: Octet calls MPI from the calling thread only) unless it
// already is. Finalises what it initialised when the command succeeds, or fails with an error
// every rank met alike (rethrow_agreed); after any other error it leaves MPI alone, so that a
// rank failing on its own exits instead of waiting in MPI_Finalize for the others.
class MpiSession {
 public:
  MpiSession() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owner_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  }
  ~MpiSession() {
    if (owner_ && (agreed_ || std::uncaught_exceptions() == 0)) MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }

  // Call from a catch block when every rank caught the same octet::Error: rank 0 prints it, then
  // every rank waits for the others and exits quietly. (Were rank 0 to print after the others
  // exit, mpirun could end it, on their non-zero status, before its line is out.)
  [[noreturn]] void rethrow_agreed() {
    agreed_ = true;
    try {
      throw;
    } catch (const Error& e) {
      if (rank_ == 0) print_error(e);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    throw QuietFailure{};
  }

 private:
  bool owner_ = false, agreed_ = false;
  int rank_ = 0;
};

}  // namespace cli
}  // namespace octet
