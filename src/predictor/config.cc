// Scenario files (TOML or JSON): strict schema, one error message per problem, naming the key.
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <toml++/toml.h>
#include <nlohmann/json.hpp>

#include "octet/detail/quoted.h"
#include "octet/error.h"
#include "predictor/internal.h"
#include "predictor/predictor.h"

namespace octet {
namespace predictor {
namespace {

using json = nlohmann::json;

// One JSON object whose keys must all be known; every getter names the key when it fails.
class Obj {
 public:
  Obj(const json& j, std::string path, std::set<std::string> allowed)
      : j_(j), path_(std::move(path)) {
    if (!j.is_object()) fail(path_, "expected a table/object");
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!allowed.count(it.key())) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(at(it.key()), "unknown key (allowed: " + list + ")");
      }
  }
  bool has(const std::string& k) const { return j_.contains(k); }
  const json& get(const std::string& k) const {
    if (!has(k)) fail(at(k), "missing");
    return j_.at(k);
  }
  std::string at(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }
  std::string str(const std::string& k) const {
    if (!get(k).is_string()) fail(at(k), "expected a string");
    return get(k).get<std::string>();
  }
  double number(const std::string& k) const {
    if (!get(k).is_number()) fail(at(k), "expected a number");
    const double v = get(k).get<double>();
    if (!std::isfinite(v)) fail(at(k), "must be finite");
    return v;
  }
  int positive_int(const std::string& k) const { return to_positive_int(number(k), at(k)); }
  double elements(const std::string& k) const {
    const double v = number(k);
    check_elements(v, at(k));
    return v;
  }
  bool boolean(const std::string& k) const {
    if (!get(k).is_boolean()) fail(at(k), "expected true or false");
    return get(k).get<bool>();
  }
  template <typename Parse>
  double quantity(const std::string& k, Parse parse, bool positive) const {
    const double v = parse_with_key(k, parse);
    if (positive ? !(v > 0) : !(v >= 0)) fail(at(k), positive ? "must be > 0" : "must be >= 0");
    return v;
  }

 private:
  template <typename Parse>
  double parse_with_key(const std::string& k, Parse parse) const {
    if (!get(k).is_string())
      fail(at(k), "expected a quantity with a unit, as a string (e.g. \"6 GB/s\", \"1.5 us\")");
    try {
      return parse(get(k).get<std::string>());
    } catch (const Error& e) {
      fail(at(k), e.what());
    }
  }
  const json& j_;
  std::string path_;
};

Link read_link(const json& j, const std::string& path) {
  Obj o(j, path, {"bandwidth", "latency", "table"});
  Link link;
  if (o.has("table")) {
    if (o.has("bandwidth") || o.has("latency"))
      fail(path, "give either table or bandwidth + latency, not both");
    const json& t = o.get("table");
    if (!t.is_array() || t.empty()) fail(o.at("table"), "expected a non-empty array");
    for (size_t i = 0; i < t.size(); ++i) {
      Obj p(t[i], o.at("table") + "[" + std::to_string(i) + "]", {"size", "time"});
      link.table.push_back(
          {p.quantity("size", parse_size, true), p.quantity("time", parse_time, true)});
      if (i > 0 && !(link.table[i].bytes > link.table[i - 1].bytes))
        fail(p.at("size"), "sizes must ascend");
    }
    return link;
  }
  link.bandwidth_Bps = o.quantity("bandwidth", parse_bandwidth, true);
  link.latency_s = o.quantity("latency", parse_time, false);
  return link;
}

std::vector<StartDelay> read_start(const json& j, const std::string& path) {
  if (!j.is_array()) fail(path, "expected an array of {after, delay}");
  std::vector<StartDelay> points;
  for (size_t i = 0; i < j.size(); ++i) {
    Obj p(j[i], path + "[" + std::to_string(i) + "]", {"after", "delay"});
    points.push_back(
        {p.quantity("after", parse_time, true), p.quantity("delay", parse_time, false)});
    if (i > 0 && !(points[i].after_s > points[i - 1].after_s)) fail(p.at("after"), "must ascend");
  }
  return points;
}

Cluster read_cluster(const json& j) {
  Obj o(j, "cluster", {"gpus_per_node", "nodes", "intra", "inter", "start"});
  Cluster c;
  c.gpus_per_node = o.positive_int("gpus_per_node");
  c.nodes = o.positive_int("nodes");
  c.intra = read_link(o.get("intra"), "cluster.intra");
  if (c.nodes > 1 || o.has("inter")) c.inter = read_link(o.get("inter"), "cluster.inter");
  if (o.has("start")) c.start = read_start(o.get("start"), o.at("start"));
  validate_cluster(c);
  return c;
}

CodecCost read_codec(const json& j) {
  Obj o(j, "codec", {"type", "block", "encode", "decode", "overhead"});
  CodecCost c;
  try {
    c.type = parse_data_type(o.str("type"));
  } catch (const Error& e) {
    fail(o.at("type"), e.what());
  }
  if (o.has("block")) c.block_size = static_cast<uint32_t>(o.positive_int("block"));
  c.encode_Bps = o.quantity("encode", parse_bandwidth, true);
  c.decode_Bps = o.quantity("decode", parse_bandwidth, true);
  if (o.has("overhead")) c.call_overhead_s = o.quantity("overhead", parse_time, false);
  CodecOptions options;
  options.type = c.type;
  options.block_size = c.block_size;
  try {
    validate_options(options);
  } catch (const Error& e) {
    fail(o.at("block"), e.what());
  }
  return c;
}

Parallelism read_parallel(const Obj& o, const std::string& scheme, size_t index) {
  if (!o.has("parallel"))
    return scheme == "model" && index > 0 ? Parallelism::kModel : Parallelism::kData;
  if (scheme != "hybrid") fail(o.at("parallel"), "only allowed with scheme = \"hybrid\"");
  const std::string p = o.str("parallel");
  if (p == "data") return Parallelism::kData;
  if (p == "model") return Parallelism::kModel;
  fail(o.at("parallel"), "expected \"data\" or \"model\", not " + detail::quoted(p));
}

Layer read_layer(const json& j, const std::string& path, const std::string& scheme, size_t i) {
  Obj o(j, path,
        {"name", "params", "activations", "forward", "backward", "update", "parallel",
         "backward_transfer", "overlap"});
  Layer l;
  l.name = o.has("name") ? o.str("name") : "layer" + std::to_string(i);
  l.params = o.elements("params");
  if (o.has("activations")) l.activations = o.elements("activations");
  l.forward_s = o.quantity("forward", parse_time, false);
  l.backward_s = o.quantity("backward", parse_time, false);
  if (o.has("update")) l.update_s = o.quantity("update", parse_time, false);
  l.parallel = read_parallel(o, scheme, i);
  for (const char* key : {"backward_transfer", "overlap"})
    if (o.has(key) && l.parallel != Parallelism::kModel)
      fail(o.at(key), "only for a model-parallel layer");
  if (o.has("backward_transfer")) l.backward_transfer = o.boolean("backward_transfer");
  if (o.has("overlap")) l.overlap = o.boolean("overlap");
  return l;
}

Workload read_workload(const json& j) {
  Obj o(j, "workload",
        {"name", "scheme", "batch", "sub_batch", "model_parallel_efficiency", "overlap", "layers"});
  Workload w;
  w.name = o.has("name") ? o.str("name") : "workload";
  const std::string scheme = o.has("scheme") ? o.str("scheme") : "data";
  if (scheme != "data" && scheme != "model" && scheme != "hybrid")
    fail(o.at("scheme"),
         "expected \"data\", \"model\" or \"hybrid\", not " + detail::quoted(scheme));
  w.batch = o.positive_int("batch");
  if (o.has("sub_batch")) w.sub_batch = o.positive_int("sub_batch");
  if (o.has("model_parallel_efficiency")) {
    w.model_parallel_efficiency = o.number("model_parallel_efficiency");
    check_efficiency(w.model_parallel_efficiency, o.at("model_parallel_efficiency"));
  }
  if (o.has("overlap")) w.overlap = o.boolean("overlap");
  const json& layers = o.get("layers");
  if (!layers.is_array() || layers.empty()) fail(o.at("layers"), "expected a non-empty array");
  for (size_t i = 0; i < layers.size(); ++i)
    w.layers.push_back(
        read_layer(layers[i], "workload.layers[" + std::to_string(i) + "]", scheme, i));
  return w;
}

// TOML -> JSON so that both formats go through one validator.
json to_json(const toml::node& node) {
  if (auto t = node.as_table()) {
    json out = json::object();
    for (auto&& [k, v] : *t) out[std::string(k.str())] = to_json(v);
    return out;
  }
  if (auto a = node.as_array()) {
    json out = json::array();
    for (auto&& v : *a) out.push_back(to_json(v));
    return out;
  }
  if (auto v = node.as_string()) return v->get();
  if (auto v = node.as_integer()) return v->get();
  if (auto v = node.as_floating_point()) return v->get();
  if (auto v = node.as_boolean()) return v->get();
  fail("toml", "dates and times are not used in scenario files");
}

json parse_text(const std::string& text, bool toml_format) {
  if (!toml_format) return json::parse(text);
  try {
    return to_json(toml::parse(text));
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << e.description() << " (line " << e.source().begin.line << ")";
    throw Error(ErrorCode::kInvalidArgument, msg.str());
  }
}

}  // namespace

ScenarioParts parse_scenario(const std::string& text, bool toml_format, const std::string& origin) {
  try {
    const json j = parse_text(text, toml_format);
    Obj top(j, "", {"gpus", "workload", "cluster", "codec"});
    ScenarioParts parts;
    if (top.has("gpus")) parts.scenario.gpus = top.positive_int("gpus");
    if ((parts.has_workload = top.has("workload")))
      parts.scenario.workload = read_workload(j["workload"]);
    if ((parts.has_cluster = top.has("cluster")))
      parts.scenario.cluster = read_cluster(j["cluster"]);
    if ((parts.has_codec = top.has("codec"))) parts.scenario.codec = read_codec(j["codec"]);
    return parts;
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, origin + ": " + json_error_text(e));
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument, origin + ": " + e.what());
  }
}

ScenarioParts load_scenario_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "cannot read: it is a directory");
  std::ifstream in(path);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  const bool toml_format = path.size() >= 5 && path.compare(path.size() - 5, 5, ".toml") == 0;
  const bool json_format = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (!toml_format && !json_format)
    throw Error(ErrorCode::kInvalidArgument, path + ": expected a .toml or .json file");
  return parse_scenario(text.str(), toml_format, path);
}

void merge_into(ScenarioParts& into, const ScenarioParts& from) {
  if (from.has_workload) into.scenario.workload = from.scenario.workload;
  if (from.has_cluster) into.scenario.cluster = from.scenario.cluster;
  if (from.has_codec) into.scenario.codec = from.scenario.codec;
  if (from.scenario.gpus > 0) into.scenario.gpus = from.scenario.gpus;
  into.has_workload |= from.has_workload;
  into.has_cluster |= from.has_cluster;
  into.has_codec |= from.has_codec;
}

namespace {

json link_json(const Link& l) {
  if (l.table.empty())
    return {{"bandwidth", std::to_string(l.bandwidth_Bps / 1e9) + " GB/s"},
            {"latency", std::to_string(l.latency_s * 1e6) + " us"}};
  json table = json::array();
  for (const auto& p : l.table)
    table.push_back({{"size", std::to_string(static_cast<long long>(p.bytes)) + " B"},
                     {"time", std::to_string(p.seconds * 1e6) + " us"}});
  return {{"table", table}};
}

}  // namespace

std::string calibration_json(const Cluster* cluster, const CodecCost& codec) {
  json j = json::object();
  if (cluster) {
    j["cluster"] = {{"gpus_per_node", cluster->gpus_per_node},
                    {"nodes", cluster->nodes},
                    {"intra", link_json(cluster->intra)}};
    if (cluster->nodes > 1) j["cluster"]["inter"] = link_json(cluster->inter);
    if (!cluster->start.empty()) {
      json start = json::array();
      for (const StartDelay& p : cluster->start)
        start.push_back({{"after", std::to_string(p.after_s * 1e6) + " us"},
                         {"delay", std::to_string(p.delay_s * 1e6) + " us"}});
      j["cluster"]["start"] = start;
    }
  }
  j["codec"] = {{"type", data_type_name(codec.type)},
                {"encode", std::to_string(codec.encode_Bps / 1e9) + " GB/s"},
                {"decode", std::to_string(codec.decode_Bps / 1e9) + " GB/s"},
                {"overhead", std::to_string(codec.call_overhead_s * 1e6) + " us"}};
  if (codec.block_size != 0) j["codec"]["block"] = codec.block_size;
  return j.dump(2) + "\n";
}

}  // namespace predictor
}  // namespace octet
