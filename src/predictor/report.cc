// Reads a shim report (octet_report_version 1) and says, per message-size bucket, whether the
// codec would make those calls faster on the given cluster.
#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "octet/error.h"
#include "predictor/predictor.h"
#include "predictor/internal.h"

namespace octet {
namespace predictor {
namespace {

using json = nlohmann::json;

double field(const json& b, const std::string& key, const std::string& at) {
  if (!b.contains(key)) fail(at + "." + key, "missing");
  if (!b[key].is_number()) fail(at + "." + key, "expected a number");
  const double v = b[key].get<double>();
  if (!(v >= 0) || !std::isfinite(v)) fail(at + "." + key, "must be >= 0");
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
  v.bucket_min_bytes = field(b, "bucket_min_bytes", at);
  v.bucket_max_bytes = field(b, "bucket_max_bytes", at);
  v.calls = field(b, "calls", at);
  const double bytes = field(b, "bytes_fp32", at);
  if (v.bucket_max_bytes < v.bucket_min_bytes) fail(at, "bucket_max_bytes < bucket_min_bytes");
  if (v.calls == 0) return v;
  v.message_bytes = bytes / v.calls;
  if (b.contains("time_s") && b["time_s"].is_number())
    v.measured_s = b["time_s"].get<double>() / v.calls;
  const Collective c = parse_collective(op);
  v.fp32_s = collective_time(c, v.message_bytes, ranks, link, nullptr);
  v.int8_s = collective_time(c, v.message_bytes, ranks, link, &codec);
  v.pays_off = v.int8_s < v.fp32_s;
  v.break_even_Bps = call_break_even(c, v.message_bytes, ranks, link, codec);
  return v;
}

}  // namespace

ReportAnalysis analyze_report(const std::string& json_text, const Cluster& cluster,
                              const CodecCost& codec) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    fail("report", std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) fail("report", "expected a JSON object");
  if (!j.contains("octet_report_version") || j["octet_report_version"] != 1)
    fail("report.octet_report_version", "expected 1");
  ReportAnalysis out;
  if (!j.contains("ranks") || !j["ranks"].is_number_integer() || j["ranks"].get<int>() < 1)
    fail("report.ranks", "expected a positive integer");
  out.ranks = j["ranks"].get<int>();
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
