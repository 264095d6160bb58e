#include "train/approx_error.h"

#include <cmath>

namespace octet {
namespace train {

void ErrorSum::add(const float* original, const float* received, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double e = std::fabs(double(received[i]) - double(original[i]));
    abs_sum += e;
    original_sum += std::fabs(double(original[i]));
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
  original_sum = original_sum >= 0 && o.original_sum >= 0 ? original_sum + o.original_sum : -1;
}

}  // namespace train
}  // namespace octet
