#include "operations.h"

#include <mpi.h>

#include <algorithm>

namespace octet {
namespace bench {
namespace {

// Divides the fp32 baseline's sum by the rank count, as Octet's `average` does.
void average(float* out, size_t count, int size) {
  for (size_t i = 0; i < count; ++i) out[i] /= static_cast<float>(size);
}

class Allreduce : public BenchOp {
 public:
  using BenchOp::BenchOp;
  double busbw_factor() const override { return 2.0 * (size_ - 1) / size_; }
  bool identical_on_every_rank() const override { return true; }
  void run_octet(const float* in, float* out, size_t count) override {
    allreduce(comm_, in, out, count, options_);
  }
  void run_baseline(const float* in, float* out, size_t count) override {
    PMPI_Allreduce(in, out, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (options_.average) average(out, count, size_);
  }
  verify::Reference reference(const verify::Source& in, size_t count,
                              verify::Quantization q) const override {
    return verify::allreduce_reference(in, size_, count, q, options_.average);
  }
};

// reduce_scatter and allgather: the call's count is one rank's part of the tensor.
class PerRankPart : public BenchOp {
 public:
  using BenchOp::BenchOp;
  size_t count(size_t bytes) const override { return bytes / sizeof(float) / size_t(size_); }
  size_t row_bytes(size_t count) const override { return count * size_t(size_) * sizeof(float); }
  double busbw_factor() const override { return double(size_ - 1) / size_; }
};

class ReduceScatter : public PerRankPart {
 public:
  using PerRankPart::PerRankPart;
  size_t input_count(size_t count) const override { return count * size_t(size_); }
  void run_octet(const float* in, float* out, size_t count) override {
    reduce_scatter(comm_, in, out, count, options_);
  }
  void run_baseline(const float* in, float* out, size_t count) override {
    PMPI_Reduce_scatter_block(in, out, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (options_.average) average(out, count, size_);
  }
  verify::Reference reference(const verify::Source& in, size_t count,
                              verify::Quantization q) const override {
    return verify::reduce_scatter_reference(in, size_, rank_, count, q, options_.average);
  }
};

class Allgather : public PerRankPart {
 public:
  using PerRankPart::PerRankPart;
  size_t output_count(size_t count) const override { return count * size_t(size_); }
  bool identical_on_every_rank() const override { return true; }
  void run_octet(const float* in, float* out, size_t count) override {
    allgather(comm_, in, out, count, options_);
  }
  void run_baseline(const float* in, float* out, size_t count) override {
    const int n = static_cast<int>(count);
    PMPI_Allgather(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD);
  }
  verify::Reference reference(const verify::Source& in, size_t count,
                              verify::Quantization q) const override {
    return verify::allgather_reference(in, size_, count, q);
  }
};

// From rank 0, in place in the output buffer.
class Broadcast : public BenchOp {
 public:
  using BenchOp::BenchOp;
  double busbw_factor() const override { return 1.0; }
  bool identical_on_every_rank() const override { return true; }
  void prepare(const std::vector<float>& in, std::vector<float>& out) const override {
    if (rank_ == kRoot)
      out = in;
    else
      BenchOp::prepare(in, out);
  }
  void run_octet(const float*, float* out, size_t count) override {
    broadcast(comm_, out, count, kRoot, options_);
  }
  void run_baseline(const float*, float* out, size_t count) override {
    PMPI_Bcast(out, static_cast<int>(count), MPI_FLOAT, kRoot, MPI_COMM_WORLD);
  }
  verify::Reference reference(const verify::Source& in, size_t count,
                              verify::Quantization q) const override {
    return verify::broadcast_reference(in, size_, kRoot, count, q);
  }

 private:
  static constexpr int kRoot = 0;
};

// Every rank sends to the next and receives from the previous one (a ring shift).
class SendRecv : public BenchOp {
 public:
  using BenchOp::BenchOp;
  double busbw_factor() const override { return 1.0; }
  void run_octet(const float* in, float* out, size_t count) override {
    Request r = irecv(comm_, out, count, prev(), 0, options_);
    Request s = isend(comm_, in, count, next(), 0, options_);
    r.wait();
    s.wait();
  }
  void run_baseline(const float* in, float* out, size_t count) override {
    const int n = static_cast<int>(count);
    PMPI_Sendrecv(in, n, MPI_FLOAT, next(), 0, out, n, MPI_FLOAT, prev(), 0, MPI_COMM_WORLD,
                  MPI_STATUS_IGNORE);
  }
  verify::Reference reference(const verify::Source& in, size_t count,
                              verify::Quantization q) const override {
    return verify::send_recv_reference(in, prev(), count, q);
  }

 private:
  int next() const { return (rank_ + 1) % size_; }
  int prev() const { return (rank_ + size_ - 1) % size_; }
};

}  // namespace

void BenchOp::prepare(const std::vector<float>&, std::vector<float>& out) const {
  std::fill(out.begin(), out.end(), 0.0f);
}

std::unique_ptr<BenchOp> make_bench_op(Operation op, Comm& comm, const CollectiveOptions& options) {
  switch (op) {
    case Operation::kAllreduce:
      return std::make_unique<Allreduce>(comm, options);
    case Operation::kReduceScatter:
      return std::make_unique<ReduceScatter>(comm, options);
    case Operation::kAllgather:
      return std::make_unique<Allgather>(comm, options);
    case Operation::kBroadcast:
      return std::make_unique<Broadcast>(comm, options);
    case Operation::kSendRecv:
      return std::make_unique<SendRecv>(comm, options);
  }
  throw Error(ErrorCode::kInternal, "unknown bench operation");
}

}  // namespace bench
}  // namespace octet
