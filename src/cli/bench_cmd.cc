// Placeholder until the collectives land: registers nothing.
#include "cli/commands.h"

namespace octet {
namespace cli {
void add_bench_commands(CLI::App&) {}
}  // namespace cli
}  // namespace octet
