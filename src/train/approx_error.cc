#include "train/approx_error.h"

#include <mpi.h>

#include <cmath>
#include <vector>

namespace octet {
namespace train {

void ErrorSum::add(const float* original, const float* received, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double e = std::fabs(double(received[i]) - double(original[i]));
    abs_sum += e;
    if (original[i] != 0.0f) {
      rel_sum += e / std::fabs(double(original[i]));
      ++nonzero;
    }
  }
  count += n;
}

void ErrorSum::merge(const ErrorSum& o) {
  abs_sum += o.abs_sum;
  rel_sum += o.rel_sum;
  count += o.count;
  nonzero += o.nonzero;
}

ErrorTable sum_over_ranks(const ErrorTable& local) {
  // Four doubles per key, in the map's (sorted, hence agreed) order; counts stay exact in a
  // double far beyond any run's size (2^53).
  std::vector<double> flat;
  for (const auto& [key, e] : local)
    flat.insert(flat.end(), {e.abs_sum, e.rel_sum, double(e.count), double(e.nonzero)});
  std::vector<double> total(flat.size());
  MPI_Allreduce(flat.data(), total.data(), int(flat.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  ErrorTable out;
  size_t i = 0;
  for (const auto& [key, e] : local) {
    out[key] = {total[i], total[i + 1], uint64_t(total[i + 2]), uint64_t(total[i + 3])};
    i += 4;
  }
  return out;
}

}  // namespace train
}  // namespace octet
