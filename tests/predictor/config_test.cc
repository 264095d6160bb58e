// Scenario files: units, strict schema, clear errors; presets and docs/examples load.
#include <string>

#include <gtest/gtest.h>

#include "octet/error.h"
#include "predictor/predictor.h"

namespace octet {
namespace predictor {
namespace {

// The error message of parsing `text`, or "" when it parses.
std::string error_of(const std::string& text, bool toml = true) {
  try {
    parse_scenario(text, toml, "test");
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
}

const char* kGood = R"toml(
gpus = 2
[workload]
batch = 32
layers = [ { name = "a", params = 1000, forward = "1 ms", backward = "2 ms" } ]
[cluster]
gpus_per_node = 2
nodes = 1
intra = { bandwidth = "10 Gbit/s", latency = "2 us" }
[codec]
type = "dynamic"
encode = "5 GB/s"
decode = "10 GB/s"
)toml";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(UnitsTest, ParsesAndRejects) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("6 GB/s"), 6e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100 Gbit/s"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_time("1.5 us"), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse_time("104.1ms"), 0.1041);
  EXPECT_DOUBLE_EQ(parse_size("64 KiB"), 65536);
  EXPECT_DOUBLE_EQ(parse_size("64 KB"), 65536);  // the library's one grammar: sizes are binary
  EXPECT_THROW(parse_size("64 parsecs"), Error);
  EXPECT_THROW(parse_bandwidth("6"), Error);
  EXPECT_THROW(parse_bandwidth("6 GB"), Error);
  EXPECT_THROW(parse_time("fast"), Error);
}

TEST(ConfigTest, GoodFileParses) {
  const ScenarioParts p = parse_scenario(kGood, true, "test");
  ASSERT_TRUE(p.has_workload && p.has_cluster && p.has_codec);
  EXPECT_EQ(p.scenario.gpus, 2);
  EXPECT_DOUBLE_EQ(p.scenario.cluster.intra.bandwidth_Bps, 1.25e9);
  EXPECT_DOUBLE_EQ(p.scenario.workload.layers[0].backward_s, 2e-3);
  EXPECT_NO_THROW(predict(p.scenario));
}

TEST(ConfigTest, JsonAndTomlAgree) {
  const char* json = R"({"workload": {"batch": 32, "layers": [{"params": 1000,
      "forward": "1 ms", "backward": "2 ms"}]}})";
  const ScenarioParts p = parse_scenario(json, false, "test");
  EXPECT_TRUE(p.has_workload);
  EXPECT_FALSE(p.has_cluster);
  EXPECT_DOUBLE_EQ(p.scenario.workload.layers[0].forward_s, 1e-3);
}

TEST(ConfigTest, ClearErrors) {
  EXPECT_EQ(error_of(kGood), "");
  EXPECT_NE(error_of(replace(kGood, "nodes = 1", "nodes = 1\nnode = 2"))
                .find("cluster.node: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "batch = 32\n", "")).find("workload.batch: missing"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "\"10 Gbit/s\"", "\"0 Gbit/s\""))
                .find("cluster.intra.bandwidth: must be > 0"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "\"10 Gbit/s\"", "\"-3 GB/s\"")).find("must be > 0"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "\"10 Gbit/s\"", "10")).find("with a unit"), std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "\"10 Gbit/s\"", "\"10 parsecs\""))
                .find("unknown bandwidth unit 'parsecs'"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "\"1 ms\"", "\"1 kg\"")).find("workload.layers[0].forward"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "\"dynamic\"", "\"float7\"")).find("codec.type"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "batch = 32", "batch = 1.5")).find("positive integer"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "name = \"a\",", "name = \"a\", parallel = \"model\","))
                .find("hybrid"),
            std::string::npos);
  EXPECT_NE(error_of("gpus = [").find("test:"), std::string::npos);  // TOML syntax error
  EXPECT_NE(error_of("{\"gpus\": ", false).find("test:"), std::string::npos);
  // Validation that spans sections.
  ScenarioParts p = parse_scenario(replace(kGood, "gpus = 2", "gpus = 3"), true, "test");
  EXPECT_THROW(validate(p.scenario), Error);
}

TEST(ConfigTest, StartDelaysAndModelParallelKeys) {
  const std::string start =
      "intra = { bandwidth = \"10 Gbit/s\", latency = \"2 us\" }\n"
      "start = [ { after = \"1 ms\", delay = \"0.5 ms\" }, { after = \"4 ms\", delay = \"2 ms\" } "
      "]";
  const std::string intra = "intra = { bandwidth = \"10 Gbit/s\", latency = \"2 us\" }";
  const ScenarioParts p = parse_scenario(replace(kGood, intra, start), true, "test");
  ASSERT_EQ(p.scenario.cluster.start.size(), 2u);
  EXPECT_DOUBLE_EQ(p.scenario.cluster.start[1].after_s, 4e-3);
  EXPECT_DOUBLE_EQ(p.scenario.cluster.start[1].delay_s, 2e-3);
  EXPECT_NE(error_of(replace(kGood, intra, replace(start, "\"4 ms\"", "\"0.5 ms\"")))
                .find("cluster.start[1].after: must ascend"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, intra, replace(start, "\"2 ms\"", "\"-2 ms\"")))
                .find("cluster.start[1].delay: must be >= 0"),
            std::string::npos);
  EXPECT_NE(
      error_of(replace(kGood, intra, replace(start, "delay =", "wait ="))).find("unknown key"),
      std::string::npos);
  EXPECT_NE(error_of(replace(kGood, intra, intra + "\nstart = 3")).find("cluster.start: expected"),
            std::string::npos);

  // backward_transfer and overlap: model-parallel layers only.
  const std::string two_layers =
      "layers = [ { params = 0, activations = 10, forward = \"1 ms\", backward = \"1 ms\" },\n"
      "  { params = 1000, forward = \"1 ms\", backward = \"2 ms\", parallel = \"model\", "
      "backward_transfer = false, overlap = false } ]";
  const std::string one_layer =
      "layers = [ { name = \"a\", params = 1000, forward = \"1 ms\", backward = \"2 ms\" } ]";
  const std::string hybrid = replace(kGood, "batch = 32", "scheme = \"hybrid\"\nbatch = 32");
  const ScenarioParts q = parse_scenario(replace(hybrid, one_layer, two_layers), true, "test");
  const Layer& l = q.scenario.workload.layers[1];
  EXPECT_FALSE(l.backward_transfer);
  ASSERT_TRUE(l.overlap.has_value());
  EXPECT_FALSE(*l.overlap);
  EXPECT_FALSE(q.scenario.workload.layers[0].overlap.has_value());
  EXPECT_NE(error_of(replace(kGood, "name = \"a\",", "name = \"a\", overlap = true,"))
                .find("workload.layers[0].overlap: only for a model-parallel layer"),
            std::string::npos);
}

// Numbers a typo makes absurd fail with the key and the limit, instead of printing a step time of
// 300 digits (or wrapping an int).
TEST(ConfigTest, LimitsAndWholeNumbers) {
  auto error_with = [](const std::string& from, const std::string& to) {
    return error_of(replace(kGood, from, to));
  };
  EXPECT_NE(error_with("params = 1000", "params = 1e300").find("params: expected a whole number"),
            std::string::npos);
  EXPECT_NE(error_with("params = 1000", "params = 1000.5").find("params: expected a whole number"),
            std::string::npos);
  EXPECT_NE(error_with("params = 1000", "params = 1000, activations = 0.5")
                .find("activations: expected a whole number"),
            std::string::npos);
  EXPECT_NE(error_with("\"1 ms\"", "\"1e300 s\"").find("forward: '1e300 s': out of range"),
            std::string::npos);
  EXPECT_NE(error_with("\"10 Gbit/s\"", "\"1e-300 GB/s\"").find("bandwidth: '1e-300 GB/s': out of"),
            std::string::npos);
  EXPECT_NE(error_with("batch = 32", "batch = 32\nmodel_parallel_efficiency = 1e-300")
                .find("must be in [0.001, 1]"),
            std::string::npos);
  EXPECT_NE(error_with("nodes = 1",
                       "nodes = 600000000\ninter = { bandwidth = \"1 GB/s\", latency = \"1 us\" }")
                .find("more than 1e9 GPUs"),
            std::string::npos);
  EXPECT_THROW(parse_time("1e10 s"), Error);
  EXPECT_NO_THROW(parse_time("1e9 s"));
  EXPECT_THROW(parse_bandwidth("0.5 B/s"), Error);
  EXPECT_NE(error_of("{\"gpus\": [}", false).find("test: parse error"), std::string::npos);
}

TEST(ConfigTest, PresetsLoadAndPredict) {
  for (const auto& name : preset_names()) {
    const ScenarioParts p = preset(name);
    ASSERT_TRUE(p.has_workload && p.has_cluster && p.has_codec) << name;
    const Prediction pr = predict(p.scenario);
    EXPECT_GT(pr.fp32.speedup, 1.0) << name;
    EXPECT_GT(pr.int8.speedup, 1.0) << name;
  }
  EXPECT_THROW(preset("vgg"), Error);
}

TEST(ConfigTest, ExamplesInDocsLoad) {
  for (const char* f : {"alexnet-96gpu.toml", "resnet50-dp.toml", "cluster-calibrated.json"}) {
    ScenarioParts p;
    EXPECT_NO_THROW(p = load_scenario_file(std::string(OCTET_EXAMPLES_DIR) + "/" + f)) << f;
  }
}

TEST(ConfigTest, CalibrationRoundTrip) {
  Cluster c;
  c.gpus_per_node = 2;
  c.nodes = 2;
  c.intra = fit_link({{8, 1e-6}, {1e6, 1e-4}, {4e6, 4e-4}});
  c.inter = fit_link({{8, 5e-6}, {1e6, 1e-3}, {4e6, 4e-3}});
  CodecCost k;
  k.encode_Bps = 3e9;
  k.decode_Bps = 6e9;
  const ScenarioParts p = parse_scenario(calibration_json(&c, k), false, "calibration");
  ASSERT_TRUE(p.has_cluster && p.has_codec);
  EXPECT_EQ(p.scenario.cluster.inter.table.size(), 3u);
  EXPECT_NEAR(transfer_time(p.scenario.cluster.inter, 2e6), 2e-3, 1e-8);
  EXPECT_NEAR(p.scenario.codec.encode_Bps, 3e9, 1e3);
  EXPECT_NEAR(c.intra.bandwidth_Bps, 1e10, 1e6);  // slope of the larger half
  EXPECT_FALSE(parse_scenario(calibration_json(nullptr, k), false, "c").has_cluster);
  c.start = {{1e-3, 0.25e-3}, {3e-3, 1e-3}};
  const Cluster back = parse_scenario(calibration_json(&c, k), false, "c").scenario.cluster;
  ASSERT_EQ(back.start.size(), 2u);
  EXPECT_NEAR(back.start[1].after_s, 3e-3, 1e-12);
  EXPECT_NEAR(back.start[0].delay_s, 0.25e-3, 1e-12);
}

}  // namespace
}  // namespace predictor
}  // namespace octet
