// The one door to OpenBLAS: row-major single-precision GEMM, run on the calling thread only.
#pragma once

namespace octet {
namespace train {

// Pins OpenBLAS to one thread (openblas_set_num_threads(1)): a BLAS thread pool would race the
// MPI ranks for cores, and a fixed thread count keeps every sum in the same order (bit-identical
// reruns). Called once before the first gemm; cheap to call again.
void blas_single_thread();

// C[m x n] = alpha * op(A) * op(B) + beta * C, all row-major with leading dimensions lda, ldb, ldc
// (op = transpose when trans_* is true).
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace train
}  // namespace octet
