// Helpers shared by the predictor's sources; not part of the public API.
#pragma once

#include <string>

#include "octet/predictor.h"

namespace octet {
namespace predictor {

// The encode + decode time that collective_time() adds for the codec.
double collective_codec_time(Collective op, double fp32_bytes, int ranks, const CodecCost& codec);

// Throws kInvalidArgument with "<what>: <why>".
[[noreturn]] void fail(const std::string& what, const std::string& why);

// The GPU count a scenario runs on (gpus, or the whole cluster when 0).
int resolved_gpus(const Scenario& scenario);

}  // namespace predictor
}  // namespace octet
