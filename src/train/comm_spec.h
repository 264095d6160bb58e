// What `--comm` names: how gradients travel. Grammar (one list, run side by side):
//
//   list := spec ("," spec)*        spec := "fp32" | type ("+" modifier)*
//   type := any name octet::parse_data_type accepts (dynamic, linear, mantissa, static_tree,
//           dynamic4; dynamic_unsigned is refused: gradients have both signs)
//   modifier := "sr" (stochastic rounding) | "ef" (error feedback), each at most once
//
// e.g. "fp32,dynamic,linear,dynamic4,dynamic+sr,dynamic+ef". Names are printed canonically
// (octet::data_type_name, then +sr, then +ef).
#pragma once

#include <string>
#include <vector>

#include "octet/codec.h"

namespace octet {
namespace train {

struct CommSpec {
  bool fp32 = true;  // plain MPI_Allreduce of fp32
  DataType type = DataType::kDynamic;
  bool stochastic = false;
  bool error_feedback = false;
  std::string name() const;
};

// Throws kInvalidArgument with the offending item and the grammar.
CommSpec parse_comm(const std::string& text);
std::vector<CommSpec> parse_comm_list(const std::string& text);

// `--mode`: a comma list of dp | mp | hybrid, each at most once; throws kInvalidArgument.
std::vector<std::string> parse_mode_list(const std::string& text);

}  // namespace train
}  // namespace octet
