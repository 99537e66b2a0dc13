// `mantissa bench`: the library side of the performance table, with the bandwidth probe.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace mantissa::tool {

// Adds the subcommand to `app`; the returned function runs it once the command line is parsed.
std::function<int()> add_bench_command(CLI::App& app);
// `mantissa bench-list`: the multi-tensor passes over parameter lists read from shape files.
std::function<int()> add_bench_list_command(CLI::App& app);

}  // namespace mantissa::tool
