// Seeded cost curves for `auto` (octet/policy.h): their rules, their agreement across ranks, and
// the policy-curve file (its writer and its strict, bounded parser, fuzzed by
// tests/fuzz/policy_file_fuzz.cc).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "collectives/comm_core.h"
#include "collectives/hierarchical.h"
#include "collectives/policy.h"

namespace octet {
namespace detail {
namespace {

constexpr size_t kMaxFileBytes = size_t{1} << 20;
constexpr size_t kMaxLine = 256;
constexpr size_t kMaxSets = 256;
constexpr size_t kMaxPoints = 256;
constexpr double kMaxBytes = 0x1p62;  // the size limit of docs/units.md
constexpr double kMaxSeconds = 1e9;
constexpr int kMaxRanks = 1 << 24;

[[noreturn]] void invalid(const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, why);
}

// What is wrong with `c` for `op`, or "".
std::string check_curves(const PolicyCurves& c, Collective op) {
  const size_t n = c.bytes.size();
  if (n == 0) return "no points";
  if (n > kMaxPoints) return "more than " + std::to_string(kMaxPoints) + " points";
  if (c.plain_seconds.size() != n || c.compressed_seconds.size() != n)
    return "plain and compressed times must have one value per size";
  if (!c.hierarchical_seconds.empty() && c.hierarchical_seconds.size() != n)
    return "hierarchical times must be empty or have one value per size";
  if (!c.hierarchical_seconds.empty() && op != Collective::kAllreduce)
    return "hierarchical times are for allreduce only";
  for (size_t i = 0; i < n; ++i) {
    const double b = c.bytes[i];
    if (!(b > 0 && b <= kMaxBytes)) return "sizes must be in (0, 2^62] bytes";
    if (i > 0 && !(b > c.bytes[i - 1])) return "sizes must be strictly ascending";
    for (const auto* t : {&c.plain_seconds, &c.compressed_seconds, &c.hierarchical_seconds})
      if (!t->empty() && !((*t)[i] >= 0 && (*t)[i] <= kMaxSeconds))
        return "times must be numbers of seconds in [0, 1e9]";
  }
  return "";
}

PolicyKey key_of(Collective op, const CodecOptions& codec) {
  return PolicyKey(op, static_cast<int>(codec.type), codec.stochastic, validate_options(codec));
}

// Installs curves (the same on every rank) for `key`; the hierarchical one only where comm's
// hosts allow that algorithm.
void install(Comm& comm, const PolicyKey& key, const PolicyCurves& given) {
  PolicyState::Curves c = fresh_curves();
  c.curve[PolicyState::kPlain] = {given.bytes, given.plain_seconds};
  c.curve[PolicyState::kFlat] = {given.bytes, given.compressed_seconds};
  if (!given.hierarchical_seconds.empty() && hierarchical_fits(comm))
    c.curve[PolicyState::kHierarchical] = {given.bytes, given.hierarchical_seconds};
  core(comm).policy().seed(key, std::move(c));
}

// The sizes every rank resamples its curves at before the agreement: 4 B to 1 TiB, doubling.
std::vector<double> grid() {
  std::vector<double> g;
  for (int e = 2; e <= 40; ++e) g.push_back(std::ldexp(1.0, e));
  return g;
}

std::vector<double> resample(const std::vector<double>& bytes, const std::vector<double>& seconds) {
  const CostCurve curve{bytes, seconds};
  std::vector<double> out;
  for (double b : grid()) out.push_back(seconds.empty() ? 0 : curve.at(b));
  return out;
}

// A rank's codec setting as one exactly representable number (> 0).
double key_code(Collective op, const CodecOptions& codec, uint32_t block) {
  return 1 + static_cast<double>(op) +
         4 * (static_cast<double>(codec.type) + 16 * (codec.stochastic + 2.0 * block));
}

// After the agreement: every rank's error flag (slot r: rank r's), then every rank's code.
void check_slots(const std::vector<double>& v, int ranks, const std::string& mine) {
  for (int r = 0; r < ranks; ++r)
    if (v[r] > 0)
      invalid(mine.empty() ? "set_policy_curves: invalid curves on rank " + std::to_string(r)
                           : "set_policy_curves: " + mine);
  for (int r = 1; r < ranks; ++r)
    if (v[ranks + r] != v[ranks])
      throw Error(ErrorCode::kMismatch, "set_policy_curves: rank " + std::to_string(r) +
                                            " seeds another collective or codec than rank 0");
}

// The policy-curve file's parser (octet/policy.h has the grammar). Every value is checked as it
// is read; a set's curves are checked as set_policy_curves checks them when the set ends.
class FileParser {
 public:
  FileParser(std::string_view text, std::string origin) : text_(text), origin_(std::move(origin)) {}

  std::vector<PolicyCurveSet> run() {
    if (text_.size() > kMaxFileBytes) fail("larger than 1 MiB");
    size_t at = 0;
    while (at < text_.size()) {
      size_t end = text_.find('\n', at);
      if (end == std::string_view::npos) end = text_.size();
      ++line_;
      read_line(text_.substr(at, end - at));
      at = end + 1;
    }
    if (line_ == 0) fail("empty file (expected 'octet-policy-curves 1')");
    finish_set();
    return std::move(sets_);
  }

 private:
  [[noreturn]] void fail(const std::string& why, size_t line = 0) const {
    invalid(origin_ + ":" + std::to_string(line ? line : line_) + ": " + why);
  }

  void read_line(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > kMaxLine)
      fail("line longer than " + std::to_string(kMaxLine) + " characters");
    for (char c : line)
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') fail("control character in line");
    if (line_ == 1) {
      if (line != "octet-policy-curves 1") fail("expected 'octet-policy-curves 1'");
      return;
    }
    const std::vector<std::string_view> t = tokens(line);
    if (t.empty() || t[0][0] == '#') return;
    if (t[0] == "set") return start_set(t);
    add_point(t);
  }

  static std::vector<std::string_view> tokens(std::string_view line) {
    std::vector<std::string_view> t;
    size_t at = 0;
    while (at < line.size()) {
      const size_t begin = line.find_first_not_of(" \t", at);
      if (begin == std::string_view::npos) break;
      const size_t end = std::min(line.size(), line.find_first_of(" \t", begin));
      t.push_back(line.substr(begin, end - begin));
      at = end;
    }
    return t;
  }

  double number(std::string_view token, const char* what) const {
    double x = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), x);
    if (ec != std::errc() || end != token.data() + token.size() || !std::isfinite(x))
      fail(std::string(what) + ": '" + std::string(token) + "' is not a finite number");
    return x;
  }

  // "key=<integer in [lo, hi]>".
  long keyed(std::string_view token, const char* key, long lo, long hi) const {
    const std::string prefix = std::string(key) + "=";
    long x = 0;
    const char* first = token.data() + prefix.size();
    const char* last = token.data() + token.size();
    if (token.substr(0, prefix.size()) != prefix) fail("expected " + prefix + "<integer>");
    const auto [end, ec] = std::from_chars(first, last, x);
    if (ec != std::errc() || end != last || first == last || x < lo || x > hi)
      fail(prefix + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    return x;
  }

  Collective collective(std::string_view name) const {
    for (Collective op : {Collective::kAllreduce, Collective::kReduceScatter,
                          Collective::kAllgather, Collective::kBroadcast})
      if (name == collective_name(op)) return op;
    fail("unknown collective '" + std::string(name) +
         "' (allreduce, reduce_scatter, allgather, broadcast)");
  }

  void start_set(const std::vector<std::string_view>& t) {
    finish_set();
    if (t.size() != 7)
      fail("expected 'set <collective> <type> block=<B> stochastic=<0|1> ranks=<P> hosts=<H>'");
    if (sets_.size() == kMaxSets) fail("more than " + std::to_string(kMaxSets) + " sets");
    PolicyCurveSet s;
    s.op = collective(t[1]);
    try {
      s.codec.type = parse_data_type(t[2]);
      s.codec.block_size = static_cast<uint32_t>(keyed(t[3], "block", 0, 1 << 20));
      s.codec.stochastic = keyed(t[4], "stochastic", 0, 1) != 0;
      validate_options(s.codec);
    } catch (const Error& e) {
      fail(e.what());
    }
    s.ranks = static_cast<int>(keyed(t[5], "ranks", 1, kMaxRanks));
    s.hosts = static_cast<int>(keyed(t[6], "hosts", 1, s.ranks));
    const auto id = std::make_tuple(key_of(s.op, s.codec), s.ranks, s.hosts);
    if (!seen_.insert(id).second) fail("a second set for the same collective, codec, ranks, hosts");
    sets_.push_back(std::move(s));
    set_line_ = line_;
  }

  void add_point(const std::vector<std::string_view>& t) {
    if (!set_line_) fail("a point before any 'set' line");
    if (t.size() != 3 && t.size() != 4)
      fail("expected '<fp32 bytes> <plain s> <compressed s> [<hierarchical s>]'");
    PolicyCurves& c = sets_.back().curves;
    if (c.bytes.size() == kMaxPoints) fail("more than " + std::to_string(kMaxPoints) + " points");
    if (!c.bytes.empty() && (t.size() == 4) != !c.hierarchical_seconds.empty())
      fail("every point of a set has 3 values, or every point 4");
    c.bytes.push_back(number(t[0], "size"));
    c.plain_seconds.push_back(number(t[1], "plain time"));
    c.compressed_seconds.push_back(number(t[2], "compressed time"));
    if (t.size() == 4) c.hierarchical_seconds.push_back(number(t[3], "hierarchical time"));
  }

  void finish_set() {
    if (!set_line_) return;
    const std::string why = check_curves(sets_.back().curves, sets_.back().op);
    if (!why.empty()) fail(why, set_line_);
    set_line_ = 0;
  }

  std::string_view text_;
  std::string origin_;
  size_t line_ = 0, set_line_ = 0;
  std::vector<PolicyCurveSet> sets_;
  std::set<std::tuple<PolicyKey, int, int>> seen_;
};

// Rank 0's file, on every rank: its bytes (or the reason it could not read them) packed 4 per
// double (+1, so that every value is > 0 and rank 0's is the median) and agreed.
std::string rank0_file(Comm& comm, const std::string& path, bool& ok) {
  std::string text;
  ok = true;
  if (comm.rank() == 0) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream all;
    if (in) all << in.rdbuf();
    ok = in.good() || in.eof();
    text = ok ? all.str() : path + ": cannot read the file";
    if (ok && text.size() > kMaxFileBytes) ok = false, text = path + ": larger than 1 MiB";
  }
  std::vector<double> head = {comm.rank() == 0 ? ok + 1.0 : 0,
                              comm.rank() == 0 ? text.size() + 1.0 : 0};
  agree(comm, head);
  ok = head[0] == 2;
  const size_t size = static_cast<size_t>(head[1] - 1);
  std::vector<double> words((size + 3) / 4, 0.0);
  for (size_t i = 0; comm.rank() == 0 && i < size; ++i)
    words[i / 4] +=
        static_cast<double>(static_cast<unsigned char>(text[i])) * (1u << (8 * (i % 4)));
  if (comm.rank() == 0)
    for (double& w : words) w += 1;
  agree(comm, words);
  text.assign(size, '\0');
  for (size_t i = 0; i < size; ++i)
    text[i] = static_cast<char>((static_cast<uint64_t>(words[i / 4]) - 1) >> (8 * (i % 4)) & 0xff);
  return text;
}

// The shortest text that reads back as x (so a file round-trips exactly).
std::string point(double x) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, ec == std::errc() ? end : buf);
}

// This rank's part of the agreement: P error flags (mine 1 when code is 0, for invalid curves), P
// codes of the collective and codec, then the three curves resampled at grid() (0: none).
std::vector<double> contribution(const Comm& comm, double code, const PolicyCurves& curves) {
  const size_t p = static_cast<size_t>(comm.size()), me = static_cast<size_t>(comm.rank());
  std::vector<double> v(2 * p, 0.0);
  v[me] = code > 0 ? 0 : 1;
  v[p + me] = code;
  for (const auto* t :
       {&curves.plain_seconds, &curves.compressed_seconds, &curves.hierarchical_seconds})
    for (double x : code > 0 ? resample(curves.bytes, *t) : std::vector<double>(grid().size()))
      v.push_back(x);
  return v;
}

// The agreed curves out of the agreed contributions.
PolicyCurves agreed_curves(const std::vector<double>& v, int ranks) {
  const size_t n = grid().size();
  const auto at = v.begin() + 2 * static_cast<std::ptrdiff_t>(ranks);
  PolicyCurves c;
  c.bytes = grid();
  c.plain_seconds.assign(at, at + n);
  c.compressed_seconds.assign(at + n, at + 2 * n);
  c.hierarchical_seconds.assign(at + 2 * n, v.end());
  bool any = false;
  for (double x : c.hierarchical_seconds) any = any || x > 0;
  if (!any) c.hierarchical_seconds.clear();
  return c;
}

}  // namespace
}  // namespace detail

const char* collective_name(Collective op) {
  switch (op) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "?";
}

void set_policy_curves(Comm& comm, Collective op, const CodecOptions& codec,
                       const PolicyCurves& curves) {
  using namespace detail;
  std::string why;
  uint32_t block = 0;
  try {
    block = validate_options(codec);
    why = check_curves(curves, op);
  } catch (const Error& e) {
    why = e.what();
  }
  std::vector<double> v = contribution(comm, why.empty() ? key_code(op, codec, block) : 0, curves);
  agree(comm, v);
  check_slots(v, comm.size(), why);
  install(comm, key_of(op, codec), agreed_curves(v, comm.size()));
}

std::string format_policy_curves(const std::vector<PolicyCurveSet>& sets) {
  std::string out = "octet-policy-curves 1\n";
  for (const PolicyCurveSet& s : sets) {
    const PolicyCurves& c = s.curves;
    out += std::string("set ") + collective_name(s.op) + " " + data_type_name(s.codec.type) +
           " block=" + std::to_string(s.codec.block_size) +
           " stochastic=" + std::to_string(s.codec.stochastic ? 1 : 0) +
           " ranks=" + std::to_string(s.ranks) + " hosts=" + std::to_string(s.hosts) + "\n";
    out += c.hierarchical_seconds.empty()
               ? "# fp32 bytes, plain s, compressed s\n"
               : "# fp32 bytes, plain s, compressed s (flat), hierarchical s\n";
    for (size_t i = 0; i < c.bytes.size(); ++i) {
      out += detail::point(c.bytes[i]) + " " + detail::point(c.plain_seconds.at(i)) + " " +
             detail::point(c.compressed_seconds.at(i));
      if (!c.hierarchical_seconds.empty()) out += " " + detail::point(c.hierarchical_seconds.at(i));
      out += "\n";
    }
  }
  return out;
}

std::vector<PolicyCurveSet> parse_policy_curves(std::string_view text, const std::string& origin) {
  return detail::FileParser(text, origin).run();
}

void load_policy_curves(Comm& comm, const std::string& path) {
  using namespace detail;
  bool ok = false;
  const std::string text = rank0_file(comm, path, ok);
  if (!ok) invalid(text);
  const int hosts = HostLayout::of(comm.transport()).hosts;
  // The same bytes on every rank: the same sets, or the same error, everywhere.
  for (const PolicyCurveSet& s : parse_policy_curves(text, path))
    if (s.ranks == comm.size() && s.hosts == hosts) install(comm, key_of(s.op, s.codec), s.curves);
}

}  // namespace octet
