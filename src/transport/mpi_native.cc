// MPI's fp32 collectives for the calls Octet leaves uncompressed. Blocking calls use MPI's
// blocking entry points: OpenMPI tunes those separately from the non-blocking ones (libnbc), and
// the plain call is the baseline a declined call must match.
#include "transport/mpi_native.h"

#include <climits>
#include <string>

#include "transport/mpi_error.h"

namespace octet {
namespace {

// A collective's request: MPI can neither cancel nor free one, so an abandoned request waits.
class CollectiveRequest : public TransportRequest {
 public:
  CollectiveRequest(MPI_Request request, const char* what) : request_(request), what_(what) {}
  ~CollectiveRequest() override {
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (!done_ && !finalized) PMPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    const int rc = PMPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
    done_ = flag || rc != MPI_SUCCESS;
    check_mpi(rc, what_);
    return done_;
  }
  void wait() override {
    if (done_) return;
    const int rc = PMPI_Wait(&request_, MPI_STATUS_IGNORE);
    done_ = true;
    check_mpi(rc, what_);
  }
  size_t bytes() const override { return 0; }

 private:
  MPI_Request request_;
  const char* what_;
  bool done_ = false;
};

class MpiNative : public NativeCollectives {
 public:
  explicit MpiNative(MPI_Comm comm) : comm_(comm) {}
  size_t max_count() const override { return static_cast<size_t>(INT_MAX); }

  // hot: on the quiet path of a declined call (collectives/policy.cc, ran_quiet_decline).
  [[gnu::hot]] void allreduce(const float* in, float* out, size_t n) override {
    check_mpi(PMPI_Allreduce(source(in, out), out, count(n), MPI_FLOAT, MPI_SUM, comm_),
              "MPI_Allreduce");
  }
  [[gnu::hot]] void reduce_scatter(const float* in, float* out, size_t n) override {
    check_mpi(PMPI_Reduce_scatter_block(source(in, out), out, count(n), MPI_FLOAT, MPI_SUM, comm_),
              "MPI_Reduce_scatter_block");
  }
  [[gnu::hot]] void allgather(const float* in, float* out, size_t n) override {
    check_mpi(PMPI_Allgather(source(in, out), count(n), MPI_FLOAT, out, count(n), MPI_FLOAT, comm_),
              "MPI_Allgather");
  }
  [[gnu::hot]] void broadcast(float* buffer, size_t n, int root) override {
    check_mpi(PMPI_Bcast(buffer, count(n), MPI_FLOAT, root, comm_), "MPI_Bcast");
  }

  TransportRequestPtr iallreduce(const float* in, float* out, size_t n) override {
    MPI_Request r;
    check_mpi(PMPI_Iallreduce(source(in, out), out, count(n), MPI_FLOAT, MPI_SUM, comm_, &r),
              "MPI_Iallreduce");
    return std::make_unique<CollectiveRequest>(r, "MPI_Iallreduce");
  }
  TransportRequestPtr ireduce_scatter(const float* in, float* out, size_t n) override {
    MPI_Request r;
    check_mpi(
        PMPI_Ireduce_scatter_block(source(in, out), out, count(n), MPI_FLOAT, MPI_SUM, comm_, &r),
        "MPI_Ireduce_scatter_block");
    return std::make_unique<CollectiveRequest>(r, "MPI_Ireduce_scatter_block");
  }
  TransportRequestPtr iallgather(const float* in, float* out, size_t n) override {
    MPI_Request r;
    check_mpi(
        PMPI_Iallgather(source(in, out), count(n), MPI_FLOAT, out, count(n), MPI_FLOAT, comm_, &r),
        "MPI_Iallgather");
    return std::make_unique<CollectiveRequest>(r, "MPI_Iallgather");
  }
  TransportRequestPtr ibroadcast(float* buffer, size_t n, int root) override {
    MPI_Request r;
    check_mpi(PMPI_Ibcast(buffer, count(n), MPI_FLOAT, root, comm_, &r), "MPI_Ibcast");
    return std::make_unique<CollectiveRequest>(r, "MPI_Ibcast");
  }

 private:
  static int count(size_t n) {
    if (n > static_cast<size_t>(INT_MAX))
      throw Error(ErrorCode::kInvalidArgument, "more elements than one MPI call takes");
    return static_cast<int>(n);
  }
  // Octet's in-place conventions (in == out or null; allgather's input then already sits at
  // out[rank * count]) to MPI_IN_PLACE.
  static const void* source(const float* in, const float* out) {
    return (in == nullptr || in == out) ? MPI_IN_PLACE : static_cast<const void*>(in);
  }
  MPI_Comm comm_;
};

}  // namespace

std::unique_ptr<NativeCollectives> make_mpi_native(MPI_Comm comm) {
  return std::make_unique<MpiNative>(comm);
}

}  // namespace octet
