// Helpers shared by the predictor's sources; not part of the public API.
#pragma once

#include <exception>
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

// Limits of the model's inputs (docs/predictor.md): a typo such as 1e300 fails with a message
// instead of printing a step time of 300 digits. kMaxElements is 2^60 values (params,
// activations): 2^62 fp32 bytes, the size grammar's limit.
constexpr double kMaxCount = 1e9;  // GPUs, nodes, batch, ranks, block
constexpr double kMaxElements = 1152921504606846976.0;
constexpr double kMaxSeconds = 1e9;                        // any time (about 32 years)
constexpr double kMinBandwidth = 1, kMaxBandwidth = 1e18;  // B/s
constexpr double kMinEfficiency = 1e-3;                    // model_parallel_efficiency

// v as an int when it is a whole number in [1, kMaxCount]; else throws "<what>: expected a positive
// integer (at most 1e9)".
int to_positive_int(double v, const std::string& what);
// Throws "<what>: ..." unless v is a whole number of values in [0, kMaxElements].
void check_elements(double v, const std::string& what);
// Throws "<what>: ..." unless v lies in [kMinEfficiency, 1].
void check_efficiency(double v, const std::string& what);
// The cluster part of validate(): counts, their product, links.
void validate_cluster(const Cluster& cluster);
// A JSON library error's message without its "[json.exception.parse_error.101] " tag.
std::string json_error_text(const std::exception& e);

// The GPU count a scenario runs on (gpus, or the whole cluster when 0).
int resolved_gpus(const Scenario& scenario);

}  // namespace predictor
}  // namespace octet
