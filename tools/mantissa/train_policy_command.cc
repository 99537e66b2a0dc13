// `mantissa train --sensitivity` and `--tradeoff` (train_policy_command.h): tables on stdout,
// JSON and SVG bar charts, the suggested policy file, progress on stderr.
#include "mantissa/train_policy_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "mantissa/json_number.h"
#include "mantissa/runtime.h"
#include "mantissa/text_escape.h"

namespace mantissa::tool {
namespace {

namespace tr = mantissa::train;

std::string with_suffix(const std::string& path, const std::string& suffix) {
  std::string s = path;
  const auto dot = s.rfind('.');
  const auto slash = s.rfind('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) s.resize(dot);
  return s + suffix;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f.flush()) {
    fmt::print(stderr, "mantissa train: cannot write {}\n", path);
    return false;
  }
  return true;
}

// One panel of horizontal grouped bars: a row per category, a bar per series; negative values
// to the left of the zero line. Returns the SVG elements and advances *y.
std::string bar_panel(const std::string& title, const std::vector<std::string>& categories,
                      const std::vector<std::string>& series,
                      const std::vector<std::vector<double>>& values, double* y) {
  static const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"};
  constexpr double kLeft = 170, kWidth = 460, kBar = 9;
  double lo = 0, hi = 0;
  for (const auto& v : values) {
    for (double x : v) {
      if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
    }
  }
  if (hi - lo <= 0) hi = lo + 1;
  auto px = [&](double x) { return kLeft + kWidth * (x - lo) / (hi - lo); };
  std::string s = fmt::format("<text x=\"10\" y=\"{}\" font-weight=\"bold\">{}</text>\n", *y + 14,
                              xml_escape(title));
  *y += 24;
  for (std::size_t k = 0; k < series.size(); ++k) {
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"9\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}"
        "</text>\n",
        kLeft + 110.0 * k, *y, kColours[k % 4], kLeft + 110.0 * k + 16, *y + 9,
        xml_escape(series[k]));
  }
  *y += 16;
  const double top = *y;
  for (std::size_t c = 0; c < categories.size(); ++c) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLeft - 6,
                     *y + kBar * series.size() / 2.0 + 4, xml_escape(categories[c]));
    for (std::size_t k = 0; k < series.size(); ++k) {
      const double v = values[k][c];
      const double a = px(std::isfinite(v) ? std::min(v, 0.0) : 0.0);
      const double b = px(std::isfinite(v) ? std::max(v, 0.0) : 0.0);
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/><text "
          "x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\">{:.4g}</text>\n",
          a, *y, std::max(0.5, b - a), kBar - 1, kColours[k % 4], b + 3, *y + kBar - 1, v);
      *y += kBar;
    }
    *y += 5;
  }
  s += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#444\"/>\n",
                   px(0), top - 2, *y);
  *y += 12;
  return s;
}

std::string svg_document(const std::string& title, const std::string& body, double height) {
  return fmt::format(
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"{:.0f}\" "
             "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" "
             "fill=\"white\"/>\n<text x=\"10\" y=\"18\" font-size=\"13\">{}</text>\n",
             height, xml_escape(title)) +
         body + "</svg>\n";
}

nlohmann::json rows_json(const std::vector<tr::SensitivityRow>& rows) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : rows) {
    a.push_back({{"layer", r.layer},
                 {"format", r.format},
                 {"depth", r.depth},
                 {"test_loss", number(r.test_loss)},
                 {"test_accuracy", r.test_accuracy},
                 {"loss_change", number(r.loss_change)},
                 {"accuracy_change", r.accuracy_change},
                 {"skipped_steps", r.skipped_steps}});
  }
  return a;
}

// The rows ranked: largest loss increase first (NaN first of all), then the accuracy drop.
std::vector<tr::SensitivityRow> ranked(std::vector<tr::SensitivityRow> rows) {
  auto key = [](const tr::SensitivityRow& r) {
    return std::isnan(r.loss_change) ? INFINITY : r.loss_change;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    if (key(a) != key(b)) return key(a) > key(b);
    return a.accuracy_change < b.accuracy_change;
  });
  return rows;
}

void print_ranking(const std::string& what, const std::vector<tr::SensitivityRow>& rows,
                   double base_loss, bool gpt) {
  fmt::print("\n{}\n{:<4} {:<12} {:<9} {:>10} {:>12} {:>10}", what, "rank", gpt ? "unit" : "layer",
             "format", gpt ? "val loss" : "test loss", "loss change", "rel");
  fmt::print("{}\n", gpt ? fmt::format(" {:>8}", "skipped")
                         : fmt::format(" {:>10} {:>8}", "test acc", "acc chg"));
  int rank = 1;
  for (const auto& r : ranked(rows)) {
    fmt::print("{:<4} {:<12} {:<9} {:>10.4f} {:>+12.5f} {:>+9.2f}%", rank++, r.layer, r.format,
               r.test_loss, r.loss_change, 100 * r.loss_change / base_loss);
    fmt::print("{}\n", gpt ? fmt::format(" {:>8}", r.skipped_steps)
                           : fmt::format(" {:>9.2f}% {:>+7.2f}", 100 * r.test_accuracy,
                                         100 * r.accuracy_change));
  }
}

std::string sensitivity_svg(const tr::SensitivityReport& rep, const std::string& title, bool gpt) {
  std::vector<std::string> layers;
  for (const auto& r : rep.training) {
    if (std::find(layers.begin(), layers.end(), r.layer) == layers.end()) layers.push_back(r.layer);
  }
  auto panel = [&](const std::vector<tr::SensitivityRow>& rows, const char* f1) {
    std::vector<std::vector<double>> v(2, std::vector<double>(layers.size(), NAN));
    for (const auto& r : rows) {
      const auto at = std::find(layers.begin(), layers.end(), r.layer) - layers.begin();
      v[r.format == f1 ? 0 : 1][static_cast<std::size_t>(at)] = r.loss_change;
    }
    return v;
  };
  double y = 28;
  std::string body = bar_panel(
      gpt ? fmt::format("Validation loss change, unit alone in 16 bits (fp32 loss {:.4f})",
                        rep.baseline_loss)
          : fmt::format("Training: test loss change, layer alone in 16 bits (fp32 loss {:.4f})",
                        rep.baseline_loss),
      layers, {"bf16", "fp16"}, panel(rep.training, "bf16"), &y);
  if (!rep.inference.empty()) {
    body += bar_panel("Inference: test loss change, layer alone quantized", layers,
                      {"int8", "fp8-e4m3"}, panel(rep.inference, "int8"), &y);
  }
  return svg_document(title, body, y + 10);
}

}  // namespace

std::string svg_next_to(const std::string& json_path) { return with_suffix(json_path, ".svg"); }

std::string suggested_policy_path(const std::string& sensitivity_json) {
  return with_suffix(sensitivity_json, "-suggested.json");
}

int run_policy_tools(const PolicyToolOptions& o, const PolicyModel& m, const std::string& title) {
  const std::vector<std::string>& names = m.layers;
  const char* loss_name = m.gpt ? "val loss" : "test loss";
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto progress = [&](int done, int total, const std::string& what) {
    if (tty) {
      fmt::print(stderr, "\r[{}/{}] {}\033[K", done, total, what);
      if (done == total) fmt::print(stderr, "\r\033[K");
    } else if (done < total) {
      fmt::print(stderr, "[{}/{}] {}\n", done + 1, total, what);
    }
  };

  // ---- Sensitivity ----------------------------------------------------------------------------
  tr::SensitivityReport rep;
  if (Status st = m.sensitivity(progress, &rep); !st.ok()) {
    fmt::print(stderr, "mantissa train: sensitivity: {}\n", st.message());
    return 1;
  }
  if (m.gpt) {
    fmt::print("fp32 baseline: val loss {:.4f}, digest {}\n", rep.baseline_loss,
               rep.baseline_digest);
    print_ranking(
        "Training sensitivity (unit alone in bf16 / fp16, trained; ranked by validation loss "
        "increase):",
        rep.training, rep.baseline_loss, true);
  } else {
    fmt::print("fp32 baseline: test loss {:.4f}, test acc {:.2f}%, digest {}\n", rep.baseline_loss,
               100 * rep.baseline_accuracy, rep.baseline_digest);
    print_ranking(
        "Training sensitivity (layer alone in bf16 / fp16, trained; ranked by test loss "
        "increase):",
        rep.training, rep.baseline_loss, false);
    print_ranking("Inference sensitivity (layer alone quantized on the trained fp32 model):",
                  rep.inference, rep.baseline_loss, false);
  }
  const tr::PrecisionPolicy suggested =
      tr::suggest_policy(rep, names, o.suggest_format, o.suggest_threshold);
  std::string kept;
  for (const auto& l : suggested.layers) {
    if (l.compute == DType::kFloat32) kept += (kept.empty() ? "" : ", ") + l.layer;
  }
  fmt::print(
      "\nsuggested policy ({} where the {} run raised the {} by more than {:g}% of "
      "fp32's): fp32 for {}\n",
      o.suggest_format, o.suggest_format, loss_name, 100 * o.suggest_threshold,
      kept.empty() ? (m.gpt ? "no unit" : "no layer") : kept);
  if (!o.sensitivity_path.empty()) {
    const nlohmann::json j{{"model", m.gpt ? "gpt" : "mlp"},
                           {"baseline",
                            {{"test_loss", number(rep.baseline_loss)},
                             {"test_accuracy", rep.baseline_accuracy},
                             {"digest", rep.baseline_digest}}},
                           {m.budget_key, m.budget},
                           {"training", rows_json(rep.training)},
                           {"inference", rows_json(rep.inference)},
                           {"training_ranking", rows_json(ranked(rep.training))},
                           {"inference_ranking", rows_json(ranked(rep.inference))},
                           {"suggested_policy", nlohmann::json::parse(tr::policy_json(suggested))},
                           {"suggest_threshold", o.suggest_threshold}};
    const std::string svg = svg_next_to(o.sensitivity_path);
    const std::string pol =
        o.suggest_path.empty() ? suggested_policy_path(o.sensitivity_path) : o.suggest_path;
    if (!write_file(o.sensitivity_path, j.dump(1) + "\n") ||
        !write_file(svg, sensitivity_svg(rep, "mantissa train --sensitivity: " + title, m.gpt)) ||
        !write_file(pol, tr::policy_json(suggested))) {
      return 1;
    }
    fmt::print("wrote {}, {} and the suggested policy {}\n", o.sensitivity_path, svg, pol);
  } else if (!o.suggest_path.empty() && !write_file(o.suggest_path, tr::policy_json(suggested))) {
    return 1;
  }
  if (o.tradeoff_path.empty()) return 0;

  // ---- The trade-off table --------------------------------------------------------------------
  std::vector<tr::PrecisionPolicy> policies;
  for (const char* preset : {"fp32", "bf16-amp", "fp16-amp", "seed"}) {
    tr::PrecisionPolicy p;
    if (Status st = tr::preset_policy(preset, names, &p); !st.ok()) return 1;
    policies.push_back(std::move(p));
  }
  policies.push_back(suggested);
  policies.insert(policies.end(), o.policies.begin(), o.policies.end());
  std::vector<tr::PolicyResult> results;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    progress(static_cast<int>(i), static_cast<int>(policies.size()), "train " + policies[i].name);
    tr::PolicyResult r;
    if (Status st = m.train(policies[i], &r); !st.ok()) {
      fmt::print(stderr, "mantissa train: {}: {}\n", policies[i].name, st.message());
      return 1;
    }
    results.push_back(std::move(r));
  }
  progress(static_cast<int>(policies.size()), static_cast<int>(policies.size()), "done");
  std::size_t width = 16;
  for (const auto& p : policies) width = std::max(width, p.name.size());
  nlohmann::json rows = nlohmann::json::array();
  if (m.gpt) {
    fmt::print(
        "\nTrade-off ({} steps, batch {}, {} threads):\n{:<{}} {:>10} {:>8} {:>9} {:>8} {:>9} "
        "{:>12}  {}\n",
        m.budget, m.batch_size, num_threads(), "policy", width, "val loss", "vs fp32", "underflow",
        "skipped", "ms/step", "state", "digest");
  } else {
    fmt::print(
        "\nTrade-off ({} epochs, batch {}, {} threads):\n{:<{}} {:>9} {:>10} {:>9} {:>9} "
        "{:>12} {:>12}  {}\n",
        m.budget, m.batch_size, num_threads(), "policy", width, "test acc", "test loss", "s/epoch",
        "best s/ep", "activations", "state", "digest");
  }
  const double fp32_loss = results.empty() ? NAN : results[0].run.test_loss;
  for (const auto& r : results) {
    if (m.gpt) {
      fmt::print("{:<{}} {:>10.4f} {:>+7.2f}% {:>8.3f}% {:>8} {:>9.1f} {:>12}  {}\n", r.policy,
                 width, r.run.test_loss, 100 * (r.run.test_loss / fp32_loss - 1),
                 100 * r.run.grad_underflow, r.run.skipped_steps, 1e3 * r.run.seconds_per_epoch,
                 r.run.state_bytes, r.run.digest);
    } else {
      fmt::print("{:<{}} {:>8.2f}% {:>10.4f} {:>9.4f} {:>9.4f} {:>12} {:>12}  {}\n", r.policy,
                 width, 100 * r.run.test_accuracy, r.run.test_loss, r.run.seconds_per_epoch,
                 r.best_epoch_seconds, r.activation_bytes, r.run.state_bytes, r.run.digest);
    }
    rows.push_back({{"policy", r.policy},
                    {"test_accuracy", r.run.test_accuracy},
                    {"test_loss", number(r.run.test_loss)},
                    {"seconds_per_epoch", r.run.seconds_per_epoch},
                    {"best_epoch_seconds", r.best_epoch_seconds},
                    {"activation_bytes", r.activation_bytes},
                    {"state_bytes", r.run.state_bytes},
                    {"skipped_steps", r.run.skipped_steps},
                    {"digest", r.run.digest}});
  }
  if (m.gpt) {
    fmt::print(
        "vs fp32: relative change of the validation loss; underflow: gradient values nonzero in "
        "fp32 and zero in 16 bits; state: weights, master and working copies, optimizer state "
        "(bytes)\n");
  } else {
    fmt::print(
        "activations: bytes every layer keeps for backward per batch of {} rows; state: "
        "weights, master and working copies, optimizer state (bytes)\n",
        m.batch_size);
  }
  nlohmann::json pj = nlohmann::json::array();
  for (const auto& p : policies) pj.push_back(nlohmann::json::parse(tr::policy_json(p)));
  const nlohmann::json j{
      {"model", m.gpt ? "gpt" : "mlp"}, {m.budget_key, m.budget}, {"batch_size", m.batch_size},
      {"threads", num_threads()},       {"rows", rows},           {"policies", pj}};
  std::vector<std::string> cats;
  std::vector<std::vector<double>> acc(1), sec(1), act(1), state(1);
  for (const auto& r : results) {
    cats.push_back(r.policy);
    acc[0].push_back(m.gpt ? r.run.test_loss : 100 * r.run.test_accuracy);
    sec[0].push_back(1000 * r.best_epoch_seconds);
    act[0].push_back(r.activation_bytes / 1024.0);
    state[0].push_back(r.run.state_bytes / 1024.0);
  }
  double y = 28;
  std::string body = m.gpt ? bar_panel("Validation loss (nats per byte)", cats, {"loss"}, acc, &y)
                           : bar_panel("Test accuracy (%)", cats, {"accuracy"}, acc, &y);
  body += bar_panel(m.gpt ? "Median step (ms)" : "Best epoch (ms)", cats, {"time"}, sec, &y);
  if (!m.gpt) {
    body += bar_panel("Stored activations per batch (KiB)", cats, {"activations"}, act, &y);
  }
  body += bar_panel("Weights and optimizer state (KiB)", cats, {"state"}, state, &y);
  const std::string svg = svg_next_to(o.tradeoff_path);
  if (!write_file(o.tradeoff_path, j.dump(1) + "\n") ||
      !write_file(svg, svg_document("mantissa train --tradeoff: " + title, body, y + 10))) {
    return 1;
  }
  fmt::print("wrote {} and {}\n", o.tradeoff_path, svg);
  return 0;
}

}  // namespace mantissa::tool
