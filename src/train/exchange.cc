#include "train/exchange.h"

#include <mpi.h>

#include <chrono>
#include <string>

#include "octet/collectives.h"
#include "octet/error.h"
#include "octet/transport_mpi.h"
#include "train/counting_transport.h"
#include "train/rng.h"

namespace octet {
namespace train {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(ErrorCode::kTransport, std::string(what) + " failed");
}

class MpiPending : public Pending {
 public:
  MpiPending(MPI_Request r, CommStats& stats) : request_(r), stats_(stats) {}
  ~MpiPending() override {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  bool test() override {
    const auto t = Clock::now();
    int done = 0;
    check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
    stats_.comm_seconds += since(t);
    return done != 0;
  }
  void wait() override {
    const auto t = Clock::now();
    check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    stats_.comm_seconds += since(t);
  }

 private:
  MPI_Request request_;
  CommStats& stats_;
};

// fp32: MPI_Iallgather and MPI_Ireduce_scatter_block, and for a blocking transfer MPI's blocking
// call. OpenMPI tunes the blocking calls apart from the non-blocking ones (libnbc), whose
// reduce_scatter_block reduces to one rank and scatters from it: 8.9 ms against 3.4 ms for the
// blocking call for 512 KiB on the emulated 4 x 1 Gbit/s cluster. Bytes are what a ring sends:
// P - 1 blocks.
class MpiExchange : public Exchange {
 public:
  MpiExchange() { MPI_Comm_size(MPI_COMM_WORLD, &size_); }
  void allgather(const float* in, float* out, size_t count, TransferTag) override {
    blocking(count, [&] {
      check_mpi(
          MPI_Allgather(in, int(count), MPI_FLOAT, out, int(count), MPI_FLOAT, MPI_COMM_WORLD),
          "MPI_Allgather");
    });
  }
  void reduce_scatter(const float* in, float* out, size_t count, TransferTag) override {
    blocking(count, [&] {
      check_mpi(MPI_Reduce_scatter_block(in, out, int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                "MPI_Reduce_scatter_block");
    });
  }
  std::unique_ptr<Pending> start_allgather(const float* in, float* out, size_t count,
                                           TransferTag) override {
    sync_point();
    const auto t = Clock::now();
    MPI_Request r;
    check_mpi(
        MPI_Iallgather(in, int(count), MPI_FLOAT, out, int(count), MPI_FLOAT, MPI_COMM_WORLD, &r),
        "MPI_Iallgather");
    return started(r, count, t);
  }
  std::unique_ptr<Pending> start_reduce_scatter(const float* in, float* out, size_t count,
                                                TransferTag) override {
    sync_point();
    const auto t = Clock::now();
    MPI_Request r;
    check_mpi(
        MPI_Ireduce_scatter_block(in, out, int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r),
        "MPI_Ireduce_scatter_block");
    return started(r, count, t);
  }
  CommStats transfer_stats() const override { return stats_; }
  bool exact() const override { return true; }

 private:
  template <typename F>
  void blocking(size_t count, F call) {
    sync_point();
    const auto t = Clock::now();
    call();
    stats_.bytes_sent += uint64_t(size_ - 1) * count * sizeof(float);
    stats_.comm_seconds += since(t);
  }
  std::unique_ptr<Pending> started(MPI_Request r, size_t count, Clock::time_point t) {
    stats_.bytes_sent += uint64_t(size_ - 1) * count * sizeof(float);
    stats_.comm_seconds += since(t);
    return std::make_unique<MpiPending>(r, stats_);
  }
  int size_ = 1;
  CommStats stats_;
};

// Octet: time inside the transport is communication, the rest of the calls the codec's.
class OctetPending : public Pending {
 public:
  OctetPending(Request r, const CountingTransport& transport, CommStats& stats)
      : request_(std::move(r)), transport_(transport), stats_(stats) {}
  bool test() override {
    return timed([&] { return request_.valid() ? request_.test() : true; });
  }
  void wait() override {
    timed([&] {
      if (request_.valid()) request_.wait();
      return true;
    });
  }

 private:
  template <typename F>
  bool timed(F f) {
    const double comm_before = transport_.counters().seconds;
    const auto t = Clock::now();
    const bool done = f();
    const double total = since(t), comm = transport_.counters().seconds - comm_before;
    stats_.comm_seconds += comm;
    stats_.codec_seconds += total > comm ? total - comm : 0.0;
    return done;
  }
  Request request_;
  const CountingTransport& transport_;
  CommStats& stats_;
};

class OctetExchange : public Exchange {
 public:
  OctetExchange(const CommSpec& spec, uint64_t seed)
      : transport_(std::make_shared<CountingTransport>(make_mpi_transport(MPI_COMM_WORLD))),
        comm_(transport_),
        options_(collective_options(spec)),
        ef_(spec.error_feedback),
        seed_(seed) {}
  std::unique_ptr<Pending> start_allgather(const float* in, float* out, size_t count,
                                           TransferTag tag) override {
    sync_point();
    return start(tag, "act",
                 [&](const CollectiveOptions& o) { return iallgather(comm_, in, out, count, o); });
  }
  std::unique_ptr<Pending> start_reduce_scatter(const float* in, float* out, size_t count,
                                                TransferTag tag) override {
    sync_point();
    return start(tag, "dact", [&](const CollectiveOptions& o) {
      return ireduce_scatter(comm_, in, out, count, o);
    });
  }
  CommStats transfer_stats() const override {
    CommStats s = stats_;
    s.bytes_sent = transport_->counters().bytes_sent;
    return s;
  }
  bool exact() const override { return false; }

 private:
  template <typename F>
  std::unique_ptr<Pending> start(TransferTag tag, const char* what, F f) {
    CollectiveOptions o = options_;
    o.codec.seed = stream_key({seed_, tag.step, uint64_t(tag.key), uint64_t(what[0])});
    if (!tag.train) o.codec.stochastic = false;
    if (ef_ && tag.train) o.error_feedback_key = std::string(what) + std::to_string(tag.key);
    const double comm_before = transport_->counters().seconds;
    const auto t = Clock::now();
    auto pending = std::make_unique<OctetPending>(f(o), *transport_, stats_);
    const double total = since(t), comm = transport_->counters().seconds - comm_before;
    stats_.comm_seconds += comm;
    stats_.codec_seconds += total > comm ? total - comm : 0.0;
    return pending;
  }
  std::shared_ptr<CountingTransport> transport_;
  Comm comm_;
  CollectiveOptions options_;
  bool ef_;
  uint64_t seed_;
  CommStats stats_;
};

}  // namespace

void Exchange::reduce_scatter_exact(const float* in, float* out, size_t count) {
  check_mpi(MPI_Reduce_scatter_block(in, out, int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
            "MPI_Reduce_scatter_block");
}

void Exchange::sync_point() {
  if (!barrier_) return;
  const auto t = Clock::now();
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  wait_seconds_ += since(t);
}

std::unique_ptr<Exchange> make_exchange(const CommSpec& spec, uint64_t seed, bool barrier) {
  std::unique_ptr<Exchange> e;
  if (spec.fp32)
    e = std::make_unique<MpiExchange>();
  else
    e = std::make_unique<OctetExchange>(spec, seed);
  e->set_barrier(barrier);
  return e;
}

}  // namespace train
}  // namespace octet
