// `mantissa calibrate`: INT8 calibration of tensors stored as .npy files (see
// docs/quantization.md). Each input is a .npy file (one tensor, named after the file) or a
// directory whose .npy files, in name order, are the batches of one tensor (named after the
// directory). Prints a table; --json writes the report.
#include "mantissa/calibrate_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mantissa/calibrate.h"
#include "mantissa/cli_checks.h"
#include "mantissa/json_number.h"

namespace mantissa::tool {
namespace {

namespace fs = std::filesystem;

struct CalibrateCommandOptions {
  std::vector<std::string> inputs;
  std::string method = "entropy", json_path;
  double percentile = 99.99;
  int per_channel_axis = -1;
  bool histogram = false;
};

bool g_tty = false;
std::string g_current;

void show_progress(std::size_t done, std::size_t total) {
  if (!g_tty) return;
  const int width = 30;
  const int filled = static_cast<int>(width * done / std::max<std::size_t>(1, total));
  fmt::print(stderr, "\r  {:<24} [{}{}] {}/{}", g_current, std::string(filled, '#'),
             std::string(width - filled, '.'), done, total);
  if (done == total) fmt::print(stderr, "\r{}\r", std::string(width + 40, ' '));
}

int run_calibrate(const CalibrateCommandOptions& o) {
  calib::CalibrateOptions co;
  if (o.method == "max") {
    co.method = calib::Method::kMax;
  } else if (o.method == "percentile") {
    co.method = calib::Method::kPercentile;
  } else if (o.method == "entropy") {
    co.method = calib::Method::kEntropy;
  } else {
    fmt::print(stderr, "mantissa calibrate: unknown method {} (max, percentile, entropy)\n",
               o.method);
    return 2;
  }
  co.percentile = o.percentile;
  co.per_channel_axis = o.per_channel_axis;
  g_tty = isatty(STDERR_FILENO) != 0;

  nlohmann::json tensors = nlohmann::json::array();
  fmt::print("{:<24} {:<18} {:<10} {:>12} {:>12} {:>9} {:>8} {:>11}\n", "tensor", "shape", "method",
             "threshold", "scale", "clipped", "SNR dB", "MSE");
  for (const std::string& input : o.inputs) {
    std::vector<std::string> files;
    std::string name = fs::path(input).stem().string();
    if (fs::is_directory(input)) {
      name = fs::path(input).filename().string();
      if (name.empty()) name = fs::path(input).parent_path().filename().string();
      for (const auto& e : fs::directory_iterator(input)) {
        if (e.path().extension() == ".npy") files.push_back(e.path().string());
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        fmt::print(stderr, "mantissa calibrate: {} holds no .npy file\n", input);
        return 1;
      }
    } else {
      files.push_back(input);
    }
    // Every batch is read and checked before anything is computed.
    std::vector<calib::NpyArray> arrays(files.size());
    std::vector<TensorView> batches;
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (Status st = calib::read_npy(files[i], &arrays[i]); !st.ok()) {
        fmt::print(stderr, "mantissa calibrate: {}\n", st.message());
        return 1;
      }
      batches.push_back(arrays[i].view());
    }
    g_current = name;
    calib::TensorReport r;
    if (Status st = calib::calibrate_tensor(name, batches, co, &r, show_progress); !st.ok()) {
      fmt::print(stderr, "mantissa calibrate: {}\n", st.message());
      return 1;
    }
    std::string shape = "[";
    for (std::size_t i = 0; i < r.shape.size(); ++i) {
      shape += (i ? "," : "") + std::to_string(r.shape[i]);
    }
    shape += "]" + (files.size() > 1 ? fmt::format("x{}", files.size()) : std::string());
    fmt::print("{:<24} {:<18} {:<10} {:>12.6g} {:>12.6g} {:>8.4f}% {:>8.2f} {:>11.4g}\n", name,
               shape, calib::method_name(r.method), r.chosen.threshold, r.chosen.scale,
               100.0 * r.clipped_fraction, r.snr_db, r.mse);
    nlohmann::json t = {{"name", name},
                        {"shape", r.shape},
                        {"batches", files.size()},
                        {"threshold", number(r.chosen.threshold)},
                        {"scale", number(r.chosen.scale)},
                        {"bin", r.chosen.bin},
                        {"divergence", number(r.chosen.divergence)},
                        {"clipped_fraction", r.clipped_fraction},
                        {"snr_db", number(r.snr_db)},
                        {"mse", r.mse},
                        {"nonfinite", r.nonfinite}};
    if (!r.channel_scales.empty()) t["channel_scales"] = r.channel_scales;
    if (o.histogram && o.per_channel_axis < 0) {
      calib::Histogram h;
      for (const TensorView& b : batches) (void)h.add(b);
      t["histogram"] = {
          {"bin_width", h.bin_width()}, {"absmax", h.absmax()}, {"counts", h.counts()}};
    }
    tensors.push_back(t);
  }
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << nlohmann::json{{"method", o.method},
                          {"percentile", o.percentile},
                          {"per_channel_axis", o.per_channel_axis},
                          {"tensors", tensors}}
               .dump(1)
        << "\n";
    out.flush();  // a full disk shows at the flush, not at the buffered write
    if (!out) {
      fmt::print(stderr, "mantissa calibrate: cannot write {}\n", o.json_path);
      return 1;
    }
  }
  return 0;
}

}  // namespace

std::function<int()> add_calibrate_command(CLI::App& app) {
  auto o = std::make_shared<CalibrateCommandOptions>();
  CLI::App* cmd =
      app.add_subcommand("calibrate", "INT8 calibration of tensors stored as .npy files");
  cmd->add_option("inputs", o->inputs,
                  ".npy files (one tensor each) or directories of .npy batches of one tensor")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("--method", o->method, "max, percentile or entropy (KL)");
  cmd->add_option("--percentile", o->percentile, "For --method percentile: P in (0, 100]")
      ->check(tool::kFinite);
  cmd->add_option("--per-channel", o->per_channel_axis, "Per-channel scales along this axis");
  cmd->add_option("--json", o->json_path, "Write the report as JSON");
  cmd->add_flag("--histogram", o->histogram, "Include each tensor's histogram in the JSON");
  return [cmd, o] { return cmd->parsed() ? run_calibrate(*o) : -1; };
}

}  // namespace mantissa::tool
