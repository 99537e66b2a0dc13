// `mantissa train`: the MLP trained end to end in one or every precision mode (see
// docs/training.md).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace mantissa::tool {

std::function<int()> add_train_command(CLI::App& app);

}  // namespace mantissa::tool
