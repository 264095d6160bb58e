#include "train/comm_spec.h"

#include <algorithm>

#include "octet/detail/quoted.h"
#include "octet/error.h"

namespace octet {
namespace train {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = text.find(sep, start)) != std::string::npos; start = at + 1)
    parts.push_back(text.substr(start, at - start));
  parts.push_back(text.substr(start));
  return parts;
}

[[noreturn]] void bad(const std::string& item, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument,
              "--comm: " + detail::quoted(item) + ": " + why +
                  " (expected fp32 or <type>[+sr][+ef], e.g. fp32,dynamic,dynamic+ef)");
}

}  // namespace

std::string CommSpec::name() const {
  if (fp32) return "fp32";
  return std::string(data_type_name(type)) + (stochastic ? "+sr" : "") +
         (error_feedback ? "+ef" : "");
}

CommSpec parse_comm(const std::string& text) {
  const std::vector<std::string> parts = split(text, '+');
  CommSpec spec;
  if (parts[0] == "fp32") {
    if (parts.size() > 1) bad(text, "fp32 takes no modifiers");
    return spec;
  }
  spec.fp32 = false;
  try {
    spec.type = parse_data_type(parts[0]);
  } catch (const Error& e) {
    bad(text, e.what());
  }
  if (spec.type == DataType::kDynamicUnsigned)
    bad(text, "dynamic_unsigned needs single-signed blocks; gradients have both signs");
  for (size_t i = 1; i < parts.size(); ++i) {
    bool& flag = parts[i] == "sr" ? spec.stochastic : spec.error_feedback;
    if (parts[i] != "sr" && parts[i] != "ef")
      bad(text, "unknown modifier " + detail::quoted(parts[i]));
    if (flag) bad(text, detail::quoted(parts[i]) + " given twice");
    flag = true;
  }
  return spec;
}

std::vector<CommSpec> parse_comm_list(const std::string& text) {
  std::vector<CommSpec> specs;
  std::vector<std::string> names;
  for (const std::string& item : split(text, ',')) {
    const CommSpec spec = parse_comm(item);
    if (std::find(names.begin(), names.end(), spec.name()) != names.end())
      bad(item, "listed twice");
    names.push_back(spec.name());
    specs.push_back(spec);
  }
  return specs;
}

std::vector<std::string> parse_mode_list(const std::string& text) {
  static const std::vector<std::string> known = {"dp", "mp", "hybrid"};
  std::vector<std::string> modes;
  for (const std::string& item : split(text, ',')) {
    if (std::find(known.begin(), known.end(), item) == known.end())
      throw Error(ErrorCode::kInvalidArgument, "--mode: unknown mode " + detail::quoted(item) +
                                                   " (expected a comma list of dp, mp, hybrid)");
    if (std::find(modes.begin(), modes.end(), item) != modes.end())
      throw Error(ErrorCode::kInvalidArgument, "--mode: " + detail::quoted(item) + " listed twice");
    modes.push_back(item);
  }
  return modes;
}

}  // namespace train
}  // namespace octet
