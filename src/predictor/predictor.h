// The speedup predictor: will 8-bit transfers pay off on this model and this network?
//
// Three parts, all in seconds, bytes and bytes per second:
//  - cost terms (alpha-beta links, ring collectives with and without the codec, overlap);
//  - a step-time model of a workload (layers, data/model/hybrid parallelism, sub-batches) on a
//    cluster, with the break-even bandwidth below which 8-bit is faster;
//  - a reproduction of the model and tables of paper 001 (Dettmers), in the paper's own arithmetic
//    or corrected.
// The model, its equations and its limits are in docs/predictor.md. Bad input throws octet::Error
// (kInvalidArgument) with a message that names the offending key.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "octet/codec.h"
#include "octet/config.h"
#include "octet/policy.h"
#include "octet/transport.h"

namespace octet {
namespace predictor {

// ---------------------------------------------------------------- cost terms

// One link: a message of b bytes takes latency + b / bandwidth, or, when `table` is given (a
// measured alpha-beta table, ascending bytes), the time interpolated linearly between its points
// and extrapolated with the slope of its last segment.
struct Link {
  struct Point {
    double bytes = 0;
    double seconds = 0;
  };
  double latency_s = 0;
  double bandwidth_Bps = 0;
  std::vector<Point> table;
};
double transfer_time(const Link& link, double bytes);
// The link with its bandwidth replaced (a table keeps its smallest-message time as the latency).
Link with_bandwidth(const Link& link, double bandwidth_Bps);

// Communication that can run beside `hide_under_s` of computation adds only what sticks out.
double exposed_time(double comm_s, double hide_under_s);

// The codec as the model sees it: its payload size (from octet::max_encoded_size) and its speed
// in fp32 bytes per second.
struct CodecCost {
  DataType type = DataType::kDynamic;
  uint32_t block_size = 0;  // 0: default_block_size(type)
  double encode_Bps = 0;
  double decode_Bps = 0;
  double call_overhead_s = 0;  // fixed cost of each encode or decode call (launch, dispatch)
};
double compressed_bytes(double fp32_bytes, const CodecCost& codec);
double encode_time(double fp32_bytes, const CodecCost& codec);
double decode_time(double fp32_bytes, const CodecCost& codec);

// Ring algorithms (binomial tree for bcast); fp32_bytes is the whole tensor (allgather: the
// gathered result). With codec == nullptr: fp32; otherwise every chunk travels compressed and
// the codec runs beside the transfers: the longer of the two, plus one chunk's codec time (a
// step of one chunk: the sum).
enum class Collective { kAllreduce, kReduceScatter, kAllgather, kBcast };
Collective parse_collective(const std::string& name);  // "allreduce", "iallreduce", ...
double collective_time(Collective op, double fp32_bytes, int ranks, const Link& link,
                       const CodecCost* codec);

// ---------------------------------------------------------------- workload and cluster

// What a transfer that starts as computation ends costs beyond its own time: the ranks do not end
// their computation together (one core shared by several ranks, or with the network's packet
// processing, a straggler), and a rank whose core was busy may wait for the scheduler. A
// calibration from back-to-back messages cannot see it. `octet calibrate` measures it after
// computing for several lengths of time (StartDelay points).
struct StartDelay {
  double after_s = 0;  // the computation before the transfer (wall time, every rank computing)
  double delay_s = 0;  // the transfer's time beyond the same transfer back to back
};

struct Cluster {
  int gpus_per_node = 1;
  int nodes = 1;
  Link intra;                     // between GPUs of one node
  Link inter;                     // between nodes
  std::vector<StartDelay> start;  // ascending after_s; empty: no delay
};
// The delay of a transfer after `compute_s` of computation: linear between the points and from
// (0, 0), the last point's delay beyond it; 0 without points.
double start_delay(const Cluster& cluster, double compute_s);
// The link that limits a ring over `gpus` GPUs: intra-node while they fit in one node.
const Link& bottleneck(const Cluster& cluster, int gpus);

enum class Parallelism { kData, kModel };

struct Layer {
  std::string name;
  double params = 0;       // weights (elements): data parallelism allreduces their gradient
  double activations = 0;  // output elements per sample: model parallelism sends these
  double forward_s = 0;    // one GPU, Workload::batch samples
  double backward_s = 0;
  double update_s = 0;
  Parallelism parallel = Parallelism::kData;
  // Model-parallel layers: whether the gradient of the layer's input travels back (not when the
  // input is data that needs none), and whether its transfers run beside the other sub-batches'
  // computation (unset: Workload::overlap).
  bool backward_transfer = true;
  std::optional<bool> overlap;
};

struct Workload {
  std::string name;
  std::vector<Layer> layers;  // input to output
  int batch = 0;              // samples per GPU per step (the batch the times were measured at)
  int sub_batch = 0;          // model-parallel stage: samples per sub-batch (0: batch)
  double model_parallel_efficiency = 1.0;  // speed of a 1/gpus slice relative to ideal, (0, 1]
  bool overlap = true;  // communication runs beside computation (else it is serialised)
};

struct Scenario {
  Workload workload;
  Cluster cluster;
  CodecCost codec;
  int gpus = 0;  // 0: every GPU of the cluster
};
// Checks every field (positive times, bandwidths, counts ...); throws kInvalidArgument.
void validate(const Scenario& scenario);

struct StepTime {
  double step_s = 0;     // one training step on every GPU
  double comm_s = 0;     // all communication, hidden or not, codec included
  double exposed_s = 0;  // the part of comm_s that lengthens the step
  double codec_s = 0;    // encode + decode on the critical path (0 for fp32)
  double start_s = 0;    // start delays (Cluster::start) charged; in exposed_s unless a
                         // data-parallel allreduce's hides under later layers' computation
  double speedup = 0;    // gpus x one-GPU step / step_s
};
struct Prediction {
  int gpus = 0;
  double single_gpu_step_s = 0;  // one GPU, batch samples
  StepTime fp32;
  StepTime int8;  // the codec's type (8-bit or 4-bit)
  // Bottleneck bandwidth below which the codec makes the step faster; 0 when it never does, +inf
  // when it always does (searched between 1 kB/s and 1 PB/s).
  double break_even_Bps = 0;
};
Prediction predict(const Scenario& scenario);
StepTime step_time(const Scenario& scenario, bool compressed);

// ---------------------------------------------------------------- configuration files

// A scenario file (TOML or JSON, by extension; schema in docs/predictor.md) may hold any of the
// sections [workload], [cluster], [codec] and the key gpus. Later sources replace whole sections.
// Throws kInvalidArgument naming the file and key for unknown keys, missing fields, bad units or
// non-positive values.
struct ScenarioParts {
  bool has_workload = false, has_cluster = false, has_codec = false;
  Scenario scenario;
};
ScenarioParts parse_scenario(const std::string& text, bool toml, const std::string& origin);
ScenarioParts load_scenario_file(const std::string& path);
void merge_into(ScenarioParts& into, const ScenarioParts& from);
// Presets: "alexnet-4gpu", "alexnet-96gpu", "resnet50-dp", "gpt2-dp".
std::vector<std::string> preset_names();
ScenarioParts preset(const std::string& name);
// A JSON scenario file with [cluster] (when given) and [codec] that the loader reads back (written
// by `octet calibrate`).
std::string calibration_json(const Cluster* cluster, const CodecCost& codec);

// Quantities with units: "6 GB/s", "5 Gbit/s", "1.5 us", "104.1 ms", "64 KiB". Throw
// kInvalidArgument for a missing or unknown unit.
double parse_bandwidth(const std::string& text);  // -> bytes per second
double parse_time(const std::string& text);       // -> seconds
double parse_size(const std::string& text);       // -> bytes

// ---------------------------------------------------------------- sweeps and plots

enum class SweepVariable { kGpus, kSubBatch, kBandwidth, kMessageSize };
SweepVariable parse_sweep_variable(const std::string& name);  // gpus|sub-batch|bandwidth|message
struct SweepPoint {
  double x = 0;
  double fp32 = 0;  // speedup over one GPU (message sweep: effective allreduce GB/s of fp32 data)
  double int8 = 0;
};
std::vector<SweepPoint> sweep(const Scenario& scenario, SweepVariable variable,
                              const std::vector<double>& values);

struct Series {
  std::string label;
  std::string color;  // SVG colour, e.g. "#1f77b4"
  std::vector<double> x, y;
};
// A line chart: axes with ticks, one polyline per series, a legend. log_x spaces x by log10.
std::string render_svg(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series, bool log_x);

// ---------------------------------------------------------------- shim reports

// One bucket of a shim report (the JSON the PMPI/NCCL shims write at exit) with the model's
// verdict for its mean message size on `ranks` ranks.
struct BucketVerdict {
  std::string op;
  double bucket_min_bytes = 0, bucket_max_bytes = 0;
  double calls = 0;
  double message_bytes = 0;       // bytes_fp32 / calls
  double fp32_s = 0, int8_s = 0;  // predicted time of one call
  double measured_s = -1;         // time_s / calls from the report (-1: not given)
  double break_even_Bps = 0;
  bool pays_off = false;
};
struct ReportAnalysis {
  int ranks = 0;
  std::vector<BucketVerdict> buckets;
  double fp32_total_s = 0, int8_total_s = 0;  // summed over every call
};
ReportAnalysis analyze_report(const std::string& json_text, const Cluster& cluster,
                              const CodecCost& codec);

// ---------------------------------------------------------------- the `auto` policy's curves

// `auto`'s cost curves (octet/policy.h) for `op` on a Comm of `ranks` ranks over `hosts` hosts,
// from a calibrated cluster and codec (what `octet calibrate` writes), with the collective
// costs above: rings over the inter-node link when hosts > 1, else the intra-node link; for an
// allreduce on several hosts with several ranks on each, the hierarchical algorithm too (an
// fp32 reduce-scatter over the ranks/hosts ranks of a host on the intra-node link, the
// compressed allreduce of a 1/(ranks/hosts) slice between the hosts, an fp32 allgather inside
// the host). Sizes are fp32 bytes as policy.h indexes them (reduce_scatter and allgather: per
// rank), 64 B to 4 GiB, doubling.
PolicyCurves policy_curves(const Cluster& cluster, const CodecCost& codec, octet::Collective op,
                           int ranks, int hosts);
// A calibration file (a scenario file with [cluster] and [codec], as `octet calibrate` writes);
// throws kInvalidArgument when either is missing or invalid.
ScenarioParts load_calibration(const std::string& path);
// The sets of a policy-curve file (octet::format_policy_curves) for every collective.
std::vector<PolicyCurveSet> policy_curve_sets(const Cluster& cluster, const CodecCost& codec,
                                              const CodecOptions& setting, int ranks, int hosts);

// ---------------------------------------------------------------- the paper

enum class PaperMode { kPaper, kCorrected };
enum class CellKind {
  kComputed,  // derived by the model
  kInput,     // a published number the paper's own arithmetic starts from (shown, not derived)
  kCheck,     // the alpha-beta formula against a published input
};
struct PaperCell {
  std::string table;   // "Table 1", "Table 6", "Table 7", "4-GPU"
  std::string row;     // e.g. "96 GPUs, sub-batch 512"
  std::string column;  // e.g. "8-bit"
  double published = 0;
  int decimals = 0;  // decimals the paper printed
  double value = 0;
  CellKind kind = CellKind::kComputed;
};
struct PaperReport {
  PaperMode mode = PaperMode::kCorrected;
  std::vector<PaperCell> cells;
  std::string summary;  // corrected mode: what changed and by how much, one line
};
PaperReport reproduce_paper(PaperMode mode);
// A value reproduces a published cell when it is within 0.5% of it, or equal to it at the
// precision the paper printed (1.27 -> "1.3").
bool reproduces(double value, double published, int decimals);

// ---------------------------------------------------------------- calibration

// Times encode and decode of `elements` normal values on one thread (as a collective's chunks
// run), best of `repeats`. With `together` (a barrier over the ranks, called by every rank alike),
// every rank measures at once and a repetition ends when the slowest rank's does: the rate each of
// several ranks on a node gets while the others encode too (shared cores, memory bandwidth).
CodecCost measure_codec(DataType type, uint32_t block_size, size_t elements, int repeats,
                        const std::function<void()>& together = {});
// Fits latency (the smallest message's time) and bandwidth (least squares on the larger half)
// to a measured table, and keeps the table.
Link fit_link(const std::vector<Link::Point>& points);

// Rank 0's links, measured through `transport` (Octet's own path, the one its collectives use),
// node_of[r] naming rank r's node. Where every node holds the same number of ranks, every rank
// takes part: ring steps within each node (intra), then across the nodes (inter), each rank
// sending to the next and receiving from the previous at once, the time of one step being the
// link's time, as a ring collective sees it with every link busy. Otherwise a ping-pong between
// rank 0 and the first other rank on its node (intra) and on another node (inter), half the round
// trip. Every power-of-4 message size from 8 bytes to buffer_size / 2 (sent from the first half
// of `buffer`, received into the second). Collective over the transport's ranks. Returns the
// cluster on rank 0 (intra = inter when a node holds one rank), null on the other ranks.
std::unique_ptr<Cluster> measure_links(Transport& transport, const std::vector<int>& node_of,
                                       char* buffer, size_t buffer_size);

// Cluster::start, measured through `transport`: for each length of computation (seconds of one
// core's arithmetic alone, ascending), every rank computes that long, then takes P - 1 dependent
// ring steps of 8 bytes, as a ring collective does; the delay is their time from the end of the
// rank's own computation, less the same steps back to back, and `after` the computation's wall time
// with every rank computing; both averaged over the repetitions and the ranks. Collective over the
// transport's ranks; the points on rank 0, empty on the others.
std::vector<StartDelay> measure_start_delays(Transport& transport,
                                             const std::vector<double>& compute_s);
// The lengths `octet calibrate` measures: 0.3, 1, 3 and 10 ms.
std::vector<double> default_start_lengths();

#if OCTET_HAVE_MPI
// measure_links over MPI_COMM_WORLD (MPI initialised by the caller), nodes as MPI's shared-memory
// split sees them, messages up to max_bytes. Null with fewer than 2 ranks. When any rank fails,
// every rank throws an Error that names the first failing rank, after all have stopped
// communicating: no rank is left waiting.
std::unique_ptr<Cluster> measure_mpi_cluster(size_t max_bytes);
// measure_codec on every rank of MPI_COMM_WORLD at once (a barrier before and after each
// repetition), its result on every rank; failures as measure_mpi_cluster's.
CodecCost measure_mpi_codec(DataType type, uint32_t block_size, size_t elements, int repeats);
#endif

}  // namespace predictor
}  // namespace octet
