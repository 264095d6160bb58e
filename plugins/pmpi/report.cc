// Per-operation, per-size-bucket statistics and the JSON report written at MPI_Finalize.
// Statistics live in fixed arrays so that merging ranks is two PMPI_Reduce calls.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "shim.h"

namespace octet_pmpi {
namespace {

// Bucket 0 holds empty messages; bucket k >= 1 holds sizes in [2^(k-1), 2^k - 1] bytes.
constexpr int kBuckets = 65;
// Merged across ranks with MAX: per-rank counters (equal on every rank of a communicator),
// the slowest rank's time and the worst error.
enum MaxField {
  kCalls,
  kCompressed,
  kBytesFp32,
  kBytesSent,
  kTime,
  kMaxAbs,
  kMaxRel,
  kSamples,
  kMaxFields
};
// Merged with SUM: the pieces of the RMS error over every rank's elements.
enum SumField { kSumSq, kElements, kSumFields };

double g_max[OCTET_SHIM_OP_COUNT][kBuckets][kMaxFields];
double g_sum[OCTET_SHIM_OP_COUNT][kBuckets][kSumFields];
std::mutex g_mutex;

int bucket_of(uint64_t bytes) {
  int k = 0;
  while (bytes) {
    ++k;
    bytes >>= 1;
  }
  return k;
}

nlohmann::json config_json(const octet_shim_config& c) {
  char ops[256];
  return {{"type", octet_data_type_to_name(c.type)},
          {"block", c.block},
          {"min_bytes", c.min_bytes},
          {"ops", octet_shim_ops_string(c.ops, ops, sizeof ops)},
          {"enabled", c.enable != 0},
          {"stochastic", c.stochastic != 0},
          {"error_feedback", c.error_feedback != 0},
          {"shadow", c.shadow != 0}};
}

// mx and sum point at one bucket's fields.
nlohmann::json bucket_json(const double* mx, const double* sum, int k) {
  const uint64_t lo = k == 0 ? 0 : uint64_t{1} << (k - 1);
  const uint64_t hi = k == 0 ? 0 : (k == 64 ? ~uint64_t{0} : (uint64_t{1} << k) - 1);
  const bool measured = mx[kSamples] > 0;
  auto error = [&](double v) { return measured ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"bucket_min_bytes", lo},
          {"bucket_max_bytes", hi},
          {"calls", static_cast<uint64_t>(mx[kCalls])},
          {"compressed_calls", static_cast<uint64_t>(mx[kCompressed])},
          {"bytes_fp32", static_cast<uint64_t>(mx[kBytesFp32])},
          {"bytes_sent", static_cast<uint64_t>(mx[kBytesSent])},
          {"time_s", mx[kTime]},
          {"max_abs_error", error(mx[kMaxAbs])},
          {"max_rel_error", error(mx[kMaxRel])},
          {"rms_error", error(sum[kElements] > 0 ? std::sqrt(sum[kSumSq] / sum[kElements]) : 0.0)},
          {"error_samples", static_cast<uint64_t>(mx[kSamples])}};
}

void write_json(const std::vector<double>& mx, const std::vector<double>& sum, int ranks) {
  nlohmann::json ops = nlohmann::json::object();
  for (int op = 0; op < OCTET_SHIM_OP_COUNT; ++op) {
    nlohmann::json list = nlohmann::json::array();
    for (int k = 0; k < kBuckets; ++k) {
      const size_t cell = static_cast<size_t>(op) * kBuckets + k;
      const double* m = &mx[cell * kMaxFields];
      if (m[kCalls] > 0) list.push_back(bucket_json(m, &sum[cell * kSumFields], k));
    }
    ops[octet_shim_op_name(static_cast<octet_shim_op>(op))] = list;
  }
  const nlohmann::json report = {{"octet_report_version", 1},
                                 {"ranks", ranks},
                                 {"config", config_json(state().config)},
                                 {"ops", ops}};
  std::ofstream out(state().config.report);
  out << report.dump(2) << "\n";
  out.close();
  if (!out)
    std::fprintf(stderr, "octet-pmpi: cannot write the report to %s\n", state().config.report);
}

}  // namespace

void record(const CallRecord& c) {
  if (!state().recording) return;
  const int k = bucket_of(c.message_bytes);
  std::lock_guard<std::mutex> lock(g_mutex);
  double* mx = g_max[c.op][k];
  mx[kCalls] += 1;
  mx[kCompressed] += c.compressed ? 1 : 0;
  mx[kBytesFp32] += static_cast<double>(c.message_bytes);
  mx[kBytesSent] += static_cast<double>(c.bytes_sent);
  mx[kTime] += c.seconds;
  if (!c.has_error) return;
  mx[kMaxAbs] = std::fmax(mx[kMaxAbs], c.max_abs_error);
  mx[kMaxRel] = std::fmax(mx[kMaxRel], c.max_rel_error);
  mx[kSamples] += 1;
  g_sum[c.op][k][kSumSq] += c.sum_sq_error;
  g_sum[c.op][k][kElements] += static_cast<double>(c.error_elements);
}

void write_report() {
  if (!state().recording) return;  // the same on every rank: the configuration was agreed
  constexpr int kMaxCount = OCTET_SHIM_OP_COUNT * kBuckets * kMaxFields;
  constexpr int kSumCount = OCTET_SHIM_OP_COUNT * kBuckets * kSumFields;
  std::vector<double> mx(kMaxCount), sum(kSumCount);
  std::lock_guard<std::mutex> lock(g_mutex);
  int rc =
      PMPI_Reduce(&g_max[0][0][0], mx.data(), kMaxCount, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rc == MPI_SUCCESS)
    rc =
        PMPI_Reduce(&g_sum[0][0][0], sum.data(), kSumCount, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    if (state().world_rank == 0) std::fprintf(stderr, "octet-pmpi: cannot gather the report\n");
    return;
  }
  if (state().world_rank == 0) write_json(mx, sum, state().world_size);
}

}  // namespace octet_pmpi
