// Placeholder until the predictor lands: registers nothing.
#include "cli/commands.h"

namespace octet {
namespace cli {
void add_predict_commands(CLI::App&) {}
}  // namespace cli
}  // namespace octet
