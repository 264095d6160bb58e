// The operations `octet bench` measures, one class each behind one interface: what a row of a
// given size runs (Octet's call and the fp32 PMPI baseline), the buffers it needs, what it must
// produce (verify/verify.h) and nccl-tests' bus-bandwidth factor. collective_bench.cc measures.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "collective_bench.h"
#include "octet/collectives.h"
#include "verify/verify.h"

namespace octet {
namespace bench {

class BenchOp {
 public:
  BenchOp(Comm& comm, const CollectiveOptions& options)
      : comm_(comm), options_(options), rank_(comm.rank()), size_(comm.size()) {}
  virtual ~BenchOp() = default;

  // The call's count argument for a row of `bytes` fp32 bytes (0: the row is skipped).
  virtual size_t count(size_t bytes) const { return bytes / sizeof(float); }
  // The fp32 bytes the row reports: the whole tensor the operation moves.
  virtual size_t row_bytes(size_t count) const { return count * sizeof(float); }
  // Elements of this rank's input and output buffers.
  virtual size_t input_count(size_t count) const { return count; }
  virtual size_t output_count(size_t count) const { return count; }
  // busbw = algbw * factor (nccl-tests' convention: the per-link load of the optimal algorithm).
  virtual double busbw_factor() const = 0;
  // True when every rank must end with bit-identical results.
  virtual bool identical_on_every_rank() const { return false; }

  // Sets the output buffer before a call: zeros (a broadcast root: its input).
  virtual void prepare(const std::vector<float>& in, std::vector<float>& out) const;
  virtual void run_octet(const float* in, float* out, size_t count) = 0;
  virtual void run_baseline(const float* in, float* out, size_t count) = 0;
  // This rank's expected output and its bound, with each rank's input read from `in`.
  virtual verify::Reference reference(const verify::Source& in, size_t count,
                                      verify::Quantization q) const = 0;

 protected:
  Comm& comm_;
  const CollectiveOptions& options_;
  const int rank_, size_;
};

// `options` must outlive the operation.
std::unique_ptr<BenchOp> make_bench_op(Operation op, Comm& comm, const CollectiveOptions& options);

}  // namespace bench
}  // namespace octet
