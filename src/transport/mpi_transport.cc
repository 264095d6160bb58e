// MPI transport over a duplicated communicator. Only PMPI_ entry points: a PMPI shim that
// intercepts MPI_* must neither recurse into itself nor count Octet's own traffic.
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "octet/transport_mpi.h"
#include "transport/mpi_native.h"
#include "transport/mpi_topology.h"

namespace octet {
namespace {

bool mpi_finalized() {
  int finalized = 0;
  PMPI_Finalized(&finalized);
  return finalized != 0;
}

[[noreturn]] void throw_mpi(int rc, const char* what, int peer) {
  int error_class = rc;
  PMPI_Error_class(rc, &error_class);
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  PMPI_Error_string(rc, text, &length);
  const std::string where = std::string(what) + " with rank " + std::to_string(peer) + ": ";
  if (error_class == MPI_ERR_TRUNCATE)
    throw Error(ErrorCode::kMismatch,
                where + "message larger than expected (ranks disagree on the operation): " + text);
  throw Error(ErrorCode::kTransport, where + text);
}

// Whether OpenMPI's ob1 layer carries this job's messages: it registers its performance
// variables (MPI_T) only when selected, and the selection is the same on every rank. Any other
// MPI or layer (UCX) answers false.
bool ob1_selected() {
  int provided = 0;
  if (PMPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return false;
  int count = 0;
  bool found = false;
  if (PMPI_T_pvar_get_num(&count) == MPI_SUCCESS)
    for (int i = 0; i < count && !found; ++i) {
      char name[256], desc[256];
      int name_len = sizeof name, desc_len = sizeof desc, verbosity, var_class, bind, readonly,
          continuous, atomic;
      MPI_Datatype type;
      MPI_T_enum enumtype;
      found =
          PMPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &type, &enumtype, desc,
                               &desc_len, &bind, &readonly, &continuous, &atomic) == MPI_SUCCESS &&
          std::strncmp(name, "pml_ob1_", 8) == 0;
    }
  PMPI_T_finalize();
  return found;
}

class MpiRequest : public TransportRequest {
 public:
  MpiRequest(MPI_Request request, bool receive, int peer, std::shared_ptr<const void> keep_alive)
      : request_(request), receive_(receive), peer_(peer), keep_alive_(std::move(keep_alive)) {}
  ~MpiRequest() override {
    if (done_ || request_ == MPI_REQUEST_NULL || mpi_finalized()) return;
    if (receive_) {  // nobody will read the buffer: cancel, then complete the cancelled request
      PMPI_Cancel(&request_);
      PMPI_Wait(&request_, MPI_STATUS_IGNORE);
    } else {  // OpenMPI cannot cancel sends: let it finish and keep its buffer alive for good
      PMPI_Request_free(&request_);
      if (keep_alive_) new std::shared_ptr<const void>(std::move(keep_alive_));
    }
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    MPI_Status status;
    const int rc = PMPI_Test(&request_, &flag, &status);
    if (rc != MPI_SUCCESS) fail(rc);
    if (flag) finish(status);
    return done_;
  }
  void wait() override {
    if (done_) return;
    MPI_Status status;
    const int rc = PMPI_Wait(&request_, &status);
    if (rc != MPI_SUCCESS) fail(rc);
    finish(status);
  }
  size_t bytes() const override { return bytes_; }

 private:
  [[noreturn]] void fail(int rc) {
    done_ = true;  // MPI has released the request
    throw_mpi(rc, receive_ ? "receive" : "send", peer_);
  }
  void finish(const MPI_Status& status) {
    done_ = true;
    keep_alive_.reset();
    if (!receive_) return;
    int count = 0;
    PMPI_Get_count(&status, MPI_BYTE, &count);
    bytes_ = static_cast<size_t>(count);
  }
  MPI_Request request_;
  bool receive_;
  int peer_;
  std::shared_ptr<const void> keep_alive_;
  bool done_ = false;
  size_t bytes_ = 0;
};

class MpiTransport : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm) {
    int initialized = 0;
    PMPI_Initialized(&initialized);
    if (!initialized || mpi_finalized())
      throw Error(ErrorCode::kUnavailable, "MPI is not initialised");
    int rc = PMPI_Comm_dup(comm, &comm_);
    if (rc != MPI_SUCCESS) throw_mpi(rc, "MPI_Comm_dup", -1);
    PMPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    PMPI_Comm_rank(comm_, &rank_);
    PMPI_Comm_size(comm_, &size_);
    void* value = nullptr;
    int flag = 0;
    PMPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &flag);
    max_tag_ = flag ? *static_cast<int*>(value) : 32767;
    native_ = make_mpi_native(comm_);
    hosts_ = mpi_host_ids(comm_);
    eager_bytes_ = ob1_selected() ? kMpiEagerBytes : kMpiSmallEagerBytes;
  }
  ~MpiTransport() override {
    if (!mpi_finalized()) PMPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int max_tag() const override { return max_tag_; }
  int host_of(int rank) const override { return hosts_[static_cast<size_t>(rank)]; }
  size_t eager_bytes() const override { return eager_bytes_; }

  TransportRequestPtr isend(const void* data, size_t bytes, int peer, int tag,
                            std::shared_ptr<const void> keep_alive) override {
    MPI_Request r = MPI_REQUEST_NULL;
    const int rc = PMPI_Isend(data, int_count(bytes), MPI_BYTE, peer, tag, comm_, &r);
    if (rc != MPI_SUCCESS) throw_mpi(rc, "send", peer);
    return std::make_unique<MpiRequest>(r, false, peer, std::move(keep_alive));
  }
  TransportRequestPtr irecv(void* data, size_t capacity, int peer, int tag) override {
    MPI_Request r = MPI_REQUEST_NULL;
    const int rc = PMPI_Irecv(data, int_count(capacity), MPI_BYTE, peer, tag, comm_, &r);
    if (rc != MPI_SUCCESS) throw_mpi(rc, "receive", peer);
    return std::make_unique<MpiRequest>(r, true, peer, nullptr);
  }
  NativeCollectives* native_collectives() override { return native_.get(); }
  void poll() override {
    int flag = 0;  // any MPI call drives OpenMPI's progress engine; Iprobe is the cheapest
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
  }

 private:
  static int int_count(size_t bytes) {
    if (bytes > static_cast<size_t>(INT_MAX))
      throw Error(ErrorCode::kInvalidArgument, "one MPI message is limited to 2 GiB");
    return static_cast<int>(bytes);
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, max_tag_ = 32767;
  std::unique_ptr<NativeCollectives> native_;
  std::vector<int> hosts_;  // host_of, computed once (collective) at construction
  size_t eager_bytes_ = kMpiSmallEagerBytes;
};

}  // namespace

std::shared_ptr<Transport> make_mpi_transport(MPI_Comm comm) {
  return std::make_shared<MpiTransport>(comm);
}

}  // namespace octet
