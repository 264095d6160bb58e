// libFuzzer target: the predictor's inputs, which come from users' files (built with ASan and
// UBSan). The first byte picks the reader, the rest is the file's text:
//  0: a TOML scenario, 1: a JSON scenario (what `octet calibrate` writes), 2: a shim report.
// A scenario that parses and passes validate() is merged over a preset and predicted; the
// prediction must be a number everywhere (no NaN, finite step times, a break-even bandwidth in
// [0, +inf]). Anything else must end in a clean octet::Error of one line.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "octet/error.h"
#include "predictor/predictor.h"

namespace {

namespace pr = octet::predictor;

void check_step(const pr::StepTime& s) {
  for (double v : {s.step_s, s.comm_s, s.exposed_s, s.codec_s, s.start_s, s.speedup})
    if (!std::isfinite(v) || v < 0) __builtin_trap();
}

void check_scenario(const std::string& text, bool toml) {
  pr::ScenarioParts parts = pr::preset("alexnet-4gpu");
  pr::merge_into(parts, pr::parse_scenario(text, toml, "fuzz"));
  pr::validate(parts.scenario);
  const pr::Prediction p = pr::predict(parts.scenario);
  if (!std::isfinite(p.single_gpu_step_s) || p.single_gpu_step_s <= 0) __builtin_trap();
  check_step(p.fp32);
  check_step(p.int8);
  if (std::isnan(p.break_even_Bps) || p.break_even_Bps < 0) __builtin_trap();
}

void check_report(const std::string& text) {
  const pr::ScenarioParts parts = pr::preset("alexnet-4gpu");
  const pr::ReportAnalysis a =
      pr::analyze_report(text, parts.scenario.cluster, parts.scenario.codec);
  if (a.ranks <= 0) __builtin_trap();
  if (std::isnan(a.fp32_total_s) || std::isnan(a.int8_total_s)) __builtin_trap();
  for (const auto& b : a.buckets)
    if (std::isnan(b.fp32_s) || std::isnan(b.int8_s) || std::isnan(b.break_even_Bps))
      __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0:
        check_scenario(text, true);
        break;
      case 1:
        check_scenario(text, false);
        break;
      default:
        check_report(text);
    }
  } catch (const octet::Error& e) {
    if (std::strchr(e.what(), '\n') != nullptr) __builtin_trap();  // one line
  }
  return 0;
}
