// The MLP split across ranks by output columns (`--mode mp`, and the fully connected part of
// `--mode hybrid`): rank r holds columns [begin(r), begin(r) + count(r)) of every layer's weights
// and bias, computes that slice of the layer's outputs for all n rows, and the ranks allgather
// the slices into the next layer's full input. Backward, rank r's slice of the output gradient
// gives a partial sum of the input gradient over all columns; a reduce_scatter hands each rank
// the summed columns of its own slice of the layer below. At one rank this is the Mlp's
// arithmetic, step for step (the test compares the parameters bit for bit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "train/approx_error.h"
#include "train/exchange.h"
#include "train/mlp.h"

namespace octet {
namespace train {

// `width` columns over `ranks` (at most `width`): nearly equal contiguous slices, none empty.
// Transfers use blocks of the largest slice (collectives need equal counts), padded with zeros.
struct ColumnSplit {
  int width = 0, ranks = 1;
  int block() const { return (width + ranks - 1) / ranks; }
  int begin(int r) const { return int(int64_t(width) * r / ranks); }
  int count(int r) const { return begin(r + 1) - begin(r); }
};

// blocks[r][i][0, block) = full[i][begin(r), +count(r)) then zeros, for n rows; and back.
void pack_columns(const ColumnSplit& s, const float* full, int n, float* blocks);
void unpack_columns(const ColumnSplit& s, const float* blocks, int n, float* full);

class ShardedMlp {
 public:
  // Initialises the whole Mlp(shape, seed) and keeps this rank's columns: the same start as dp.
  ShardedMlp(const MlpShape& shape, uint64_t seed, int rank, int ranks);

  int layers() const { return int(shape_.widths.size()) - 1; }
  const MlpShape& shape() const { return shape_; }
  std::vector<float>& grads() { return grads_; }

  // Forward and backward over n rows that every rank holds (x: n x widths[0]), dropout keyed as
  // in Mlp. grads() = loss_scale * gradient of this rank's slices (added to when `accumulate`).
  // When dx is not null it gets this rank's partial sum of the input gradient (n x widths[0],
  // through the input's dropout); summed over ranks it is loss_scale * d(sum of losses)/dx.
  // `measure`: also compare each reduce_scatter of input gradients with its exact fp32 sum (an
  // extra transfer, Exchange::reduce_scatter_exact) and add the difference to errors() under
  // "igrad layer <l>" (l >= 1: the gradient of layer l's input, that is of "act layer <l-1>").
  // Returns the sum of the n losses.
  double forward_backward(Exchange& ex, const float* x, const uint8_t* labels, int n,
                          uint64_t dropout_key, const uint64_t* keys, float loss_scale,
                          uint64_t step, bool accumulate = false, float* dx = nullptr,
                          bool measure = false);
  int count_errors(Exchange& ex, const float* x, const uint8_t* labels, int n);
  void rmsprop_step(const RmsProp& opt);

  // The whole parameters in Mlp's layout, on every rank (a collective, exact fp32).
  std::vector<float> full_params() const;
  // Approximation error of the activations this rank sent (training steps only) and, on
  // measured steps, of the input gradients it received.
  const ErrorTable& errors() const { return errors_; }
  // What one training pass over n rows would send per rank in fp32 (allgathers and
  // reduce_scatters as a ring does them): the reference for "saved".
  uint64_t fp32_bytes(int n) const;

 private:
  DenseView slice(int l) const;
  float* grad(int l) { return grads_.data() + offsets_[l]; }
  void forward(Exchange& ex, const float* x, int n, bool train, uint64_t dropout_key,
               const uint64_t* keys, uint64_t step);
  void exchange_outputs(Exchange& ex, int l, int n, TransferTag tag);
  void backward_input(Exchange& ex, int l, int n, uint64_t step, bool measure);
  void record_input_gradient_error(Exchange& ex, int l, int n);

  MlpShape shape_;
  int rank_, ranks_;
  std::vector<ColumnSplit> splits_;  // per layer, of its outputs
  std::vector<size_t> offsets_;      // of each layer's slice (weights then bias)
  std::vector<float> params_, grads_, mean_square_;
  std::vector<std::vector<float>> acts_, masks_;  // full inputs of each layer after dropout
  std::vector<float> out_, full_, sent_, received_, exact_, delta_, dy_, partial_, cols_;
  ErrorTable errors_;
};

}  // namespace train
}  // namespace octet
