// `mantissa train`: trains the MLP on a data set in one or several precision modes, with a
// progress bar on a terminal (plain per-epoch lines otherwise), a JSONL log, a CSV, an SVG of
// the loss and accuracy curves, and with --compare a final side-by-side table. See
// docs/training.md.
#include "mantissa/train_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "mantissa/cli_checks.h"
#include "mantissa/json_number.h"
#include "mantissa/runtime.h"
#include "mantissa/text_escape.h"
#include "mantissa/train_distributed_cli.h"
#include "mantissa/train_gpt_command.h"
#include "mantissa/train_policy_command.h"
#include "trainer/train.h"
#include "trainer/train_policy.h"

namespace mantissa::tool {
namespace {

namespace tr = mantissa::train;

struct TrainCommandOptions {
  std::string data, precision, optimizer = "adamw", activation = "relu", header = "auto";
  std::string hidden = "256,256", log_path, csv_path, plot_path, analyze_path, analyze_svg;
  bool compare = false;
  int epochs = 30;
  int64_t batch_size = 64;
  double lr = 0.0;             // 0: the optimizer's default
  double weight_decay = -1.0;  // < 0: 0.01 for AdamW, 0 otherwise
  double clip = 0.0;
  double test_fraction = 0.2;
  uint64_t seed = 0;
  int show_severity = 7;
  std::vector<std::string> policies;  // --policy FILE.json or preset:NAME
  PolicyToolOptions policy_tools;     // --sensitivity, --tradeoff, --suggest*
  DistributedCli distributed;         // --distributed, --shards, --zero, --grad-comm, checkpoints
  std::string model = "mlp";          // mlp or gpt
  GptCommandOptions gpt;              // --model gpt's own options
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The curves of every mode in one picture: test loss (log scale) on the left, test accuracy on
// the right, one colour per mode.
std::string svg_plot(const std::vector<tr::ModeResult>& results, const std::string& title) {
  static const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  constexpr double kW = 420, kH = 300, kLeft = 60, kTop = 40, kGap = 90;
  int max_epoch = 1;
  double lo = INFINITY, hi = -INFINITY, acc_lo = 1.0;
  for (const auto& r : results) {
    for (const auto& e : r.epochs) {
      max_epoch = std::max(max_epoch, e.epoch);
      if (std::isfinite(e.test_loss) && e.test_loss > 0) {
        lo = std::min(lo, e.test_loss);
        hi = std::max(hi, e.test_loss);
      }
      if (std::isfinite(e.test_accuracy)) acc_lo = std::min(acc_lo, e.test_accuracy);
    }
  }
  if (!(lo < hi)) lo = 1e-3, hi = 10;
  const double llo = std::floor(std::log10(lo)), lhi = std::ceil(std::log10(hi));
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n",
      kLeft + 2 * kW + kGap + 150, kTop + kH + 50, kLeft, xml_escape(title));
  auto panel = [&](double x0, const std::string& label, auto y_of, const std::vector<double>& ticks,
                   auto tick_label, auto value_of) {
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", x0,
        kTop, kW, kH);
    s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", x0, kTop - 6, label);
    for (double t : ticks) {
      const double y = kTop + kH * (1.0 - y_of(t));
      s += fmt::format(
          "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/><text x=\"{}\" "
          "y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
          x0, x0 + kW, y, y, x0 - 4, y + 4, tick_label(t));
    }
    for (int e = 0; e <= max_epoch; e += std::max(1, max_epoch / 6)) {
      const double x = x0 + kW * e / max_epoch;
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x,
                       kTop + kH + 16, e);
    }
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">epoch</text>\n", x0 + kW / 2,
                     kTop + kH + 34);
    for (std::size_t i = 0; i < results.size(); ++i) {
      std::string points;
      for (const auto& e : results[i].epochs) {
        const double v = value_of(e);
        if (!std::isfinite(v)) continue;
        const double f = std::clamp(y_of(v), 0.0, 1.0);
        points += fmt::format("{:.1f},{:.1f} ", x0 + kW * e.epoch / max_epoch, kTop + kH * (1 - f));
      }
      s += fmt::format(
          "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" points=\"{}\"/>\n",
          kColours[i % 8], points);
    }
  };
  std::vector<double> loss_ticks;
  for (double p = llo; p <= lhi; p += 1) loss_ticks.push_back(std::pow(10.0, p));
  panel(
      kLeft, "test loss (log scale)",
      [&](double v) { return v > 0 ? (std::log10(v) - llo) / (lhi - llo) : 0.0; }, loss_ticks,
      [](double t) { return fmt::format("{:g}", t); },
      [](const tr::EpochRecord& e) { return e.test_loss; });
  // Accuracy from the lowest value seen (rounded down to 5%) to 100%.
  const double acc_floor = std::min(0.95, std::floor(acc_lo * 20.0) / 20.0);
  std::vector<double> acc_ticks;
  for (int i = 0; i <= 5; ++i) acc_ticks.push_back(acc_floor + (1.0 - acc_floor) * i / 5.0);
  panel(
      kLeft + kW + kGap, "test accuracy",
      [&](double v) { return (v - acc_floor) / (1.0 - acc_floor); }, acc_ticks,
      [](double t) { return fmt::format("{:.1f}%", 100 * t); },
      [](const tr::EpochRecord& e) { return e.test_accuracy; });
  const double lx = kLeft + 2 * kW + kGap + 15;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const double y = kTop + 10 + 20.0 * i;
    s += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/><text "
        "x=\"{}\" y=\"{}\">{}</text>\n",
        lx, lx + 20, y, y, kColours[i % 8], lx + 26, y + 4, tr::mode_name(results[i].mode));
  }
  s += "</svg>\n";
  return s;
}

// Normwise relative error against depth, log scale, one line per tensor kind.
std::string svg_analysis(const tr::AnalysisReport& r, const std::string& title) {
  constexpr double kW = 560, kH = 300, kLeft = 70, kTop = 40;
  static const char* kKinds[] = {"activation", "grad_input", "grad_weight"};
  static const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c"};
  int max_depth = 1;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& t : r.tensors) {
    max_depth = std::max(max_depth, t.depth);
    if (std::isfinite(t.rel_error_norm) && t.rel_error_norm > 0) {
      lo = std::min(lo, t.rel_error_norm);
      hi = std::max(hi, t.rel_error_norm);
    }
  }
  if (!(lo <= hi)) lo = 1e-8, hi = 1;
  const double llo = std::floor(std::log10(lo)), lhi = std::max(llo + 1, std::ceil(std::log10(hi)));
  auto y_of = [&](double v) {
    const double f = v > 0 ? (std::log10(v) - llo) / (lhi - llo) : 0.0;
    return kTop + kH * (1.0 - std::clamp(f, 0.0, 1.0));
  };
  auto x_of = [&](int depth) { return kLeft + kW * depth / max_depth; };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n"
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n"
      "<text x=\"{}\" y=\"{}\">relative error ||m - s|| / ||s|| against the fp64 shadow (log "
      "scale)</text>\n",
      kLeft + kW + 160, kTop + kH + 110, kLeft, xml_escape(title), kLeft, kTop, kW, kH, kLeft,
      kTop - 6);
  for (double p = llo; p <= lhi; p += 1) {
    const double y = y_of(std::pow(10.0, p));
    s += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/><text "
        "x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">1e{}</text>\n",
        kLeft, kLeft + kW, y, y, kLeft - 4, y + 4, p);
  }
  // Layer names under the axis (the loss is one past the last layer), rotated.
  std::set<int> named;
  for (const auto& t : r.tensors) {
    if (!named.insert(t.depth).second) continue;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" transform=\"rotate(40 {:.1f} {})\">{}</text>\n",
                     x_of(t.depth), kTop + kH + 14, x_of(t.depth), kTop + kH + 14, t.layer);
  }
  for (int k = 0; k < 3; ++k) {
    std::vector<std::pair<int, double>> pts;
    for (const auto& t : r.tensors) {
      if (t.tensor == kKinds[k] && std::isfinite(t.rel_error_norm))
        pts.emplace_back(t.depth, t.rel_error_norm);
    }
    std::sort(pts.begin(), pts.end());
    std::string points;
    for (const auto& [d, v] : pts) {
      points += fmt::format("{:.1f},{:.1f} ", x_of(d), y_of(v));
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", x_of(d),
                       y_of(v), kColours[k]);
    }
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" points=\"{}\"/>\n",
                     kColours[k], points);
    const double ly = kTop + 10 + 20.0 * k;
    s += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/><text "
        "x=\"{}\" y=\"{}\">{}</text>\n",
        kLeft + kW + 15, kLeft + kW + 35, ly, ly, kColours[k], kLeft + kW + 41, ly + 4, kKinds[k]);
  }
  s += "</svg>\n";
  return s;
}

// --analyze: one mode, the table on stdout, the JSON and the SVG.
int run_analysis(const TrainCommandOptions& o, tr::Mode mode, const tr::Dataset& data,
                 const tr::TrainOptions& to, const std::string& widths) {
  tr::AnalysisReport r;
  if (Status st = tr::analyze_precision(data, mode, to, &r); !st.ok()) {
    fmt::print(stderr, "mantissa train: {}: {}\n", tr::mode_name(mode), st.message());
    return 1;
  }
  fmt::print(
      "precision analysis of {} after {} epochs: batch of {} rows, loss scale {:g}, loss {:.6f} "
      "(fp64 shadow {:.6f})\n",
      tr::mode_name(mode), r.epochs, r.rows, r.loss_scale, r.loss, r.shadow_loss);
  fmt::print("{:<12} {:<11} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>8} {:>9}\n", "layer",
             "tensor", "rel max", "rel rms", "rel norm", "ulp max", "ulp mean", "inherited",
             "local", "amplif", "cond");
  for (const auto& t : r.tensors) {
    fmt::print(
        "{:<12} {:<11} {:>9.2e} {:>9.2e} {:>9.2e} {:>8.3g} {:>8.3g} {:>9.2e} {:>9.2e} {:>8.3g} "
        "{:>9.3g}\n",
        t.layer, t.tensor, t.rel_error_max, t.rel_error_rms, t.rel_error_norm, t.ulp_max,
        t.ulp_mean, t.inherited, t.local, t.amplification, t.condition);
  }
  const auto by_local =
      std::max_element(r.tensors.begin(), r.tensors.end(),
                       [](const auto& a, const auto& b) { return a.local < b.local; });
  const auto by_amp =
      std::max_element(r.tensors.begin(), r.tensors.end(), [](const auto& a, const auto& b) {
        return !(a.amplification >= b.amplification) && std::isfinite(b.amplification);
      });
  if (by_local != r.tensors.end()) {
    fmt::print("largest added (local) error: {} {} {:.2e}; largest amplification: {} {} {:.3g}\n",
               by_local->layer, by_local->tensor, by_local->local, by_amp->layer, by_amp->tensor,
               by_amp->amplification);
  }
  // Sensitivity, largest gradient error first.
  std::vector<tr::LayerSensitivity> ranked = r.sensitivity;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.grad_error > b.grad_error; });
  const char* sdt = r.sensitivity_dtype == DType::kFloat16 ? "fp16" : "bf16";
  fmt::print(
      "\nsensitivity: the fp64 shadow with one layer alone stored in {} (output, input gradient, "
      "weight gradient), ranked\n{:<12} {:>12} {:>12} {:>12} {:>10}\n",
      sdt, "layer", "grad error", "logits error", "loss change", "mask flips");
  for (const auto& s : ranked) {
    fmt::print("{:<12} {:>12.3e} {:>12.3e} {:>12.3e} {:>10}\n", s.layer, s.grad_error,
               s.logits_error, s.loss_change, s.mask_flips);
  }
  nlohmann::json sensitivity = nlohmann::json::array();
  for (const auto& s : r.sensitivity) {
    sensitivity.push_back({{"name", s.layer},
                           {"depth", s.depth},
                           {"dtype", sdt},
                           {"grad_error", number(s.grad_error)},
                           {"logits_error", number(s.logits_error)},
                           {"loss_change", number(s.loss_change)},
                           {"mask_flips", s.mask_flips}});
  }
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& t : r.tensors) {
    layers.push_back(
        {{"name", t.layer},
         {"tensor", t.tensor},
         {"depth", t.depth},
         {"count", t.count},
         {"shadow_rms", number(t.shadow_rms)},
         {"shadow_max", number(t.shadow_max)},
         {"sign_flips", t.sign_flips},
         {"rel_error_max", number(t.rel_error_max)},
         {"rel_error_mean", number(t.rel_error_mean)},
         {"rel_error_rms", number(t.rel_error_rms)},
         {"rel_error_norm", number(t.rel_error_norm)},
         {"ulp_max", number(t.ulp_max)},
         {"ulp_mean", number(t.ulp_mean)},
         {"inherited", number(t.inherited)},
         {"local", number(t.local)},
         {"propagated", number(t.propagated)},
         {"amplification",
          std::isnan(t.amplification) ? nlohmann::json() : number(t.amplification)},
         {"condition", std::isnan(t.condition) ? nlohmann::json() : number(t.condition)}});
  }
  const nlohmann::json doc{{"mode", tr::mode_name(mode)},
                           {"data", data.source},
                           {"widths", widths},
                           {"epochs", r.epochs},
                           {"rows", r.rows},
                           {"loss_scale", r.loss_scale},
                           {"loss", number(r.loss)},
                           {"shadow_loss", number(r.shadow_loss)},
                           {"layers", layers},
                           {"sensitivity", sensitivity}};
  std::ofstream json(o.analyze_path, std::ios::binary);
  json << doc.dump(2) << "\n";
  if (!json.flush()) {
    fmt::print(stderr, "mantissa train: cannot write {}\n", o.analyze_path);
    return 1;
  }
  std::string svg_path = o.analyze_svg;
  if (svg_path.empty()) {
    svg_path = o.analyze_path;
    const auto dot = svg_path.rfind('.');
    const auto slash = svg_path.rfind('/');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash))
      svg_path.resize(dot);
    svg_path += ".svg";
  }
  std::ofstream svg(svg_path, std::ios::binary);
  svg << svg_analysis(r, fmt::format("mantissa train --analyze: {} {}, {} epochs",
                                     tr::mode_name(mode), widths, r.epochs));
  if (!svg.flush()) {
    fmt::print(stderr, "mantissa train: cannot write {}\n", svg_path);
    return 1;
  }
  fmt::print("wrote {} and {}\n", o.analyze_path, svg_path);
  return 0;
}

std::string human_bytes(int64_t b) {
  if (b >= 1 << 20) return fmt::format("{:.2f} MiB", b / 1048576.0);
  return fmt::format("{:.1f} KiB", b / 1024.0);
}

// Every file the run will write, checked before anything is trained: none is an input (the
// data, a policy file) or another output, and each one's directory exists and is writable.
// Otherwise `--csv` equal to `--data` overwrote the training data, and an unwritable `--plot`
// was reported only after every run had trained.
int check_output_paths(const TrainCommandOptions& o) {
  namespace fs = std::filesystem;
  struct Named {
    std::string option, path;
  };
  std::vector<Named> outputs;
  const auto add = [&](const std::string& option, const std::string& path) {
    if (!path.empty()) outputs.push_back({option, path});
  };
  add("--log", o.log_path);
  add("--csv", o.csv_path);
  add("--plot", o.plot_path);
  add("--analyze", o.analyze_path);
  if (!o.analyze_path.empty()) {
    add("--analyze-svg", o.analyze_svg.empty() ? svg_next_to(o.analyze_path) : o.analyze_svg);
  }
  const PolicyToolOptions& t = o.policy_tools;
  add("--sensitivity", t.sensitivity_path);
  if (!t.sensitivity_path.empty()) {
    add("--sensitivity (its SVG)", svg_next_to(t.sensitivity_path));
    add("--suggest",
        t.suggest_path.empty() ? suggested_policy_path(t.sensitivity_path) : t.suggest_path);
  } else {
    add("--suggest", t.suggest_path);
  }
  add("--tradeoff", t.tradeoff_path);
  if (!t.tradeoff_path.empty()) add("--tradeoff (its SVG)", svg_next_to(t.tradeoff_path));
  std::vector<Named> inputs;
  if (o.data.rfind("text:", 0) == 0 && o.data.size() > 5) {
    inputs.push_back({"--data", o.data.substr(5)});
  } else if (!o.data.empty() && o.data.find(':') == std::string::npos) {
    inputs.push_back({"--data", o.data});
  }
  for (const std::string& p : o.policies) {
    if (p.rfind("preset:", 0) != 0) inputs.push_back({"--policy", p});
  }
  const auto same = [](const std::string& a, const std::string& b) {
    std::error_code ea, eb;
    const fs::path ca = fs::weakly_canonical(a, ea), cb = fs::weakly_canonical(b, eb);
    return ea || eb ? a == b : ca == cb;
  };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (const Named& in : inputs) {
      if (same(outputs[i].path, in.path)) {
        fmt::print(stderr, "mantissa train: {} {} is the {} file: it would be overwritten\n",
                   outputs[i].option, outputs[i].path, in.option);
        return 2;
      }
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (same(outputs[i].path, outputs[j].path)) {
        fmt::print(stderr, "mantissa train: {} and {} name the same file {}\n", outputs[j].option,
                   outputs[i].option, outputs[i].path);
        return 2;
      }
    }
    const fs::path dir = fs::path(outputs[i].path).parent_path();
    const std::string d = dir.empty() ? std::string(".") : dir.string();
    if (::access(d.c_str(), W_OK) != 0) {
      fmt::print(stderr,
                 "mantissa train: {} {}: the directory {} does not exist or is not "
                 "writable\n",
                 outputs[i].option, outputs[i].path, d);
      return 2;
    }
  }
  return 0;
}

int run_train(TrainCommandOptions o) {
  // ---- Arguments --------------------------------------------------------------------------
  std::vector<tr::Mode> modes;
  if (o.compare) {
    modes.assign(tr::all_modes().begin(), tr::all_modes().end());
  } else {
    const std::string precision = o.precision.empty() && o.policies.empty() ? "fp32" : o.precision;
    for (const std::string& name : split(precision, ',')) {
      const auto m = tr::mode_from_name(name);
      if (!m) {
        std::string known;
        for (tr::Mode k : tr::all_modes())
          known += std::string(known.empty() ? "" : ", ") + tr::mode_name(k);
        fmt::print(stderr, "mantissa train: unknown precision mode '{}' ({})\n", name, known);
        return 2;
      }
      modes.push_back(*m);
    }
    if (modes.empty() && o.policies.empty()) {
      fmt::print(stderr, "mantissa train: --precision names no mode\n");
      return 2;
    }
  }
  // Every rank checks the same paths (before the quiet ranks drop their outputs below).
  if (const int rc = check_output_paths(o); rc != 0) return rc;
  DistributedSession session;
  if (const int rc = session.start(o.distributed, modes.size()); rc != 0) return rc;
  if (session.quiet()) o.log_path.clear(), o.csv_path.clear(), o.plot_path.clear();
  tr::TrainOptions to;
  to.hidden.clear();
  // Every comma-separated item a width: an empty one ("256,,256", ",,,") is an error, not a
  // layer left out.
  std::vector<std::string> hidden_widths;
  {
    std::stringstream ss(o.hidden);
    for (std::string item; std::getline(ss, item, ',');) hidden_widths.push_back(item);
    if (!o.hidden.empty() && o.hidden.back() == ',') hidden_widths.emplace_back();
  }
  for (const std::string& w : hidden_widths) {
    char* end = nullptr;
    const long long v = std::strtoll(w.c_str(), &end, 10);
    if (*end != '\0' || v <= 0 || v > 65536) {
      fmt::print(stderr, "mantissa train: --hidden: '{}' is not a width in [1, 65536]\n", w);
      return 2;
    }
    to.hidden.push_back(v);
  }
  to.activation = o.activation == "gelu" ? tr::Activation::kGelu : tr::Activation::kRelu;
  to.optimizer = o.optimizer == "sgd"    ? tr::Optimizer::kSgd
                 : o.optimizer == "adam" ? tr::Optimizer::kAdam
                                         : tr::Optimizer::kAdamW;
  to.epochs = o.epochs;
  to.batch_size = o.batch_size;
  if (o.lr > 0) to.lr = static_cast<float>(o.lr);
  to.weight_decay = static_cast<float>(
      o.weight_decay >= 0 ? o.weight_decay : (to.optimizer == tr::Optimizer::kAdamW ? 0.01 : 0.0));
  to.clip = o.clip;
  to.seed = o.seed;

  // ---- Policies (validated before anything is read or written) ------------------------------
  std::vector<tr::PrecisionPolicy> policies;
  for (const std::string& spec : o.policies) {
    tr::PrecisionPolicy p;
    if (Status st = tr::load_policy(spec, tr::layer_names(to), &p); !st.ok()) {
      fmt::print(stderr, "mantissa train: --policy {}: {}\n", spec, st.message());
      return 2;
    }
    policies.push_back(std::move(p));
  }
  const bool policy_tools =
      !o.policy_tools.sensitivity_path.empty() || !o.policy_tools.tradeoff_path.empty();
  if (policy_tools && (o.compare || !o.analyze_path.empty() || !o.precision.empty())) {
    fmt::print(stderr,
               "mantissa train: --sensitivity and --tradeoff run their own policies; they do not "
               "combine with --compare, --analyze or --precision\n");
    return 2;
  }
  if (!policy_tools && !o.policy_tools.suggest_path.empty()) {
    fmt::print(stderr, "mantissa train: --suggest needs --sensitivity or --tradeoff\n");
    return 2;
  }
  if (!o.analyze_path.empty() && !policies.empty()) {
    fmt::print(stderr, "mantissa train: --analyze takes one --precision mode, not --policy\n");
    return 2;
  }
  if (session.active() && (policy_tools || !policies.empty())) {
    fmt::print(stderr,
               "mantissa train: --policy, --sensitivity and --tradeoff run in one process, "
               "without shards\n");
    return 2;
  }

  // ---- Data ---------------------------------------------------------------------------------
  tr::Dataset data;
  const tr::HeaderRule header = o.header == "yes"  ? tr::HeaderRule::kYes
                                : o.header == "no" ? tr::HeaderRule::kNo
                                                   : tr::HeaderRule::kAuto;
  if (Status st = tr::load_dataset(
          {.spec = o.data, .header = header, .test_fraction = o.test_fraction, .seed = o.seed},
          &data);
      !st.ok()) {
    fmt::print(stderr, "mantissa train: {}\n", st.message());
    return 1;
  }
  if (!data.header.empty()) {
    fmt::print("data {}: its first line is read as a header{}: '{}'\n", data.source,
               header == tr::HeaderRule::kAuto ? " (--header no reads it as data)" : "",
               data.header);
  }
  std::string widths = std::to_string(data.features);
  for (int64_t w : to.hidden) widths += "-" + std::to_string(w);
  widths += "-" + std::to_string(data.classes);
  const float lr = to.lr.value_or(to.optimizer == tr::Optimizer::kSgd ? 0.05f : 1e-3f);
  fmt::print(
      "data {}: {} train / {} test rows, {} features, {} classes\nmodel {} ({}), {} lr {:g} "
      "weight decay {:g}{}, batch {}, {} epochs, seed {}, {} threads, SIMD {}\n",
      data.source, data.train_rows(), data.test_rows(), data.features, data.classes, widths,
      tr::activation_name(to.activation), tr::optimizer_name(to.optimizer), lr, to.weight_decay,
      to.clip > 0 ? fmt::format(", clip {:g}", to.clip) : std::string(), to.batch_size, to.epochs,
      to.seed, num_threads(), simd_target());

  if (policy_tools) {
    PolicyToolOptions po = o.policy_tools;
    po.policies = policies;
    PolicyModel pm;
    pm.layers = tr::layer_names(to);
    pm.budget_key = "epochs";
    pm.budget = to.epochs;
    pm.batch_size = to.batch_size;
    pm.sensitivity = [&](const tr::SensitivityProgress& progress, tr::SensitivityReport* rep) {
      return tr::sensitivity_runs(data, to, progress, rep);
    };
    pm.train = [&](const tr::PrecisionPolicy& p, tr::PolicyResult* r) {
      return tr::train_policy(data, p, to, {}, r);
    };
    return run_policy_tools(
        po, pm, fmt::format("{} {}, {} epochs, seed {}", data.source, widths, to.epochs, to.seed));
  }
  if (!o.analyze_path.empty()) {
    if (modes.size() != 1) {
      fmt::print(stderr, "mantissa train: --analyze takes one --precision mode\n");
      return 2;
    }
    if (session.active()) {
      fmt::print(stderr, "mantissa train: --analyze runs in one process, without shards\n");
      return 2;
    }
    return run_analysis(o, modes.front(), data, to, widths);
  }

  std::ofstream log, csv;
  if (!o.log_path.empty()) {
    log.open(o.log_path, std::ios::binary);
    if (!log) {
      fmt::print(stderr, "mantissa train: cannot write {}\n", o.log_path);
      return 1;
    }
  }
  if (!o.csv_path.empty()) {
    csv.open(o.csv_path, std::ios::binary);
    if (!csv) {
      fmt::print(stderr, "mantissa train: cannot write {}\n", o.csv_path);
      return 1;
    }
    csv << "mode,epoch,train_loss,train_accuracy,test_loss,test_accuracy,loss_scale,"
           "skipped_steps,overflow_steps,findings,grad_underflow,stalled_updates,seconds\n";
  }
  const bool tty = isatty(STDERR_FILENO) != 0 && !session.quiet();

  // ---- Runs ---------------------------------------------------------------------------------
  std::vector<tr::ModeResult> results;
  std::vector<std::string> run_names;
  for (std::size_t run_index = 0; run_index < modes.size() + policies.size(); ++run_index) {
    const bool is_policy = run_index >= modes.size();
    const tr::Mode mode = is_policy ? tr::Mode::kFp32 : modes[run_index];
    const std::string name =
        is_policy ? policies[run_index - modes.size()].name : tr::mode_name(mode);
    run_names.push_back(name);
    if (log.is_open()) {
      log << nlohmann::json{{"event", "start"},
                            {"mode", name},
                            {"data", data.source},
                            {"train_rows", data.train_rows()},
                            {"test_rows", data.test_rows()},
                            {"widths", widths},
                            {"activation", tr::activation_name(to.activation)},
                            {"optimizer", tr::optimizer_name(to.optimizer)},
                            {"lr", lr},
                            {"weight_decay", to.weight_decay},
                            {"clip", to.clip},
                            {"batch_size", to.batch_size},
                            {"epochs", to.epochs},
                            {"seed", to.seed},
                            {"threads", num_threads()},
                            {"simd_target", simd_target()}}
                 .dump()
          << "\n";
    }
    if (!tty) fmt::print("== {}\n", name);
    std::map<std::string, int64_t> shown;  // findings printed per pattern
    tr::TrainCallbacks cb;
    cb.on_step = [&](const tr::StepProgress& p) {
      if (!tty) return;
      const int width = 24;
      const int64_t total = static_cast<int64_t>(to.epochs) * p.steps_per_epoch;
      const int64_t done = static_cast<int64_t>(p.epoch - 1) * p.steps_per_epoch + p.step;
      const int filled = static_cast<int>(width * done / std::max<int64_t>(1, total));
      fmt::print(stderr,
                 "\r{:<13}[{}{}] epoch {}/{} step {}/{} loss {:.4f} acc {:5.1f}% scale {:g} "
                 "skipped {}\033[K",
                 name, std::string(filled, '#'), std::string(width - filled, '.'), p.epoch,
                 to.epochs, p.step, p.steps_per_epoch, p.loss, 100 * p.running_accuracy,
                 p.loss_scale, p.skipped_steps);
    };
    cb.on_epoch = [&](const tr::EpochRecord& e) {
      if (!tty) {
        fmt::print(
            "{:<13} epoch {:>3}  train loss {:.4f} acc {:6.2f}%  test loss {:.4f} acc {:6.2f}%  "
            "scale {:g}  skipped {}  {:.3f} s\n",
            name, e.epoch, e.train_loss, 100 * e.train_accuracy, e.test_loss, 100 * e.test_accuracy,
            e.loss_scale, e.skipped_steps, e.seconds);
      }
      if (log.is_open()) {
        log << nlohmann::json{{"event", "epoch"},
                              {"mode", name},
                              {"epoch", e.epoch},
                              {"train_loss", number(e.train_loss)},
                              {"train_accuracy", e.train_accuracy},
                              {"test_loss", number(e.test_loss)},
                              {"test_accuracy", e.test_accuracy},
                              {"loss_scale", e.loss_scale},
                              {"skipped_steps", e.skipped_steps},
                              {"overflow_steps", e.overflow_steps},
                              {"findings", e.findings},
                              {"grad_underflow", e.grad_underflow},
                              {"stalled_updates", e.stalled_updates},
                              {"seconds", e.seconds}}
                   .dump()
            << "\n";
      }
      if (csv.is_open()) {
        csv << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(name), e.epoch,
                           e.train_loss, e.train_accuracy, e.test_loss, e.test_accuracy,
                           e.loss_scale, e.skipped_steps, e.overflow_steps, e.findings,
                           e.grad_underflow, e.stalled_updates, e.seconds);
      }
    };
    cb.on_anomaly = [&](int epoch, int64_t step, const amp::AnomalyReport& report) {
      for (const amp::Finding& f : report.findings) {
        if (log.is_open()) {
          log << nlohmann::json{{"event", "finding"},
                                {"mode", name},
                                {"epoch", epoch},
                                {"step", step},
                                {"pattern", f.pattern},
                                {"severity", f.severity},
                                {"root_cause", f.root_cause},
                                {"tensor", f.tensor},
                                {"count", f.count},
                                {"first_index", f.first_index},
                                {"actions", f.actions}}
                     .dump()
              << "\n";
        }
        // The first finding of each pattern at or above the threshold goes to the screen.
        if (!session.quiet() && f.severity >= o.show_severity && shown[f.pattern]++ == 0) {
          fmt::print(stderr, "{}{} epoch {} step {}: {} (severity {}): {}{}\n",
                     tty ? "\r\033[K" : "", name, epoch, step, f.pattern, f.severity, f.root_cause,
                     f.tensor.empty() ? "" : " [" + f.tensor + "]");
        }
      }
    };
    tr::ModeResult r;
    Status run_status;
    if (is_policy) {
      tr::PolicyResult pr;
      run_status = tr::train_policy(data, policies[run_index - modes.size()], to, cb, &pr);
      r = std::move(pr.run);
    } else {
      run_status = session.train(data, mode, to, cb, &r);
    }
    if (Status st = run_status; !st.ok()) {
      if (tty) fmt::print(stderr, "\r\033[K");
      fmt::print(stderr, "mantissa train: {}: {}\n", name, st.message());
      session.fail(1);
      return 1;
    }
    if (tty) fmt::print(stderr, "\r\033[K");
    for (const auto& [pattern, count] : shown) {
      if (count > 1)
        fmt::print(stderr, "{}: {} more {} findings (see the log)\n", name, count - 1, pattern);
    }
    fmt::print(
        "{:<13} final: test acc {:.2f}%  test loss {:.4f}  skipped {}  overflow {}  {:.3f} "
        "s/epoch  digest {}\n",
        name, 100 * r.test_accuracy, r.test_loss, r.skipped_steps, r.overflow_steps,
        r.seconds_per_epoch, r.digest);
    nlohmann::json distributed_fields = nlohmann::json::object();
    session.report(&distributed_fields);
    if (log.is_open()) {
      nlohmann::json final_record{{"event", "final"},
                                  {"mode", name},
                                  {"epochs", to.epochs},
                                  {"test_accuracy", r.test_accuracy},
                                  {"test_loss", number(r.test_loss)},
                                  {"skipped_steps", r.skipped_steps},
                                  {"overflow_steps", r.overflow_steps},
                                  {"findings", r.findings},
                                  {"grad_underflow", r.grad_underflow},
                                  {"stalled_updates", r.stalled_updates},
                                  {"seconds_per_epoch", r.seconds_per_epoch},
                                  {"state_bytes", r.state_bytes},
                                  {"digest", r.digest}};
      final_record.update(distributed_fields);
      log << final_record.dump() << "\n";
      log.flush();
    }
    results.push_back(std::move(r));
  }

  // ---- Summary ------------------------------------------------------------------------------
  if (results.size() > 1) {
    std::size_t width = 13;
    for (const std::string& n : run_names) width = std::max(width, n.size());
    fmt::print("\n{:<{}} {:>9} {:>10} {:>8} {:>9} {:>10} {:>8} {:>8} {:>11}  {}\n", "mode", width,
               "test acc", "test loss", "skipped", "overflow", "underflow", "stalled", "s/epoch",
               "state", "digest");
    for (std::size_t k = 0; k < results.size(); ++k) {
      const tr::ModeResult& r = results[k];
      fmt::print("{:<{}} {:>8.2f}% {:>10.4f} {:>8} {:>9} {:>9.3f}% {:>7.2f}% {:>8.3f} {:>11}  {}\n",
                 run_names[k], width, 100 * r.test_accuracy, r.test_loss, r.skipped_steps,
                 r.overflow_steps, 100 * r.grad_underflow, 100 * r.stalled_updates,
                 r.seconds_per_epoch, human_bytes(r.state_bytes), r.digest);
    }
    fmt::print(
        "underflow: gradient values nonzero in fp32 and zero in the mode's 16-bit dtype; stalled: "
        "weights an applied step left unchanged\n");
  }
  if (!o.plot_path.empty()) {
    std::ofstream plot(o.plot_path, std::ios::binary);
    plot << svg_plot(results, fmt::format("mantissa train: {} {}, {}, batch {}", data.source,
                                          widths, tr::optimizer_name(to.optimizer), to.batch_size));
    if (!plot) {
      fmt::print(stderr, "mantissa train: cannot write {}\n", o.plot_path);
      return 1;
    }
  }
  if (csv.is_open() && !csv.flush()) {
    fmt::print(stderr, "mantissa train: cannot write {}\n", o.csv_path);
    return 1;
  }
  if (log.is_open() && !log.flush()) {
    fmt::print(stderr, "mantissa train: cannot write {}\n", o.log_path);
    return 1;
  }
  return 0;
}

}  // namespace

std::function<int()> add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train an MLP classifier, or a GPT on text (--model gpt), end to end in one or every "
      "precision mode (fp32, AMP, bf16 ...)");
  cmd->add_option("--data", o->data,
                  "CSV(.gz) with the integer label last, or synthetic:N (default: the digits set "
                  "of python3-sklearn)");
  cmd->add_option("--precision", o->precision,
                  "Modes, comma-separated: fp32, fp16-amp, bf16-amp, bf16-pure, bf16-kahan, "
                  "bf16-sr, fp16-noscale; --model gpt also fp8-delayed, fp8-current, mxfp8, "
                  "mxfp4, nvfp4");
  cmd->add_flag("--compare", o->compare, "Every mode, then a side-by-side table");
  cmd->add_option("--epochs", o->epochs, "Epochs (default 30)")->check(CLI::Range(0, 100000));
  cmd->add_option("--batch-size", o->batch_size,
                  "Rows per step (default 64; --model gpt: sequences, 16)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--lr", o->lr,
                  "Learning rate (default 1e-3; SGD 0.05; --model gpt: the peak, 1e-3)")
      ->check(tool::kFiniteFloat)
      ->check(CLI::PositiveNumber);
  cmd->add_option("--optimizer", o->optimizer, "adamw, adam or sgd (default adamw)")
      ->check(CLI::IsMember({"adamw", "adam", "sgd"}));
  cmd->add_option(
         "--weight-decay", o->weight_decay,
         "AdamW's decoupled decay, SGD's L2 term (default 0.01 for AdamW, else 0; --model gpt: "
         "0.1, on matrices)")
      ->check(tool::kFinite)
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--clip", o->clip,
                  "Clip gradients to this global L2 norm (default: no; --model gpt: 1.0)")
      ->check(tool::kFiniteFloat)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--hidden", o->hidden, "Hidden widths, comma-separated (default 256,256)");
  cmd->add_option("--activation", o->activation, "relu or gelu (default relu)")
      ->check(CLI::IsMember({"relu", "gelu"}));
  cmd->add_option("--header", o->header,
                  "auto (default: a first line with a non-number, or the names 0..n-1, is a "
                  "header, and said so), yes or no")
      ->check(CLI::IsMember({"auto", "yes", "no"}));
  cmd->add_option("--test-fraction", o->test_fraction, "Test rows per class (default 0.2)")
      ->check(tool::kFinite)
      ->check(CLI::Range(0.01, 0.99));
  cmd->add_option("--seed", o->seed, "Split, initial weights, batch order, rounding (default 0)")
      ->check(tool::kUint64);
  cmd->add_option("--log", o->log_path, "Write JSONL records (epochs, findings, finals)");
  cmd->add_option("--csv", o->csv_path, "Write per-epoch rows as CSV");
  cmd->add_option("--plot", o->plot_path, "Write the loss and accuracy curves as SVG");
  cmd->add_option("--analyze", o->analyze_path,
                  "After training (--epochs, 0: the initial weights), analyse one batch against "
                  "an fp64 shadow: per-layer errors as a table and JSON to this file");
  cmd->add_option("--analyze-svg", o->analyze_svg,
                  "The analysis's error-against-depth SVG (default: next to the JSON, .svg)");
  cmd->add_option("--policy", o->policies,
                  "Train under a per-layer (MLP) or per-unit (GPT: embeddings, block0, ...) "
                  "precision policy: FILE.json or preset:seed (also preset:fp32, "
                  "preset:bf16-amp, preset:fp16-amp); repeatable");
  cmd->add_option("--sensitivity", o->policy_tools.sensitivity_path,
                  "Each layer (GPT: unit) alone in bf16/fp16, trained, and for the MLP in INT8/FP8 "
                  "for inference: the ranking as a table, this JSON, an SVG and the suggested "
                  "policy next to it");
  cmd->add_option("--tradeoff", o->policy_tools.tradeoff_path,
                  "The trade-off table (fp32, bf16-amp, fp16-amp, the seed preset, the suggested "
                  "policy and any --policy): table, this JSON and an SVG next to it");
  cmd->add_option("--suggest", o->policy_tools.suggest_path,
                  "Where to write the suggested policy (default: next to the sensitivity JSON)");
  cmd->add_option("--suggest-threshold", o->policy_tools.suggest_threshold,
                  "Keep in fp32 the layers (units) whose 16-bit run raised the test (GPT: "
                  "validation) loss by more than this fraction of fp32's (default 0.02)")
      ->check(tool::kFinite)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--suggest-format", o->policy_tools.suggest_format,
                  "The 16-bit format of the suggested policy: bf16 or fp16 (default bf16)")
      ->check(CLI::IsMember({"bf16", "fp16"}));
  cmd->add_option("--show-severity", o->show_severity,
                  "Print anomaly findings of at least this severity (0..10, default 7)")
      ->check(CLI::Range(0, 11));
  add_distributed_options(cmd, &o->distributed);
  // ---- The GPT (docs/training_gpt.md) ----
  GptCommandOptions& g = o->gpt;
  cmd->add_option("--model", o->model, "mlp (default) or gpt: the transformer language model")
      ->check(CLI::IsMember({"mlp", "gpt"}));
  const char* kGpt = "GPT";
  auto size = [&](const char* name, int64_t* v, const char* help, int64_t hi) {
    cmd->add_option(name, *v, help)->check(CLI::Range(int64_t{1}, hi))->group(kGpt);
  };
  size("--layers", &g.layers, "Transformer blocks (default 4)", 64);
  size("--d-model", &g.d_model, "Model width (default 128)", 8192);
  size("--heads", &g.heads, "Attention heads, dividing --d-model (default 4)", 8192);
  size("--context", &g.context, "Tokens per sequence (default 128)", 4096);
  size("--vocab", &g.vocab, "Vocabulary, >= 256 byte tokens (default 256)", 65536);
  size("--eval-every", &g.eval_every, "Steps between validation passes (default 50)",
       int64_t{1} << 40);
  size("--eval-windows", &g.eval_windows, "Validation windows (default 128)", int64_t{1} << 30);
  cmd->add_option("--steps", g.steps, "Optimizer steps (default 300)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000000}))
      ->group(kGpt);
  cmd->add_option("--warmup", g.warmup, "Warmup steps (default steps / 20)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000000}))
      ->group(kGpt);
  cmd->add_option("--mlp", g.mlp, "gelu (4d, tanh form) or swiglu (default gelu)")
      ->check(CLI::IsMember({"gelu", "swiglu"}))
      ->group(kGpt);
  cmd->add_option("--norm", g.norm, "layernorm or rmsnorm (default layernorm)")
      ->check(CLI::IsMember({"layernorm", "rmsnorm"}))
      ->group(kGpt);
  cmd->add_flag("--untie", g.untie, "An output head of its own (default: tied to the embedding)")
      ->group(kGpt);
  cmd->add_option("--micro-batches", g.micro_batches,
                  "Micro-batches per step, a power of two dividing --batch-size, whose gradients "
                  "a fixed tree sums (default: up to 4); --distributed ranks must divide it")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}))
      ->group(kGpt);
  cmd->add_option("--export-init", g.export_init,
                  "Write each parameter's initial weights (fp32) as DIR/NAME.npy")
      ->check(CLI::ExistingDirectory)
      ->group(kGpt);
  cmd->add_option(
         "--optimizer-state", g.optimizer_state,
         "AdamW's moments: fp32, bf16, int8, int4 or fp8 (default: in each weight's "
         "optimizer dtype; the quantized formats for parameters of 4096 elements and more)")
      ->check(CLI::IsMember({"fp32", "bf16", "int8", "int4", "fp8"}))
      ->group(kGpt);
  cmd->add_option("--stop-after", g.stop_after,
                  "End after this many steps (an evaluation and, with --save-checkpoint, a "
                  "checkpoint), the schedule still that of --steps; --resume continues")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}))
      ->group(kGpt);
  cmd->add_option("--mx-scale-rule", g.mx_scale_rule,
                  "mxfp8 and mxfp4: the E8M0 scale of a block, floor (OCP), rceil (amax / max "
                  "rounded up) or even (torchao's) (default floor)")
      ->check(CLI::IsMember({"floor", "rceil", "even"}))
      ->group(kGpt);
  cmd->add_option("--amax-history", g.amax_history,
                  "fp8-delayed: steps of amax history, the scale from their max (default 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}))
      ->group(kGpt);
  cmd->add_option("--fp8-margin", g.fp8_margin,
                  "fp8-delayed: the scale divided by 2^margin (default 0)")
      ->check(CLI::Range(int64_t{-126}, int64_t{127}))
      ->group(kGpt);
  cmd->add_option("--scale-growth-interval", g.scale_growth_interval,
                  "Clean steps before the loss scaler grows the scale (default 100)")
      ->check(CLI::Range(int64_t{1}, int64_t{2147483647}))
      ->group(kGpt);
  return [cmd, o] {
    if (!cmd->parsed()) return -1;
    const bool gpt = o->model == "gpt";
    static const char* kMlpOnly[] = {"--epochs",     "--hidden",          "--activation",
                                     "--optimizer",  "--test-fraction",   "--header",
                                     "--csv",        "--shards",          "--zero",
                                     "--grad-comm",  "--bucket-mib",      "--abort-rank",
                                     "--abort-step", "--inject-inf-rank", "--inject-inf-step"};
    static const char* kGptOnly[] = {"--layers",
                                     "--d-model",
                                     "--heads",
                                     "--context",
                                     "--vocab",
                                     "--eval-every",
                                     "--eval-windows",
                                     "--steps",
                                     "--warmup",
                                     "--mlp",
                                     "--norm",
                                     "--untie",
                                     "--optimizer-state",
                                     "--mx-scale-rule",
                                     "--amax-history",
                                     "--fp8-margin",
                                     "--stop-after",
                                     "--scale-growth-interval"};
    for (const char* name :
         gpt ? std::span<const char* const>(kMlpOnly) : std::span<const char* const>(kGptOnly)) {
      const CLI::Option* opt = cmd->get_option_no_throw(name);
      if (opt != nullptr && opt->count() > 0) {
        fmt::print(stderr, "mantissa train: {} {} with --model {}\n", name,
                   gpt ? "is not available" : "needs --model gpt; it has no meaning", o->model);
        return 2;
      }
    }
    if (!gpt) return run_train(*o);
    GptCommandOptions run = o->gpt;
    run.data = o->data;
    run.precision = o->precision;
    run.compare = o->compare;
    if (cmd->get_option("--batch-size")->count() > 0) run.batch_size = o->batch_size;
    if (o->lr > 0) run.lr = o->lr;
    if (o->weight_decay >= 0) run.weight_decay = o->weight_decay;
    if (cmd->get_option("--clip")->count() > 0) run.clip = o->clip;
    run.seed = o->seed;
    run.show_severity = o->show_severity;
    run.log_path = o->log_path;
    run.plot_path = o->plot_path;
    run.analyze_path = o->analyze_path;
    run.analyze_svg = o->analyze_svg;
    run.policies = o->policies;
    run.policy_tools = o->policy_tools;
    run.save_checkpoint = o->distributed.save_checkpoint;
    run.resume = o->distributed.resume;
    if (const int rc = check_output_paths(*o); rc != 0) return rc;
    DistributedSession session;
    DistributedCli dc;
    dc.distributed = o->distributed.distributed;
    if (const int rc = session.start(dc, 1); rc != 0) return rc;
    const int rc = run_train_gpt(run, session.communicator(), session.quiet());
    if (rc != 0) session.fail(rc);
    return rc;
  };
}

}  // namespace mantissa::tool
