#include "train/reducer.h"

#include <mpi.h>

#include <chrono>
#include <string>
#include <vector>

#include "octet/collectives.h"
#include "octet/error.h"
#include "octet/transport_mpi.h"
#include "train/counting_transport.h"
#include "train/rng.h"

namespace octet {
namespace train {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Keys below kConvKey are fully connected layers, from kConvKey on the stem's stages.
std::string gradient_name(int key) {
  return key < kConvKey ? "grad layer " + std::to_string(key)
                        : "grad conv " + std::to_string(key - kConvKey);
}

class MpiReducer : public GradientReducer {
 public:
  MpiReducer() { MPI_Comm_size(MPI_COMM_WORLD, &size_); }
  void average(float* grad, size_t count, int, uint64_t, bool) override {
    const auto start = std::chrono::steady_clock::now();
    if (MPI_Allreduce(MPI_IN_PLACE, grad, int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
      throw Error(ErrorCode::kTransport, "MPI_Allreduce failed");
    const float inv = 1.0f / float(size_);
    for (size_t i = 0; i < count; ++i) grad[i] *= inv;
    stats_.comm_seconds += seconds_since(start);
    stats_.bytes_sent += uint64_t(2.0 * (size_ - 1) / size_ * 4.0 * double(count));
  }
  CommStats stats() const override { return stats_; }
  const ErrorTable& errors() const override { return errors_; }

 private:
  int size_ = 1;
  CommStats stats_;
  ErrorTable errors_;
};

class OctetReducer : public GradientReducer {
 public:
  OctetReducer(const CommSpec& spec, uint64_t seed)
      : transport_(std::make_shared<CountingTransport>(make_mpi_transport(MPI_COMM_WORLD))),
        comm_(transport_),
        seed_(seed) {
    options_ = collective_options(spec);
    options_.average = true;
    options_.policy = Policy::kAlways;  // the run compares types: every call is compressed
    ef_ = spec.error_feedback;
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  void average(float* grad, size_t count, int key, uint64_t step, bool measure) override {
    if (measure) measured([&] { exact_average(grad, count); });
    CollectiveOptions o = options_;
    o.codec.seed = stream_key({seed_, step, uint64_t(key)});
    if (ef_) o.error_feedback_key = "grad" + std::to_string(key);
    const double comm_before = transport_->counters().seconds;
    const auto start = std::chrono::steady_clock::now();
    allreduce(comm_, grad, grad, count, o);
    const double total = seconds_since(start);
    const double comm = transport_->counters().seconds - comm_before;
    comm_seconds_ += comm;
    codec_seconds_ += total > comm ? total - comm : 0.0;
    if (measure) measured([&] { errors_[gradient_name(key)].add(exact_.data(), grad, count); });
  }
  CommStats stats() const override {
    return {transport_->counters().bytes_sent, comm_seconds_, codec_seconds_, measure_seconds_};
  }
  const ErrorTable& errors() const override { return errors_; }

 private:
  std::shared_ptr<CountingTransport> transport_;
  Comm comm_;
  CollectiveOptions options_;
  uint64_t seed_;
  bool ef_ = false;
  int size_ = 1;
  double comm_seconds_ = 0, codec_seconds_ = 0, measure_seconds_ = 0;
  std::vector<float> exact_;
  ErrorTable errors_;

  template <typename F>
  void measured(F f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    measure_seconds_ += seconds_since(start);
  }

  void exact_average(const float* grad, size_t count) {
    exact_.resize(count);
    if (MPI_Allreduce(grad, exact_.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
      throw Error(ErrorCode::kTransport, "MPI_Allreduce failed");
    const float inv = 1.0f / float(size_);  // as the fp32 path averages
    for (float& v : exact_) v *= inv;
  }
};

}  // namespace

CollectiveOptions collective_options(const CommSpec& spec) {
  CollectiveOptions o;
  o.codec.type = spec.type;
  o.codec.stochastic = spec.stochastic;
  o.codec.threads = 1;
  o.threads = 1;
  // Every 8-bit run compresses every call: the point is what 8-bit does to learning, and `auto`
  // would send some calls as fp32 (and measure before deciding, which costs bytes and time).
  o.policy = Policy::kAlways;
  return o;
}

std::unique_ptr<GradientReducer> make_reducer(const CommSpec& spec, uint64_t seed) {
  if (spec.fp32) return std::make_unique<MpiReducer>();
  return std::make_unique<OctetReducer>(spec, seed);
}

}  // namespace train
}  // namespace octet
