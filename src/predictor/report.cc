// Reads a shim report (octet_report_version 1) and says, per message-size bucket, whether the
// codec would make those calls faster on the given cluster.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "octet/error.h"
#include "predictor/internal.h"
#include "predictor/predictor.h"

namespace octet {
namespace predictor {
namespace {

using json = nlohmann::json;

constexpr double kMaxBytes = 18446744073709551616.0;  // 2^64: the shim's largest bucket
constexpr double kMaxCalls = 9007199254740992.0;      // 2^53: the shim counts in double

std::string limit(double max) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", max);
  return buf;
}

// A non-negative number no larger than `max`; a whole one when `whole`.
double field(const json& b, const std::string& key, const std::string& at, double max,
             bool whole = true) {
  if (!b.contains(key)) fail(at + "." + key, "missing");
  if (!b[key].is_number()) fail(at + "." + key, "expected a number");
  const double v = b[key].get<double>();
  if (!(v >= 0 && v <= max)) fail(at + "." + key, "must be >= 0 and at most " + limit(max));
  if (whole && v != std::floor(v)) fail(at + "." + key, "expected a whole number");
  return v;
}

// The bandwidth below which the compressed call is faster (same search as predict()).
double call_break_even(Collective op, double bytes, int ranks, const Link& link,
                       const CodecCost& codec) {
  auto gain = [&](double bw) {
    const Link l = with_bandwidth(link, bw);
    return collective_time(op, bytes, ranks, l, nullptr) -
           collective_time(op, bytes, ranks, l, &codec);
  };
  return break_even_bandwidth(gain);
}

BucketVerdict judge(const std::string& op, const json& b, const std::string& at, int ranks,
                    const Link& link, const CodecCost& codec) {
  BucketVerdict v;
  v.op = op;
  v.bucket_min_bytes = field(b, "bucket_min_bytes", at, kMaxBytes);
  v.bucket_max_bytes = field(b, "bucket_max_bytes", at, kMaxBytes);
  v.calls = field(b, "calls", at, kMaxCalls);
  const double bytes = field(b, "bytes_fp32", at, kMaxBytes);
  if (v.bucket_max_bytes < v.bucket_min_bytes) fail(at, "bucket_max_bytes < bucket_min_bytes");
  if (v.calls == 0) return v;
  v.message_bytes = bytes / v.calls;
  if (b.contains("time_s") && !b["time_s"].is_null())
    v.measured_s = field(b, "time_s", at, kMaxSeconds, false) / v.calls;
  const Collective c = parse_collective(op);
  v.fp32_s = collective_time(c, v.message_bytes, ranks, link, nullptr);
  v.int8_s = collective_time(c, v.message_bytes, ranks, link, &codec);
  v.pays_off = v.int8_s < v.fp32_s;
  v.break_even_Bps = call_break_even(c, v.message_bytes, ranks, link, codec);
  return v;
}

// The shim's settings, shown for reference: a type must be one of the codec's names.
void check_config(const json& j) {
  if (!j.contains("config")) return;
  const json& c = j["config"];
  if (!c.is_object()) fail("report.config", "expected an object");
  if (!c.contains("type")) return;
  if (!c["type"].is_string()) fail("report.config.type", "expected a string");
  try {
    parse_data_type(c["type"].get<std::string>());
  } catch (const Error& e) {
    fail("report.config.type", e.what());
  }
}

}  // namespace

ReportAnalysis analyze_report(const std::string& json_text, const Cluster& cluster,
                              const CodecCost& codec) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    fail("report", "not valid JSON: " + json_error_text(e));
  }
  if (!j.is_object()) fail("report", "expected a JSON object");
  if (!j.contains("octet_report_version") || j["octet_report_version"] != 1)
    fail("report.octet_report_version", "expected 1");
  check_config(j);
  ReportAnalysis out;
  if (!j.contains("ranks") || !j["ranks"].is_number()) fail("report.ranks", "expected a number");
  out.ranks = to_positive_int(j["ranks"].get<double>(), "report.ranks");
  if (!j.contains("ops") || !j["ops"].is_object()) fail("report.ops", "expected an object");
  const Link& link = bottleneck(cluster, out.ranks);
  for (auto it = j["ops"].begin(); it != j["ops"].end(); ++it) {
    const std::string at = "report.ops." + it.key();
    try {
      parse_collective(it.key());
    } catch (const Error& e) {
      fail(at, e.what());
    }
    if (!it.value().is_array()) fail(at, "expected an array of buckets");
    for (size_t i = 0; i < it.value().size(); ++i) {
      BucketVerdict v = judge(it.key(), it.value()[i], at + "[" + std::to_string(i) + "]",
                              out.ranks, link, codec);
      out.fp32_total_s += v.fp32_s * v.calls;
      out.int8_total_s += std::min(v.int8_s, v.fp32_s) * v.calls;
      out.buckets.push_back(v);
    }
  }
  return out;
}

}  // namespace predictor
}  // namespace octet
