// The mantissa command-line tool: info (and, with the precision kit, check; bench).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <functional>
#include <new>
#include <string>

#include "mantissa/bench_command.h"
#include "mantissa/calibrate_command.h"
#include "mantissa/mantissa.h"
#include "mantissa/train_command.h"
#if MANTISSA_HAVE_PRECISION_KIT
#include "mantissa/commands.h"
#endif

namespace {

int run_info() {
  fmt::print("{}", mantissa::info_text());  // the library's report, as python3 -m mantissa info
  return 0;
}

// Runs the parsed command. Operators report failures as statuses; what can still throw here is
// the tool's own work (the trainer's buffers, files, JSON), reported as one line and exit code 1
// rather than std::terminate's abort.
int run_command(CLI::App& app, const std::function<int()>& command) {
  try {
    return command();
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "mantissa {}: out of memory\n", app.get_subcommands().front()->get_name());
  } catch (const std::exception& e) {
    fmt::print(stderr, "mantissa {}: {}\n", app.get_subcommands().front()->get_name(), e.what());
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mantissa: bit-exact mixed-precision training operators for CPUs"};
  app.require_subcommand(1);
  auto* info = app.add_subcommand("info", "CPU features, SIMD targets, the chosen target, threads");
  auto bench = mantissa::tool::add_bench_command(app);
  auto bench_list = mantissa::tool::add_bench_list_command(app);
  auto calibrate = mantissa::tool::add_calibrate_command(app);
  auto train = mantissa::tool::add_train_command(app);
#if MANTISSA_HAVE_PRECISION_KIT
  auto check = mantissa::tool::add_check_command(app);
#endif
  CLI11_PARSE(app, argc, argv);
  if (const std::string error = mantissa::environment_error(); !error.empty()) {
    fmt::print(stderr, "mantissa: refusing to run: {}\n", error);
    return 2;
  }
  return run_command(app, [&]() -> int {
#if MANTISSA_HAVE_PRECISION_KIT
    if (const int rc = check(); rc >= 0) return rc;
#endif
    if (info->parsed()) return run_info();
    if (const int rc = bench(); rc >= 0) return rc;
    if (const int rc = bench_list(); rc >= 0) return rc;
    if (const int rc = calibrate(); rc >= 0) return rc;
    if (const int rc = train(); rc >= 0) return rc;
    return 0;
  });
}
