// Each cost term on its own: alpha-beta, overlap, the codec's size and time, ring collectives,
// and the step model built from them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "octet/collectives.h"
#include "octet/error.h"
#include "octet/transport.h"
#include "predictor/predictor.h"

namespace octet {
namespace predictor {
namespace {

Link link(double gbps, double latency_us) {
  Link l;
  l.bandwidth_Bps = gbps * 1e9;
  l.latency_s = latency_us * 1e-6;
  return l;
}

CodecCost codec(double enc_gbps, double dec_gbps) {
  CodecCost c;
  c.encode_Bps = enc_gbps * 1e9;
  c.decode_Bps = dec_gbps * 1e9;
  return c;
}

TEST(CostTest, AlphaBeta) {
  EXPECT_DOUBLE_EQ(transfer_time(link(1, 10), 1e6), 10e-6 + 1e-3);
  EXPECT_DOUBLE_EQ(transfer_time(link(1, 10), 0), 0.0);
}

TEST(CostTest, TableInterpolatesAndExtrapolates) {
  Link l;
  l.table = {{1000, 2e-6}, {2000, 3e-6}, {4000, 7e-6}};
  EXPECT_DOUBLE_EQ(transfer_time(l, 500), 2e-6);  // below the table: its first time
  EXPECT_DOUBLE_EQ(transfer_time(l, 1500), 2.5e-6);
  EXPECT_DOUBLE_EQ(transfer_time(l, 3000), 5e-6);
  EXPECT_DOUBLE_EQ(transfer_time(l, 6000), 11e-6);  // last segment's slope
  EXPECT_DOUBLE_EQ(with_bandwidth(l, 1e9).latency_s, 2e-6);
}

TEST(CostTest, Overlap) {
  EXPECT_DOUBLE_EQ(exposed_time(1.0, 0.4), 0.6);
  EXPECT_DOUBLE_EQ(exposed_time(1.0, 3.0), 0.0);
  EXPECT_DOUBLE_EQ(exposed_time(1.0, -1.0), 1.0);
}

TEST(CostTest, CompressionCost) {
  const CodecCost c = codec(10, 20);
  CodecOptions o;
  // Header + one scale per 2048-value block + one byte per value.
  EXPECT_DOUBLE_EQ(compressed_bytes(4.0 * 1e6, c), double(max_encoded_size(0, o)) + 4 * 489 + 1e6);
  // The payload the codec really writes for finite data.
  std::vector<float> x(100000, 1.5f);
  EXPECT_DOUBLE_EQ(compressed_bytes(4.0 * x.size(), c), double(encode(x, o).size()));
  EXPECT_LT(compressed_bytes(4e6, c), 1.01e6 + 1000);  // about a quarter, plus scales
  EXPECT_GT(compressed_bytes(4e6, c), 1e6);
  EXPECT_DOUBLE_EQ(encode_time(1e9, c), 0.1);
  EXPECT_DOUBLE_EQ(decode_time(1e9, c), 0.05);
}

TEST(CostTest, RingAllreduce) {
  const Link l = link(1, 10);
  const double n = 8e6;
  // 2(p-1) steps of n/p bytes.
  EXPECT_NEAR(collective_time(Collective::kAllreduce, n, 4, l, nullptr), 6 * (10e-6 + 2e-3), 1e-12);
  EXPECT_DOUBLE_EQ(collective_time(Collective::kAllreduce, n, 1, l, nullptr), 0.0);
  const CodecCost c = codec(10, 20);
  const double step = compressed_bytes(n / 4, c);
  const double link_s = 6 * (10e-6 + step / 1e9);
  // Encode n once, decode 2(p-1)/p n.
  const double codec_s = n / 10e9 + 1.5 * n / 20e9;
  // Steps of several chunks (eager messages): the codec runs beside the transfers, but for one
  // chunk's share.
  const double chunks = std::ceil(step / double(kMpiEagerBytes - kChunkHeaderRoom));
  ASSERT_GT(chunks, 1);
  EXPECT_NEAR(collective_time(Collective::kAllreduce, n, 4, l, &c),
              std::max(link_s, codec_s) + codec_s / chunks, 1e-12);
  const CodecCost slow_codec = codec(0.1, 0.2);  // now the codec is the longer one
  EXPECT_NEAR(collective_time(Collective::kAllreduce, n, 4, l, &slow_codec),
              100 * codec_s * (1 + 1 / chunks), 1e-12);
  EXPECT_NEAR(collective_time(Collective::kAllgather, n, 4, l, nullptr), 3 * (10e-6 + 2e-3), 1e-12);
  // Steps of one chunk overlap nothing: link plus codec. A fixed cost per call: 4 encodes and 6
  // decodes in a 4-rank allreduce.
  const double small = 4 * 16384;
  EXPECT_NEAR(
      collective_time(Collective::kAllreduce, small, 4, l, &c),
      6 * (10e-6 + compressed_bytes(small / 4, c) / 1e9) + small / 10e9 + 1.5 * small / 20e9,
      1e-12);
  CodecCost slow = c;
  slow.call_overhead_s = 1e-6;
  EXPECT_NEAR(collective_time(Collective::kAllreduce, small, 4, l, &slow) -
                  collective_time(Collective::kAllreduce, small, 4, l, &c),
              10e-6, 1e-12);
  EXPECT_NEAR(collective_time(Collective::kBcast, n, 4, l, nullptr), 2 * (10e-6 + 8e-3), 1e-12);
  EXPECT_THROW(collective_time(Collective::kAllreduce, n, 0, l, nullptr), Error);
  EXPECT_THROW(parse_collective("alltoall"), Error);
}

Scenario data_parallel(double bw_gbps) {
  Scenario s;
  s.workload.batch = 32;
  for (int i = 0; i < 4; ++i) {
    Layer l;
    l.params = 1e6;
    l.forward_s = 1e-3;
    l.backward_s = 2e-3;
    s.workload.layers.push_back(l);
  }
  s.cluster.gpus_per_node = 4;
  s.cluster.intra = link(bw_gbps, 5);
  s.codec = codec(50, 100);
  return s;
}

TEST(StepTest, OneGpuIsTheBaseline) {
  Scenario s = data_parallel(10);
  s.gpus = 1;
  const StepTime t = step_time(s, false);
  EXPECT_DOUBLE_EQ(t.step_s, 12e-3);
  EXPECT_DOUBLE_EQ(t.speedup, 1.0);
}

TEST(StepTest, OverlapHidesAllButTheLastGradient) {
  Scenario s = data_parallel(10);
  const Link& l = s.cluster.intra;
  const double c = collective_time(Collective::kAllreduce, 4e6, 4, l, nullptr);
  ASSERT_LT(c, 2e-3);  // each allreduce fits under one layer's backward
  EXPECT_NEAR(step_time(s, false).step_s, 12e-3 + c, 1e-12);
  s.workload.overlap = false;
  EXPECT_NEAR(step_time(s, false).step_s, 12e-3 + 4 * c, 1e-12);
}

TEST(StepTest, BreakEvenSeparatesTheRegimes) {
  const Prediction p = predict(data_parallel(10));
  ASSERT_GT(p.break_even_Bps, 0);
  ASSERT_TRUE(std::isfinite(p.break_even_Bps));
  const Scenario slow = data_parallel(p.break_even_Bps / 1e9 * 0.5);
  const Scenario fast = data_parallel(p.break_even_Bps / 1e9 * 2);
  EXPECT_LT(step_time(slow, true).step_s, step_time(slow, false).step_s);
  EXPECT_GT(step_time(fast, true).step_s, step_time(fast, false).step_s);
}

TEST(StepTest, ModelParallelSubBatches) {
  Scenario s = data_parallel(1);
  s.workload.layers[0].activations = 1000;
  s.workload.layers[1].parallel = Parallelism::kModel;
  s.workload.sub_batch = 32;  // 4 sub-batches on 4 GPUs
  const double c =
      collective_time(Collective::kAllgather, 1000 * 32 * 4.0, 4, s.cluster.intra, nullptr);
  const double fwd = 1e-3 / 4, bwd = 2e-3 / 4;  // one sub-batch of a quarter of the layer
  const double mp = 4 * (fwd + bwd) + 2 * c + 3 * (exposed_time(c, fwd) + exposed_time(c, bwd));
  const double dp_c = collective_time(Collective::kAllreduce, 4e6, 4, s.cluster.intra, nullptr);
  ASSERT_GT(dp_c, 2e-3);  // slow link: the allreduces queue up
  // Timeline: grads of layers 3, 2, 0 ready at 2, 4, 6 ms; link busy from 2 ms for 3 x dp_c.
  const double dp_end = std::max(6e-3, 2e-3 + 3 * dp_c);
  EXPECT_NEAR(step_time(s, false).step_s, 3e-3 + mp + dp_end, 1e-12);
}

// Points (1 ms, 0.5 ms) and (4 ms, 2 ms).
std::vector<StartDelay> two_start_points() {
  return {{1e-3, 0.5e-3}, {4e-3, 2e-3}};
}

TEST(StartDelayTest, LinearFromZeroThenFlat) {
  Cluster c;
  EXPECT_EQ(start_delay(c, 5e-3), 0);  // none measured
  c.start = two_start_points();
  EXPECT_EQ(start_delay(c, 0), 0);
  EXPECT_NEAR(start_delay(c, 0.5e-3), 0.25e-3, 1e-15);
  EXPECT_NEAR(start_delay(c, 1e-3), 0.5e-3, 1e-15);
  EXPECT_NEAR(start_delay(c, 2.5e-3), 1.25e-3, 1e-15);
  EXPECT_NEAR(start_delay(c, 10e-3), 2e-3, 1e-15);
  Scenario s = data_parallel(10);
  s.cluster.start = c.start;
  validate(s);
  s.cluster.start = {{2e-3, 1e-3}, {1e-3, 1e-3}};
  EXPECT_THROW(validate(s), Error);  // not ascending
  s.cluster.start = {{1e-3, -1e-3}};
  EXPECT_THROW(validate(s), Error);  // negative delay
}

TEST(StepTest, StartDelaysFollowComputation) {
  Scenario s = data_parallel(10);
  s.workload.overlap = false;
  const double plain = step_time(s, false).step_s;
  s.cluster.start = two_start_points();
  // Without overlap the allreduces follow the whole step's 12 ms of computation: one delay.
  StepTime t = step_time(s, false);
  EXPECT_NEAR(t.start_s, 2e-3, 1e-15);
  EXPECT_NEAR(t.step_s, plain + 2e-3, 1e-12);
  s.gpus = 1;  // nothing to exchange, nothing to wait for
  EXPECT_EQ(step_time(s, false).start_s, 0);
}

TEST(StepTest, ModelParallelLayerWithoutBackwardTransferOrOverlap) {
  Scenario s = data_parallel(1);
  for (Layer& l : s.workload.layers) l.params = 0;  // only the model-parallel transfers
  s.workload.layers[0].activations = 1000;
  s.workload.layers[1].parallel = Parallelism::kModel;
  s.workload.layers[1].backward_transfer = false;
  s.workload.layers[1].overlap = false;
  s.workload.sub_batch = 32;  // 4 sub-batches on 4 GPUs
  s.cluster.start = two_start_points();
  const double c =
      collective_time(Collective::kAllgather, 1000 * 32 * 4.0, 4, s.cluster.intra, nullptr);
  const double fwd = 1e-3 / 4, bwd = 2e-3 / 4;
  // Every sub-batch's forward gather waits for layer 0's forward (1 ms: a 0.5 ms delay), none
  // goes back, none overlaps.
  const StepTime t = step_time(s, false);
  EXPECT_NEAR(t.start_s, 4 * 0.5e-3, 1e-15);
  EXPECT_NEAR(t.comm_s, 4 * c, 1e-15);
  EXPECT_NEAR(t.step_s, 9e-3 + 4 * (fwd + bwd) + 4 * c + 4 * 0.5e-3, 1e-12);
}

TEST(StepTest, ValidationNamesTheField) {
  Scenario s = data_parallel(10);
  s.cluster.intra.bandwidth_Bps = 0;
  try {
    step_time(s, false);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("cluster.intra.bandwidth"), std::string::npos);
  }
  s = data_parallel(10);
  s.gpus = 5;
  EXPECT_THROW(step_time(s, false), Error);
}

TEST(SweepTest, MoreGpusMoreSpeedupWhileComputeBound) {
  Scenario s = data_parallel(100);
  s.cluster.nodes = 4;
  s.cluster.inter = link(100, 5);
  const auto pts = sweep(s, SweepVariable::kGpus, {1, 2, 4, 8});
  ASSERT_EQ(pts.size(), 4u);
  EXPECT_DOUBLE_EQ(pts[0].fp32, 1.0);
  for (size_t i = 1; i < pts.size(); ++i) EXPECT_GT(pts[i].fp32, pts[i - 1].fp32);
  EXPECT_THROW(sweep(s, SweepVariable::kGpus, {0}), Error);
  const auto msg = sweep(s, SweepVariable::kMessageSize, {1e3, 1e8});
  EXPECT_GT(msg[1].fp32, msg[0].fp32);  // latency dominates small messages
}

// The `auto` policy's curves from a calibration: the ring costs above at each size, indexed as
// policy.h indexes calls (reduce_scatter and allgather per rank), and a hierarchical curve only
// for an allreduce over several hosts with several ranks each.
TEST(PolicyCurvesTest, FromTheCostModel) {
  Cluster c;
  c.intra = link(10, 1);
  c.inter = link(0.125, 20);
  const CodecCost k = codec(2.5, 4);
  const PolicyCurves ar = policy_curves(c, k, octet::Collective::kAllreduce, 4, 2);
  ASSERT_FALSE(ar.bytes.empty());
  ASSERT_EQ(ar.hierarchical_seconds.size(), ar.bytes.size());
  const size_t last = ar.bytes.size() - 1;
  EXPECT_EQ(ar.plain_seconds[last],
            collective_time(Collective::kAllreduce, ar.bytes[last], 4, c.inter, nullptr));
  EXPECT_LT(ar.compressed_seconds[last], ar.plain_seconds[last]);         // a 1 Gbit/s link
  EXPECT_LT(ar.hierarchical_seconds[last], ar.compressed_seconds[last]);  // 2 ranks per host
  const PolicyCurves ag = policy_curves(c, k, octet::Collective::kAllgather, 4, 2);
  EXPECT_TRUE(ag.hierarchical_seconds.empty());
  EXPECT_EQ(ag.plain_seconds[0],
            collective_time(Collective::kAllgather, ag.bytes[0] * 4, 4, c.inter, nullptr));
  EXPECT_TRUE(
      policy_curves(c, k, octet::Collective::kAllreduce, 4, 4).hierarchical_seconds.empty());
  EXPECT_EQ(policy_curves(c, k, octet::Collective::kAllreduce, 4, 1).plain_seconds[0],
            collective_time(Collective::kAllreduce, 64, 4, c.intra, nullptr));
  EXPECT_THROW(policy_curves(c, k, octet::Collective::kAllreduce, 2, 3), Error);
}

}  // namespace
}  // namespace predictor
}  // namespace octet
