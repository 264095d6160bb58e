// The step-time model: data-parallel layers allreduce their gradients during the backward pass;
// model-parallel layers gather each sub-batch's activations while the previous sub-batch computes.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "octet/detail/quoted.h"
#include "octet/error.h"
#include "predictor/internal.h"
#include "predictor/predictor.h"

namespace octet {
namespace predictor {

void fail(const std::string& what, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, what + ": " + why);
}

int to_positive_int(double v, const std::string& what) {
  if (!(v >= 1 && v <= kMaxCount && v == std::floor(v)))
    fail(what, "expected a positive integer (at most 1e9)");
  return static_cast<int>(v);
}

void check_elements(double v, const std::string& what) {
  if (!(v >= 0 && v <= kMaxElements && v == std::floor(v)))
    fail(what, "expected a whole number of values from 0 to 2^60");
}

void check_efficiency(double v, const std::string& what) {
  if (!(v >= kMinEfficiency && v <= 1)) fail(what, "must be in [0.001, 1]");
}

std::string json_error_text(const std::exception& e) {
  const std::string what = e.what();
  const size_t tag_end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos
             ? what.substr(tag_end + 2)
             : what;
}

int resolved_gpus(const Scenario& s) {
  return s.gpus > 0 ? s.gpus : s.cluster.gpus_per_node * s.cluster.nodes;
}

namespace {

void validate_link(const Link& link, const std::string& what) {
  if (!link.table.empty()) {
    double last = 0;
    for (const auto& p : link.table) {
      if (!(p.bytes > last)) fail(what + ".table", "sizes must be positive and ascending");
      if (!(p.seconds > 0) || !std::isfinite(p.seconds)) fail(what + ".table", "times must be > 0");
      last = p.bytes;
    }
    return;
  }
  if (!(link.bandwidth_Bps > 0) || !std::isfinite(link.bandwidth_Bps))
    fail(what + ".bandwidth", "must be positive and finite");
  if (!(link.latency_s >= 0) || !std::isfinite(link.latency_s))
    fail(what + ".latency", "must be >= 0 and finite");
}

void validate_nonneg(double v, const std::string& what) {
  if (!(v >= 0) || !std::isfinite(v)) fail(what, "must be >= 0 and finite");
}

void validate_workload(const Workload& w) {
  if (w.layers.empty()) fail("workload.layers", "at least one layer is needed");
  if (w.batch <= 0) fail("workload.batch", "must be a positive integer");
  if (w.sub_batch < 0) fail("workload.sub_batch", "must be positive");
  check_efficiency(w.model_parallel_efficiency, "workload.model_parallel_efficiency");
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const Layer& l = w.layers[i];
    const std::string at = "workload.layers[" + std::to_string(i) + "]";
    check_elements(l.params, at + ".params");
    check_elements(l.activations, at + ".activations");
    validate_nonneg(l.forward_s, at + ".forward");
    validate_nonneg(l.backward_s, at + ".backward");
    validate_nonneg(l.update_s, at + ".update");
    if (l.parallel == Parallelism::kModel && i == 0)
      fail(at + ".parallel", "a model-parallel layer needs a layer before it (its input)");
  }
}

}  // namespace

double start_delay(const Cluster& c, double compute_s) {
  if (c.start.empty() || !(compute_s > 0)) return 0;
  StartDelay before;  // (0, 0)
  for (const StartDelay& p : c.start) {
    if (compute_s <= p.after_s)
      return before.delay_s + (p.delay_s - before.delay_s) * (compute_s - before.after_s) /
                                  (p.after_s - before.after_s);
    before = p;
  }
  return before.delay_s;
}

void validate_cluster(const Cluster& c) {
  if (c.gpus_per_node <= 0) fail("cluster.gpus_per_node", "must be a positive integer");
  if (c.nodes <= 0) fail("cluster.nodes", "must be a positive integer");
  if (double(c.gpus_per_node) * c.nodes > kMaxCount)
    fail("cluster", "gpus_per_node x nodes is more than 1e9 GPUs");
  validate_link(c.intra, "cluster.intra");
  if (c.nodes > 1) validate_link(c.inter, "cluster.inter");
  double last = 0;
  for (const StartDelay& p : c.start) {
    if (!(p.after_s > last) || !std::isfinite(p.after_s))
      fail("cluster.start", "computation lengths must be positive and ascending");
    if (!(p.delay_s >= 0) || !std::isfinite(p.delay_s))
      fail("cluster.start", "delays must be >= 0 and finite");
    last = p.after_s;
  }
}

void validate(const Scenario& s) {
  validate_workload(s.workload);
  validate_cluster(s.cluster);
  if (s.gpus < 0) fail("gpus", "must be positive");
  if (s.gpus > s.cluster.gpus_per_node * s.cluster.nodes)
    fail("gpus", std::to_string(s.gpus) + " is more than the cluster's " +
                     std::to_string(s.cluster.gpus_per_node * s.cluster.nodes));
  if (!(s.codec.encode_Bps > 0) || !std::isfinite(s.codec.encode_Bps))
    fail("codec.encode", "throughput must be positive and finite");
  if (!(s.codec.decode_Bps > 0) || !std::isfinite(s.codec.decode_Bps))
    fail("codec.decode", "throughput must be positive and finite");
  if (!(s.codec.call_overhead_s >= 0) || !std::isfinite(s.codec.call_overhead_s))
    fail("codec.overhead", "must be >= 0 and finite");
  CodecOptions o;
  o.type = s.codec.type;
  o.block_size = s.codec.block_size;
  validate_options(o);
}

namespace {

struct Tally {
  double compute = 0, comm = 0, exposed = 0, codec = 0, start = 0;
  // A transfer on the critical path that starts after `after_s` of computation: its start delay.
  void delay(const Cluster& c, double after_s) {
    const double d = start_delay(c, after_s);
    start += d;
    exposed += d;
  }
};

// The model-parallel stage: K sub-batches; each layer's input is gathered to every GPU forward and
// its gradient sent back backward (unless the layer says not). Where the layer overlaps, the
// transfers of one sub-batch run while another computes, and the first of each direction hides
// under nothing; otherwise every transfer waits for the computation before it, and it for them.
void model_parallel_stage(const Scenario& s, int gpus, const CodecCost* codec, Tally& t) {
  const Workload& w = s.workload;
  const int sub = w.sub_batch > 0 ? w.sub_batch : w.batch;
  const double k = std::ceil(double(gpus) * w.batch / sub);
  const double share = double(sub) / w.batch / gpus / w.model_parallel_efficiency;
  const Link& link = bottleneck(s.cluster, gpus);
  for (size_t i = 1; i < w.layers.size(); ++i) {
    const Layer& l = w.layers[i];
    if (l.parallel != Parallelism::kModel) continue;
    const Layer& before = w.layers[i - 1];
    const double bytes = before.activations * sub * 4.0;
    const double c = collective_time(Collective::kAllgather, bytes, gpus, link, codec);
    const double fwd = l.forward_s * share, bwd = (l.backward_s + l.update_s) * share;
    // The computation each direction's transfer waits for: the input's layer forward, this
    // layer's backward.
    const double fwd_gap = before.forward_s * (before.parallel == Parallelism::kModel ? share : 1);
    const int directions = l.backward_transfer ? 2 : 1;
    t.compute += k * (fwd + bwd);
    t.comm += directions * k * c;
    if (codec)
      t.codec +=
          directions * k * collective_codec_time(Collective::kAllgather, bytes, gpus, *codec);
    const bool overlap = l.overlap.value_or(w.overlap);
    const int starts = c > 0 ? (overlap ? 1 : static_cast<int>(k)) : 0;  // after computation
    for (int j = 0; j < starts; ++j) {
      t.delay(s.cluster, fwd_gap);
      if (l.backward_transfer) t.delay(s.cluster, bwd);
    }
    if (!overlap) {
      t.exposed += directions * k * c;
      continue;
    }
    t.exposed += directions * c + (k - 1) * exposed_time(c, fwd);
    if (l.backward_transfer) t.exposed += (k - 1) * exposed_time(c, bwd);
  }
}

// Data-parallel layers: forward, then backward from the last layer; each gradient's allreduce
// starts when it is ready and the link is free, so it hides under the layers still computing. A
// transfer that starts when its computation ends (not when the link frees) pays the start delay
// of the computation since the link was last busy; without overlap, the allreduces follow the
// whole backward pass back to back.
void data_parallel_layers(const Scenario& s, int gpus, const CodecCost* codec, Tally& t) {
  const Workload& w = s.workload;
  const Link& link = bottleneck(s.cluster, gpus);
  double forward = 0;
  for (const Layer& l : w.layers)
    if (l.parallel == Parallelism::kData) forward += l.forward_s;
  double ready = 0, link_free = 0, serial = 0;
  bool any = false;
  for (auto it = w.layers.rbegin(); it != w.layers.rend(); ++it) {
    if (it->parallel != Parallelism::kData) continue;
    ready += it->backward_s + it->update_s;
    const double bytes = it->params * 4.0;
    const double c = collective_time(Collective::kAllreduce, bytes, gpus, link, codec);
    if (!(c > 0)) continue;  // nothing to exchange (no parameters, one GPU)
    if (codec) t.codec += collective_codec_time(Collective::kAllreduce, bytes, gpus, *codec);
    t.comm += c;
    serial += c;
    double begin = std::max(ready, link_free);
    if (w.overlap && ready >= link_free) {
      const double computed = (any ? 0.0 : forward) + ready - link_free;  // since the link idled
      const double d = start_delay(s.cluster, computed);
      t.start += d;
      begin += d;
    }
    any = true;
    link_free = begin + c;
  }
  t.compute += forward + ready;
  if (w.overlap) {
    t.exposed += std::max(0.0, link_free - ready);
    return;
  }
  t.exposed += serial;
  if (any) t.delay(s.cluster, forward + ready);
}

double single_gpu_step(const Workload& w) {
  double t = 0;
  for (const Layer& l : w.layers) t += l.forward_s + l.backward_s + l.update_s;
  return t;
}

}  // namespace

StepTime step_time(const Scenario& s, bool compressed) {
  validate(s);
  const int gpus = resolved_gpus(s);
  const CodecCost* codec = compressed ? &s.codec : nullptr;
  Tally t;
  data_parallel_layers(s, gpus, codec, t);
  model_parallel_stage(s, gpus, codec, t);
  StepTime out;
  out.step_s = t.compute + t.exposed;
  out.comm_s = t.comm;
  out.exposed_s = t.exposed;
  out.codec_s = t.codec;
  out.start_s = t.start;
  out.speedup = gpus * single_gpu_step(s.workload) / out.step_s;
  return out;
}

namespace {

Scenario with_bottleneck_bandwidth(Scenario s, double bw) {
  const int gpus = resolved_gpus(s);
  Link& link = gpus > s.cluster.gpus_per_node ? s.cluster.inter : s.cluster.intra;
  link = with_bandwidth(link, bw);
  return s;
}

// f(bw) = compressed - fp32 step time grows with bandwidth: bisect its sign change on a log scale.
double break_even(const Scenario& s) {
  auto gain = [&](double bw) {
    const Scenario t = with_bottleneck_bandwidth(s, bw);
    return step_time(t, false).step_s - step_time(t, true).step_s;
  };
  return break_even_bandwidth(gain);
}

}  // namespace

Prediction predict(const Scenario& s) {
  validate(s);
  Prediction p;
  p.gpus = resolved_gpus(s);
  p.single_gpu_step_s = single_gpu_step(s.workload);
  p.fp32 = step_time(s, false);
  p.int8 = step_time(s, true);
  p.break_even_Bps = break_even(s);
  return p;
}

SweepVariable parse_sweep_variable(const std::string& name) {
  if (name == "gpus") return SweepVariable::kGpus;
  if (name == "sub-batch" || name == "sub_batch") return SweepVariable::kSubBatch;
  if (name == "bandwidth") return SweepVariable::kBandwidth;
  if (name == "message" || name == "message-size") return SweepVariable::kMessageSize;
  fail("sweep", "unknown variable " + detail::quoted(name) +
                    " (expected gpus, sub-batch, bandwidth, message)");
}

std::vector<SweepPoint> sweep(const Scenario& base, SweepVariable variable,
                              const std::vector<double>& values) {
  std::vector<SweepPoint> out;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) fail("sweep", "values must be positive");
    if (variable == SweepVariable::kGpus || variable == SweepVariable::kSubBatch)
      to_positive_int(v, "sweep");
    Scenario s = base;
    SweepPoint p;
    p.x = v;
    if (variable == SweepVariable::kMessageSize) {
      const int gpus = resolved_gpus(s);
      const Link& link = bottleneck(s.cluster, gpus);
      const double t32 = collective_time(Collective::kAllreduce, v, gpus, link, nullptr);
      const double t8 = collective_time(Collective::kAllreduce, v, gpus, link, &s.codec);
      p.fp32 = t32 > 0 ? v / t32 / 1e9 : 0;
      p.int8 = t8 > 0 ? v / t8 / 1e9 : 0;
      out.push_back(p);
      continue;
    }
    if (variable == SweepVariable::kGpus) {
      s.gpus = static_cast<int>(v);
      s.cluster.nodes = std::max(s.cluster.nodes,
                                 (s.gpus + s.cluster.gpus_per_node - 1) / s.cluster.gpus_per_node);
    } else if (variable == SweepVariable::kSubBatch) {
      s.workload.sub_batch = static_cast<int>(v);
    } else {
      s = with_bottleneck_bandwidth(s, v);
    }
    p.fp32 = step_time(s, false).speedup;
    p.int8 = step_time(s, true).speedup;
    out.push_back(p);
  }
  return out;
}

}  // namespace predictor
}  // namespace octet
