// sum_over_ranks (train/approx_error.h): the one part of the error sums that needs MPI.
#include <mpi.h>

#include <vector>

#include "train/approx_error.h"

namespace octet {
namespace train {

ErrorTable sum_over_ranks(const ErrorTable& local) {
  // Five doubles per key, in the map's (sorted, hence agreed) order; counts stay exact in a
  // double far beyond any run's size (2^53).
  std::vector<double> flat;
  for (const auto& [key, e] : local)
    flat.insert(flat.end(),
                {e.abs_sum, e.rel_sum, double(e.count), double(e.nonzero), e.original_sum});
  std::vector<double> total(flat.size());
  MPI_Allreduce(flat.data(), total.data(), int(flat.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  ErrorTable out;
  size_t i = 0;
  for (const auto& [key, e] : local) {
    out[key] = {total[i], total[i + 1], uint64_t(total[i + 2]), uint64_t(total[i + 3]),
                total[i + 4]};
    i += 5;
  }
  return out;
}

}  // namespace train
}  // namespace octet
