// octet codec error|encode|decode
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/support.h"
#include "octet/codec.h"
#include "octet/detail/quoted.h"

namespace octet {
namespace cli {
namespace {

struct ErrorArgs {
  std::string type = "all";
  uint32_t block = 0;
  std::string dist = "normal";
  size_t n = 1 << 22;
  uint64_t seed = 1;
  bool stochastic = false;
  bool json = false;
};

std::vector<float> sample(const std::string& dist, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> x(n);
  auto fill = [&](auto d) {
    for (auto& v : x) v = static_cast<float>(d(rng));
  };
  if (dist == "normal")
    fill(std::normal_distribution<double>(0.0, 1.0));
  else if (dist == "uniform")
    fill(std::uniform_real_distribution<double>(-1.0, 1.0));
  else if (dist == "laplace")
    fill([](std::mt19937_64& r) {
      std::exponential_distribution<double> e(1.0);
      return std::bernoulli_distribution(0.5)(r) ? e(r) : -e(r);
    });
  else if (dist == "lognormal")
    fill(std::lognormal_distribution<double>(0.0, 1.0));
  else
    throw Error(ErrorCode::kInvalidArgument, "unknown distribution " + detail::quoted(dist));
  return x;
}

struct ErrorStats {
  double mean_abs = 0, mean_rel_pct = 0, rms = 0, max_abs = 0;
  size_t bytes = 0;
};

ErrorStats measure(const std::vector<float>& x, DataType type, const ErrorArgs& a) {
  CodecOptions o;
  o.type = type;
  o.block_size = a.block == 0 ? default_block_size(type) : a.block;
  o.stochastic = a.stochastic;
  o.seed = a.seed;
  std::vector<uint8_t> payload = encode(x, o);
  std::vector<float> y = decode(payload);
  ErrorStats s;
  s.bytes = payload.size();
  double rel = 0, sq = 0, abs_sum = 0;
  size_t nonzero = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = std::fabs(double(x[i]) - double(y[i]));
    abs_sum += e;
    sq += e * e;
    s.max_abs = std::max(s.max_abs, e);
    if (x[i] != 0.0f) {
      rel += e / std::fabs(double(x[i]));
      ++nonzero;
    }
  }
  const double n = x.empty() ? 1.0 : double(x.size());
  s.mean_abs = abs_sum / n;
  s.rms = std::sqrt(sq / n);
  s.mean_rel_pct = nonzero ? 100.0 * rel / double(nonzero) : 0.0;
  return s;
}

void run_error(const ErrorArgs& a) {
  std::vector<DataType> types;
  if (a.type == "all")
    types = all_data_types();
  else
    types.push_back(parse_data_type(a.type));
  if (a.type == "all" && a.dist != "lognormal") {
    // the unsigned type needs single-signed blocks: it is measured on |x| below
  }
  // Bytes per sample: x, |x| and the decoded copy (4 each) and the payload (about 1).
  check_memory(13.0 * double(a.n), "--n " + std::to_string(a.n));
  const std::vector<float> x = sample(a.dist, a.n, a.seed);
  std::vector<float> absx(x.size());
  for (size_t i = 0; i < x.size(); ++i) absx[i] = std::fabs(x[i]);
  nlohmann::json rows = nlohmann::json::array();
  if (!a.json)
    std::printf(
        "# octet codec error: dist=%s n=%zu seed=%llu rounding=%s\n"
        "# %-22s %6s %12s %10s %12s %12s %8s\n",
        a.dist.c_str(), a.n, static_cast<unsigned long long>(a.seed),
        a.stochastic ? "stochastic" : "nearest", "type", "block", "mean_abs", "mean_rel%", "rms",
        "max_abs", "ratio");
  for (DataType t : types) {
    const bool unsigned_type = t == DataType::kDynamicUnsigned;
    const ErrorStats s = measure(unsigned_type ? absx : x, t, a);
    const uint32_t block = a.block == 0 ? default_block_size(t) : a.block;
    const double ratio = s.bytes ? 4.0 * double(x.size()) / double(s.bytes) : 0.0;
    std::string name = data_type_name(t);
    if (unsigned_type) name += "(|x|)";
    if (a.json) {
      rows.push_back({{"type", data_type_name(t)},
                      {"block", block},
                      {"input", unsigned_type ? "abs" : "signed"},
                      {"mean_abs_error", s.mean_abs},
                      {"mean_rel_error_pct", s.mean_rel_pct},
                      {"rms_error", s.rms},
                      {"max_abs_error", s.max_abs},
                      {"payload_bytes", s.bytes},
                      {"compression_ratio", ratio},
                      {"bound_fraction", bound_fraction(t)}});
    } else {
      std::printf("  %-22s %6u %12.6g %10.3f %12.6g %12.6g %8.3f\n", name.c_str(), block,
                  s.mean_abs, s.mean_rel_pct, s.rms, s.max_abs, ratio);
    }
  }
  if (a.json) {
    nlohmann::json out = {{"distribution", a.dist},
                          {"n", a.n},
                          {"seed", a.seed},
                          {"rounding", a.stochastic ? "stochastic" : "nearest"},
                          {"simd_target", simd_target()},
                          {"types", rows}};
    std::printf("%s\n", out.dump(2).c_str());
  }
}

// Decodes into a Buffer rather than decode()'s std::vector, which would zero 4 bytes per element
// (and fault their pages in) before the decoder writes them.
void run_decode(const std::string& in, const std::string& out_path) {
  const Buffer payload = read_file(in);
  const PayloadInfo info = inspect(payload.data(), payload.size());
  check_memory(4.0 * double(info.count), in + " decoded");
  Buffer out(info.count * sizeof(float));
  decode(payload.data(), payload.size(), reinterpret_cast<float*>(out.data()), info.count);
  write_file(out_path, out.data(), out.size());
}

}  // namespace

void add_codec_commands(CLI::App& app) {
  CLI::App* codec = app.add_subcommand("codec", "Encode, decode and measure the 8-bit codec");
  codec->require_subcommand(1);

  auto err = std::make_shared<ErrorArgs>();
  CLI::App* error = codec->add_subcommand("error", "Approximation error per data type (Table 2)");
  error->add_option("--type", err->type, "data type or 'all'")->capture_default_str();
  error->add_option("--block", err->block, "block size (0: the type's default)")
      ->check(at_least<uint32_t>(0));
  error->add_option("--dist", err->dist, "normal|uniform|laplace|lognormal")
      ->check(CLI::IsMember({"normal", "uniform", "laplace", "lognormal"}))
      ->capture_default_str();
  error->add_option("--n", err->n, "number of samples")
      ->check(at_least<size_t>(1))
      ->capture_default_str();
  error->add_option("--seed", err->seed, "random seed")->capture_default_str();
  error->add_flag("--stochastic", err->stochastic, "stochastic rounding");
  error->add_flag("--json", err->json, "print one JSON object");
  error->callback([err] { run_error(*err); });

  auto enc = std::make_shared<std::pair<CodecOptions, std::pair<std::string, std::string>>>();
  auto type_name = std::make_shared<std::string>("dynamic");
  CLI::App* encode_cmd = codec->add_subcommand("encode", "Raw little-endian fp32 file -> payload");
  encode_cmd->add_option("--type", *type_name, "data type")->capture_default_str();
  encode_cmd->add_option("--block", enc->first.block_size, "block size (0: the type's default)")
      ->check(at_least<uint32_t>(0));
  encode_cmd->add_flag("--stochastic", enc->first.stochastic, "stochastic rounding");
  encode_cmd->add_option("--seed", enc->first.seed, "stochastic rounding seed");
  encode_cmd->add_flag("--checksum", enc->first.checksum, "append a CRC32 of the body");
  encode_cmd->add_option("input", enc->second.first, "fp32 file")->required();
  encode_cmd->add_option("output", enc->second.second, "payload file")->required();
  encode_cmd->callback([enc, type_name] {
    enc->first.type = parse_data_type(*type_name);
    const Buffer raw = read_file(enc->second.first);  // page-aligned: floats may be read in place
    if (raw.size() % 4 != 0)
      throw Error(ErrorCode::kInvalidArgument,
                  enc->second.first + ": size is not a multiple of 4 bytes (fp32)");
    Buffer out(max_encoded_size(raw.size() / 4, enc->first));
    const size_t n = encode(reinterpret_cast<const float*>(raw.data()), raw.size() / 4, enc->first,
                            out.data(), out.size());
    write_file(enc->second.second, out.data(), n);
  });

  auto table_type = std::make_shared<std::string>("dynamic");
  auto table_offset = std::make_shared<int>(0);
  CLI::App* table = codec->add_subcommand("table", "Print a type's code table (code -> value)");
  table->add_option("--type", *table_type, "data type")->capture_default_str();
  table->add_option("--offset", *table_offset, "mantissa exponent offset (0..8)");
  table->callback([table_type, table_offset] {
    const DataType t = parse_data_type(*table_type);
    const std::vector<float> v = code_values(t, *table_offset);
    std::printf("# %s: %zu codes, error bound %.9g x absmax\n", data_type_name(t), v.size(),
                bound_fraction(t, *table_offset));
    for (size_t c = 0; c < v.size(); ++c)
      std::printf("%3zu 0x%02zx %.9g%s", c, c, v[c], (c % 4 == 3) ? "\n" : "   ");
    if (v.size() % 4) std::printf("\n");
  });

  auto dec = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* decode_cmd = codec->add_subcommand("decode", "Payload -> raw little-endian fp32 file");
  decode_cmd->add_option("input", dec->first, "payload file")->required();
  decode_cmd->add_option("output", dec->second, "fp32 file")->required();
  decode_cmd->callback([dec] { run_decode(dec->first, dec->second); });
}

}  // namespace cli
}  // namespace octet
