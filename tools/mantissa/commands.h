// `mantissa check`: runs case files through the precision kit (see docs/precision_kit.md).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace mantissa::tool {

// Adds the subcommand to `app`; the returned function runs it once the command line is parsed
// and returns its exit status, or -1 when the subcommand was not given.
std::function<int()> add_check_command(CLI::App& app);

}  // namespace mantissa::tool
