// Shim reports (per-bucket verdicts), the SVG writer, and calibration (codec, links).
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "octet/error.h"
#include "octet/transport.h"
#include "predictor/predictor.h"

namespace octet {
namespace predictor {
namespace {

Cluster slow_cluster(double gbps) {
  Cluster c;
  c.gpus_per_node = 1;
  c.nodes = 4;
  c.intra.bandwidth_Bps = 100e9;
  c.inter.bandwidth_Bps = gbps * 1e9;
  c.inter.latency_s = 20e-6;
  return c;
}

CodecCost fast_codec() {
  CodecCost k;
  k.encode_Bps = 10e9;
  k.decode_Bps = 20e9;
  k.call_overhead_s = 5e-6;  // a kernel launch per call
  return k;
}

const char* kReport = R"({
  "octet_report_version": 1, "ranks": 4,
  "config": {"type": "dynamic", "block": 2048},
  "ops": {
    "allreduce": [
      {"bucket_min_bytes": 1024, "bucket_max_bytes": 2047, "calls": 10, "compressed_calls": 0,
       "bytes_fp32": 10240, "bytes_sent": 10240, "time_s": 0.001,
       "max_abs_error": null, "max_rel_error": null, "rms_error": null, "error_samples": 0},
      {"bucket_min_bytes": 67108864, "bucket_max_bytes": 134217727, "calls": 2,
       "compressed_calls": 2, "bytes_fp32": 134217728, "bytes_sent": 33600000, "time_s": 0.5,
       "max_abs_error": 1e-3, "max_rel_error": 0.01, "rms_error": 2e-4, "error_samples": 10}
    ],
    "bcast": []
  }
})";

TEST(ReportTest, SmallMessagesStayFp32LargeOnesCompress) {
  const ReportAnalysis r = analyze_report(kReport, slow_cluster(1), fast_codec());
  EXPECT_EQ(r.ranks, 4);
  ASSERT_EQ(r.buckets.size(), 2u);
  EXPECT_FALSE(r.buckets[0].pays_off);  // 1 KiB: the codec's per-call cost exceeds the saving
  EXPECT_TRUE(r.buckets[1].pays_off);   // 64 MiB on 1 GB/s: bytes dominate
  EXPECT_DOUBLE_EQ(r.buckets[1].message_bytes, 67108864);
  EXPECT_DOUBLE_EQ(r.buckets[1].measured_s, 0.25);
  EXPECT_GT(r.buckets[1].break_even_Bps, 1e9);
  EXPECT_LT(r.int8_total_s, r.fp32_total_s);
  // On a fast link the large bucket no longer pays.
  const ReportAnalysis fast = analyze_report(kReport, slow_cluster(1000), fast_codec());
  EXPECT_FALSE(fast.buckets[1].pays_off);
}

TEST(ReportTest, BadReportsAreRejected) {
  const Cluster c = slow_cluster(1);
  EXPECT_THROW(analyze_report("{", c, fast_codec()), Error);
  EXPECT_THROW(
      analyze_report(R"({"octet_report_version": 2, "ranks": 4, "ops": {}})", c, fast_codec()),
      Error);
  EXPECT_THROW(
      analyze_report(R"({"octet_report_version": 1, "ranks": 0, "ops": {}})", c, fast_codec()),
      Error);
  try {
    analyze_report(R"({"octet_report_version": 1, "ranks": 2, "ops": {"allreduce": [
        {"bucket_min_bytes": 8, "bucket_max_bytes": 15, "calls": 1}]}})",
                   c, fast_codec());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("report.ops.allreduce[0].bytes_fp32"), std::string::npos);
  }
  EXPECT_THROW(analyze_report(R"({"octet_report_version": 1, "ranks": 2, "ops": {"alltoall": []}})",
                              c, fast_codec()),
               Error);
}

// The report's message of analyzing `text`, or "" when it is accepted.
std::string report_error(const std::string& text) {
  try {
    analyze_report(text, slow_cluster(1), fast_codec());
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(ReportTest, NumbersAndNamesAreChecked) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string s = kReport;
    return s.replace(s.find(from), from.size(), to);
  };
  EXPECT_EQ(report_error(kReport), "");
  EXPECT_NE(
      report_error(with("\"dynamic\"", "\"foo\"")).find("report.config.type: unknown data type"),
      std::string::npos);
  EXPECT_NE(report_error(with("\"ranks\": 4", "\"ranks\": 4294967300")).find("report.ranks"),
            std::string::npos);  // not read as 4 (an int's wrap-around)
  EXPECT_NE(report_error(with("\"calls\": 10", "\"calls\": 10.5")).find("calls: expected a whole"),
            std::string::npos);
  EXPECT_NE(report_error(with("\"calls\": 10", "\"calls\": 1e300")).find("calls: must be >= 0"),
            std::string::npos);
  EXPECT_NE(report_error(with("\"time_s\": 0.001", "\"time_s\": -1")).find("time_s: must be >= 0"),
            std::string::npos);
  EXPECT_NE(report_error(with("\"time_s\": 0.001", "\"time_s\": \"x\"")).find("time_s: expected a"),
            std::string::npos);
  EXPECT_EQ(report_error("{").find("[json.exception"), std::string::npos);
}

TEST(SvgTest, PolylinesAxesLegend) {
  Series a{"32-bit", "#1f77b4", {1, 2, 4, 8}, {1, 1.9, 3.5, 6}};
  Series b{"dynamic <8-bit>", "#d62728", {1, 2, 4, 8}, {1, 1.95, 3.8, 7.2}};
  const std::string svg = render_svg("t", "GPUs", "speedup", {a, b}, true);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1))
    ++lines;
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(svg.find("dynamic &lt;8-bit&gt;"), std::string::npos);  // escaped legend text
  EXPECT_NE(svg.find("(log scale)"), std::string::npos);
  Series bad{"x", "#000", {1, 2}, {1}};
  EXPECT_THROW(render_svg("t", "x", "y", {bad}, false), Error);
  Series nonpositive{"x", "#000", {0, 1}, {1, 2}};
  EXPECT_THROW(render_svg("t", "x", "y", {nonpositive}, true), Error);
}

TEST(CalibrateTest, CodecThroughputIsMeasured) {
  const CodecCost c = measure_codec(DataType::kDynamic, 0, 1 << 16, 2);
  EXPECT_GT(c.encode_Bps, 0);
  EXPECT_GT(c.decode_Bps, 0);
  EXPECT_THROW(measure_codec(DataType::kDynamic, 100, 1024, 1), Error);  // not a power of two
  EXPECT_THROW(measure_codec(DataType::kDynamic, 0, 0, 1), Error);
  // Together with other ranks: a barrier before each repetition and one ending it, per direction.
  int barriers = 0;
  const CodecCost t = measure_codec(DataType::kDynamic, 0, 1 << 14, 3, [&] { ++barriers; });
  EXPECT_EQ(barriers, 2 * 2 * 3);
  EXPECT_GT(t.encode_Bps, 0);
  EXPECT_GT(t.decode_Bps, 0);
  EXPECT_THROW(fit_link({{8, 1e-6}}), Error);
}

// measure_links on ranks run as threads over the thread transport: node_of -> rank 0's cluster.
std::vector<std::unique_ptr<Cluster>> links_on_threads(const std::vector<int>& node_of,
                                                       size_t max_bytes) {
  const int p = static_cast<int>(node_of.size());
  auto transports = make_thread_transports(p);
  std::vector<std::unique_ptr<Cluster>> clusters(p);
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      std::vector<char> buffer(max_bytes);
      clusters[r] = measure_links(*transports[r], node_of, buffer.data(), buffer.size());
    });
  for (auto& t : threads) t.join();
  return clusters;
}

TEST(CalibrateTest, LinksAreMeasuredThroughATransport) {
  // Two nodes of two ranks: ring steps; messages up to half the buffer.
  auto c = links_on_threads({0, 0, 1, 1}, 2 * 8192);
  ASSERT_TRUE(c[0]);
  for (int r = 1; r < 4; ++r) EXPECT_FALSE(c[r]) << r;
  EXPECT_EQ(c[0]->gpus_per_node, 2);
  EXPECT_EQ(c[0]->nodes, 2);
  for (const Link* link : {&c[0]->intra, &c[0]->inter}) {
    ASSERT_EQ(link->table.size(), 6u);  // 8, 32, ..., 8192 bytes
    EXPECT_EQ(link->table.back().bytes, 8192);
    EXPECT_GT(link->latency_s, 0);
    EXPECT_GT(link->bandwidth_Bps, 0);
  }

  c = links_on_threads({0, 1}, 2 * 64);  // one rank per node: the inter-node link stands for both
  ASSERT_TRUE(c[0]);
  EXPECT_EQ(c[0]->nodes, 2);
  EXPECT_EQ(c[0]->intra.table.size(), 2u);  // 8 and 32 bytes
  EXPECT_EQ(c[0]->intra.latency_s, c[0]->inter.latency_s);

  // Nodes of different sizes (three ranks, then three of one): rank 0's ping-pong with a rank of
  // its node and one of another; the other ranks wait for nothing.
  c = links_on_threads({0, 0, 0, 3, 4, 5}, 2 * 512);
  ASSERT_TRUE(c[0]);
  EXPECT_EQ(c[0]->gpus_per_node, 3);
  for (const Link* link : {&c[0]->intra, &c[0]->inter}) {
    ASSERT_EQ(link->table.size(), 4u);  // 8, 32, 128, 512 bytes
    EXPECT_GT(link->bandwidth_Bps, 0);
  }
}

TEST(CalibrateTest, NodesOfEqualSizeMeasureEveryRankInRingSteps) {
  // Three nodes of two ranks, interleaved: the ring within a node and across the nodes pairs
  // ranks by node, not by rank number (a wrong pairing deadlocks or mismatches sizes).
  const auto c = links_on_threads({0, 1, 2, 0, 1, 2}, 2 * 2048);
  ASSERT_TRUE(c[0]);
  for (int r = 1; r < 6; ++r) EXPECT_FALSE(c[r]) << r;
  EXPECT_EQ(c[0]->gpus_per_node, 2);
  EXPECT_EQ(c[0]->nodes, 3);
  EXPECT_EQ(c[0]->intra.table.size(), 5u);
  EXPECT_EQ(c[0]->inter.table.size(), 5u);
}

TEST(CalibrateTest, StartDelaysOnEveryRank) {
  // Three ranks as threads: each computes 0.2 ms, then 1 ms, before exchanging with the others.
  const int p = 3;
  auto transports = make_thread_transports(p);
  std::vector<std::vector<StartDelay>> points(p);
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      points[r] = measure_start_delays(*transports[r], {0.2e-3, 1e-3});
    });
  for (auto& t : threads) t.join();
  ASSERT_EQ(points[0].size(), 2u);
  for (int r = 1; r < p; ++r) EXPECT_TRUE(points[r].empty()) << r;
  // Ascending (a point that is not would be dropped): 5x the computation takes longer, whatever
  // else runs on the machine.
  EXPECT_GT(points[0][0].after_s, 0);
  EXPECT_GT(points[0][1].after_s, points[0][0].after_s);
  for (const StartDelay& d : points[0]) EXPECT_GE(d.delay_s, 0);
  EXPECT_THROW(measure_start_delays(*make_thread_transports(1)[0], {0}), Error);
}

}  // namespace
}  // namespace predictor
}  // namespace octet
