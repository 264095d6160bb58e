// Helpers shared by the predictor's sources; not part of the public API.
#pragma once

#include <functional>
#include <string>

#include "predictor/predictor.h"

namespace octet {
namespace predictor {

// The encode + decode time that collective_time() adds for the codec.
double collective_codec_time(Collective op, double fp32_bytes, int ranks, const CodecCost& codec);

// The bandwidth (bytes/s) where gain(bandwidth) = fp32 time - compressed time changes sign from
// positive (compression pays) to negative, bisected on a log scale over [1 kB/s, 1 PB/s];
// infinity if it pays everywhere, 0 if nowhere.
double break_even_bandwidth(const std::function<double(double)>& gain);

// Throws kInvalidArgument with "<what>: <why>".
[[noreturn]] void fail(const std::string& what, const std::string& why);

// The GPU count a scenario runs on (gpus, or the whole cluster when 0).
int resolved_gpus(const Scenario& scenario);

}  // namespace predictor
}  // namespace octet
