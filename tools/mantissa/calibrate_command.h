// `mantissa calibrate`: INT8 calibration of .npy tensors, a table and a JSON report.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace mantissa::tool {

std::function<int()> add_calibrate_command(CLI::App& app);

}  // namespace mantissa::tool
