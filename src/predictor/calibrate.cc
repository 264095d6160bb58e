// Measurements on the machine at hand: codec throughput, and the links to other ranks in ring
// steps through Octet's transport (every rank sending and receiving at once), fitted to
// alpha-beta.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "octet/codec.h"
#include "predictor/internal.h"
#include "predictor/predictor.h"
#if OCTET_HAVE_MPI
#include "octet/transport_mpi.h"
#endif

namespace octet {
namespace predictor {
namespace {

template <typename F>
double best_seconds(int repeats, F&& run) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  return std::max(best, 1e-9);
}

// For every power-of-4 size from 8 bytes to max_bytes, the mean time of `step(bytes)` over
// enough repetitions (after two warm-up ones), divided by `per_point`.
template <typename Step>
std::vector<Link::Point> timed_sizes(size_t max_bytes, double per_point, Step step) {
  std::vector<Link::Point> points;
  for (size_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
    const int iters =
        static_cast<int>(std::max<size_t>(4, std::min<size_t>(200, (size_t{64} << 20) / bytes)));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = -2; i < iters; ++i) {  // two warm-up rounds
      if (i == 0) t0 = std::chrono::steady_clock::now();
      step(bytes);
    }
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    points.push_back({double(bytes), dt.count() / iters / per_point});
  }
  return points;
}

// Half the round trip between rank 0 and `peer` (called on those two ranks), for every power-of-4
// size up to buffer_size.
std::vector<Link::Point> ping_pong(Transport& t, int peer, char* buffer, size_t buffer_size) {
  const int partner = t.rank() == 0 ? peer : 0;
  return timed_sizes(buffer_size, 2, [&](size_t bytes) {
    if (t.rank() == 0) {
      t.isend(buffer, bytes, partner, 0)->wait();
      t.irecv(buffer, bytes, partner, 0)->wait();
    } else {
      t.irecv(buffer, bytes, partner, 0)->wait();
      t.isend(buffer, bytes, partner, 0)->wait();
    }
  });
}

// One ring step per repetition: every rank sends `bytes` to `to` and receives as many from `from`
// at once, as each step of a ring collective does, so the time includes what the other ranks'
// traffic costs (a shared switch, NIC or memory bus, and the cores that run the transport). For
// every power-of-4 size up to half the buffer: sent from its first half, received into the second.
std::vector<Link::Point> ring_steps(Transport& t, int to, int from, char* buffer,
                                    size_t buffer_size) {
  char* const in = buffer + buffer_size / 2;
  return timed_sizes(buffer_size / 2, 1, [&](size_t bytes) {
    const auto received = t.irecv(in, bytes, from, 0);
    const auto sent = t.isend(buffer, bytes, to, 0);
    received->wait();
    sent->wait();
  });
}

// A dependent chain of arithmetic: one core at a steady rate, touching no memory. The result
// goes to a volatile so that the compiler keeps the loop.
volatile double spun = 0;
void spin(uint64_t iterations) {
  double a = 1.0;
  for (uint64_t i = 0; i < iterations; ++i) a = a * 1.0000001 + 1e-9;
  spun = a;
}

// Iterations of spin() that take `seconds` on this core alone: the fastest of a few tries, since
// other ranks calibrating at once can only slow a try down.
uint64_t spin_iterations(double seconds) {
  constexpr uint64_t kTry = 100000;
  const double t = best_seconds(5, [] { spin(kTry); });
  return std::max<uint64_t>(1, static_cast<uint64_t>(double(kTry) * seconds / t));
}

// P - 1 ring steps of 8 bytes (to the next rank, from the previous), each waiting for the one
// before, as a ring collective's steps do: every step may wait for a rank whose core is busy.
void ring_sequence(Transport& t, char* in) {
  static const char kOut[8] = {};
  const int p = t.size(), next = (t.rank() + 1) % p, previous = (t.rank() + p - 1) % p;
  for (int step = 0; step + 1 < p; ++step) {
    const auto received = t.irecv(in, 8, previous, 0);
    t.isend(kOut, 8, next, 0)->wait();
    received->wait();
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

#if OCTET_HAVE_MPI
// Runs `step` on every rank, then agrees over MPI_COMM_WORLD whether it succeeded everywhere;
// if not, every rank throws the same Error: the first failing rank's, with that rank named.
void on_every_rank(const char* what, const std::function<void()>& step) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string error;
  ErrorCode code = ErrorCode::kOk;
  try {
    step();
  } catch (const Error& e) {
    error = e.what();
    code = e.code();
  } catch (const std::exception& e) {
    error = e.what();
    code = ErrorCode::kInternal;
  }
  int first = code == ErrorCode::kOk ? size : rank;
  PMPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == size) return;
  int sent[2] = {static_cast<int>(code), static_cast<int>(error.size())};
  PMPI_Bcast(sent, 2, MPI_INT, first, MPI_COMM_WORLD);
  error.resize(size_t(sent[1]));
  PMPI_Bcast(&error[0], sent[1], MPI_CHAR, first, MPI_COMM_WORLD);
  throw Error(static_cast<ErrorCode>(sent[0]),
              std::string(what) + " failed on rank " + std::to_string(first) + ": " + error);
}

// node_of[r]: the smallest world rank on rank r's node.
std::vector<int> mpi_nodes() {
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int leader = rank;
  PMPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
  PMPI_Comm_free(&node);
  std::vector<int> node_of(size);
  PMPI_Allgather(&leader, 1, MPI_INT, node_of.data(), 1, MPI_INT, MPI_COMM_WORLD);
  return node_of;
}
#endif

}  // namespace

namespace {

// Encode and decode of `elements` normal values on one thread (as a collective's chunks run:
// codec.cc uses one thread below 2^18 values), their buffers allocated up front.
class CodecTimer {
 public:
  CodecTimer(DataType type, uint32_t block_size, size_t elements) : x_(elements), y_(elements) {
    if (elements == 0) fail("measure_codec", "elements must be > 0");
    options_.type = type;
    options_.block_size = block_size;
    options_.threads = 1;
    validate_options(options_);
    std::mt19937_64 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x_) v = normal(rng);
    payload_.resize(max_encoded_size(elements, options_));
  }

  // With `together`, every rank runs each repetition at once, and a repetition lasts until the
  // last rank is done: what ranks sharing cores and memory bandwidth get each.
  CodecCost run(int repeats, const std::function<void()>& together) {
    if (repeats < 1) fail("measure_codec", "repeats must be >= 1");
    const size_t n = x_.size();
    const double enc = timed(repeats, together, [&] { encode_first(n); });
    const double dec = timed(repeats, together, [&] { decode_first(n); });
    // The fixed cost of a call: a one-block round trip, less its share of the streaming time.
    const size_t small = std::min<size_t>(n, 256);
    const double tiny = best_seconds(repeats * 20, [&] {
      encode_first(small);
      decode_first(small);
    });
    CodecCost c;
    c.type = options_.type;
    c.block_size = options_.block_size;
    c.encode_Bps = 4.0 * double(n) / enc;
    c.decode_Bps = 4.0 * double(n) / dec;
    c.call_overhead_s =
        std::max(0.0, (tiny - 4.0 * small / c.encode_Bps - 4.0 * small / c.decode_Bps) / 2);
    return c;
  }

 private:
  void encode_first(size_t n) {
    size_ = encode(x_.data(), n, options_, payload_.data(), payload_.size());
  }
  void decode_first(size_t n) {
    decode(payload_.data(), size_, y_.data(), n, DecodeMode::kOverwrite, 1);
  }
  template <typename Op>
  static double timed(int repeats, const std::function<void()>& together, Op op) {
    if (!together) return best_seconds(repeats, op);
    double best = 1e300;
    for (int i = 0; i < repeats; ++i) {
      together();
      best = std::min(best, best_seconds(1, [&] {
                        op();
                        together();
                      }));
    }
    return best;
  }

  CodecOptions options_;
  std::vector<float> x_, y_;
  std::vector<uint8_t> payload_;
  size_t size_ = 0;
};

}  // namespace

CodecCost measure_codec(DataType type, uint32_t block_size, size_t elements, int repeats,
                        const std::function<void()>& together) {
  return CodecTimer(type, block_size, elements).run(repeats, together);
}

Link fit_link(const std::vector<Link::Point>& points) {
  if (points.size() < 2) fail("fit_link", "need at least two message sizes");
  Link link;
  link.table = points;
  std::sort(link.table.begin(), link.table.end(),
            [](const Link::Point& a, const Link::Point& b) { return a.bytes < b.bytes; });
  for (size_t i = 0; i < link.table.size(); ++i) {
    if (!(link.table[i].seconds > 0)) fail("fit_link", "times must be > 0");
    if (i > 0 && !(link.table[i].bytes > link.table[i - 1].bytes))
      fail("fit_link", "sizes must differ");
  }
  link.latency_s = link.table.front().seconds;
  // Least-squares slope over the larger half: bandwidth where latency no longer dominates.
  const size_t from = link.table.size() / 2;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = from; i < link.table.size(); ++i) {
    const double bx = link.table[i].bytes, ty = link.table[i].seconds;
    n += 1, sx += bx, sy += ty, sxx += bx * bx, sxy += bx * ty;
  }
  const double denom = n * sxx - sx * sx;
  const double slope = denom > 0 ? (n * sxy - sx * sy) / denom : 0;
  const auto& last = link.table.back();
  link.bandwidth_Bps = slope > 0 ? 1.0 / slope : last.bytes / last.seconds;
  return link;
}

namespace {

// The ranks of every node (in order of their first rank), when every node holds the same number
// of them; empty otherwise.
std::vector<std::vector<int>> uniform_nodes(const std::vector<int>& node_of) {
  std::vector<int> ids;
  std::vector<std::vector<int>> nodes;
  for (int r = 0; r < static_cast<int>(node_of.size()); ++r) {
    const auto it = std::find(ids.begin(), ids.end(), node_of[r]);
    if (it == ids.end()) {
      ids.push_back(node_of[r]);
      nodes.push_back({r});
    } else {
      nodes[size_t(it - ids.begin())].push_back(r);
    }
  }
  for (const auto& n : nodes)
    if (n.size() != nodes.front().size()) return {};
  return nodes;
}

}  // namespace

std::unique_ptr<Cluster> measure_links(Transport& transport, const std::vector<int>& node_of,
                                       char* buffer, size_t buffer_size) {
  const int me = transport.rank(), size = transport.size();
  if (node_of.size() != size_t(size)) fail("measure_links", "node_of must name every rank's node");
  const std::vector<std::vector<int>> nodes = uniform_nodes(node_of);
  std::vector<Link::Point> intra, inter;
  int node_size = 1, node_count = 1;
  if (!nodes.empty()) {
    // Every rank in ring steps: within each node, then across the nodes (local rank l of node n
    // to local rank l of node n + 1), all nodes and all local ranks at once.
    node_count = static_cast<int>(nodes.size());
    node_size = static_cast<int>(nodes.front().size());
    int n = 0, l = 0;
    for (; n < node_count; ++n) {
      const auto it = std::find(nodes[n].begin(), nodes[n].end(), me);
      if (it != nodes[n].end()) {
        l = static_cast<int>(it - nodes[n].begin());
        break;
      }
    }
    if (node_size > 1)
      intra = ring_steps(transport, nodes[n][(l + 1) % node_size],
                         nodes[n][(l + node_size - 1) % node_size], buffer, buffer_size);
    if (node_count > 1)
      inter = ring_steps(transport, nodes[(n + 1) % node_count][l],
                         nodes[(n + node_count - 1) % node_count][l], buffer, buffer_size);
  } else {
    // Nodes of different sizes: a ping-pong between rank 0 and the first other rank on its node
    // (intra), and the first rank on another node (inter).
    int same = -1, other = -1;
    for (int r = 1; r < size; ++r) {
      if (node_of[r] == node_of[0]) {
        ++node_size;
        if (same < 0) same = r;
      } else if (other < 0) {
        other = r;
      }
    }
    node_count = std::max(1, size / node_size);
    if (same > 0 && (me == 0 || me == same))
      intra = ping_pong(transport, same, buffer, buffer_size / 2);
    if (other > 0 && (me == 0 || me == other))
      inter = ping_pong(transport, other, buffer, buffer_size / 2);
  }
  if (me != 0) return nullptr;
  auto cluster = std::make_unique<Cluster>();
  cluster->gpus_per_node = node_size;
  cluster->nodes = node_count;
  if (!intra.empty()) cluster->intra = fit_link(intra);
  if (!inter.empty()) cluster->inter = fit_link(inter);
  if (intra.empty()) cluster->intra = cluster->inter;  // one rank per node: no intra-node link
  return cluster;
}

std::vector<double> default_start_lengths() {
  return {0.3e-3, 1e-3, 3e-3, 10e-3};
}

std::vector<StartDelay> measure_start_delays(Transport& t, const std::vector<double>& compute_s) {
  for (double length : compute_s)
    if (!(length > 0) || length > 1) fail("measure_start_delays", "lengths must be in (0, 1] s");
  char in[8];
  for (int i = 0; i < 20; ++i) ring_sequence(t, in);  // connections, first-touch
  constexpr int kBackToBack = 100;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kBackToBack; ++i) ring_sequence(t, in);
  const double back_to_back = seconds_since(t0) / kBackToBack;
  std::vector<double> mine;  // (wall compute, delay) per length
  for (double length : compute_s) {
    const uint64_t n = spin_iterations(length);
    const int reps = std::clamp(static_cast<int>(0.3 / length), 5, 100);
    double wall = 0, delay = 0;
    for (int r = 0; r < reps; ++r) {
      t0 = std::chrono::steady_clock::now();
      spin(n);
      const auto computed = std::chrono::steady_clock::now();
      ring_sequence(t, in);
      wall += std::chrono::duration<double>(computed - t0).count();
      delay += seconds_since(computed) - back_to_back;
    }
    mine.push_back(wall / reps);
    mine.push_back(delay / reps);
  }
  // Rank 0 averages every rank's points (on tag 1: the ring steps' messages are tag 0).
  const size_t bytes = mine.size() * sizeof(double);
  if (t.rank() != 0) {
    t.isend(mine.data(), bytes, 0, 1)->wait();
    return {};
  }
  std::vector<double> sum = mine, theirs(mine.size());
  for (int p = 1; p < t.size(); ++p) {
    t.irecv(theirs.data(), bytes, p, 1)->wait();
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += theirs[i];
  }
  std::vector<StartDelay> points;
  for (size_t i = 0; i < compute_s.size(); ++i) {
    const double after = sum[2 * i] / t.size(), delay = std::max(0.0, sum[2 * i + 1] / t.size());
    if (points.empty() || after > points.back().after_s) points.push_back({after, delay});
  }
  return points;
}

#if OCTET_HAVE_MPI
CodecCost measure_mpi_codec(DataType type, uint32_t block_size, size_t elements, int repeats) {
  std::unique_ptr<CodecTimer> timer;
  on_every_rank("preparing the codec measurement",
                [&] { timer = std::make_unique<CodecTimer>(type, block_size, elements); });
  CodecCost c;
  on_every_rank("measuring the codec",
                [&] { c = timer->run(repeats, [] { PMPI_Barrier(MPI_COMM_WORLD); }); });
  return c;
}

std::unique_ptr<Cluster> measure_mpi_cluster(size_t max_bytes) {
  int size = 1;
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) return nullptr;
  const std::vector<int> node_of = mpi_nodes();
  const std::shared_ptr<Transport> transport = make_mpi_transport(MPI_COMM_WORLD);
  std::vector<char> buffer;  // what a rank sends, then what it receives
  on_every_rank("allocating the message buffers", [&] { buffer.resize(2 * max_bytes); });
  std::unique_ptr<Cluster> cluster;
  on_every_rank("measuring the links", [&] {
    cluster = measure_links(*transport, node_of, buffer.data(), buffer.size());
  });
  std::vector<StartDelay> start;
  on_every_rank("measuring the start delays",
                [&] { start = measure_start_delays(*transport, default_start_lengths()); });
  if (cluster) cluster->start = std::move(start);
  return cluster;
}
#endif

}  // namespace predictor
}  // namespace octet
