// `mantissa train --model gpt` (train_gpt_command.h).
#include "mantissa/train_gpt_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "mantissa/json_number.h"
#include "mantissa/runtime.h"
#include "mantissa/text_escape.h"
#include "trainer/analyze.h"
#include "trainer/gpt_policy.h"
#include "trainer/gpt_train.h"
#include "trainer/train.h"

namespace mantissa::tool {

namespace {

namespace tr = mantissa::train;
namespace tn = mantissa::trainer;

const char* kCurveColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                               "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

// Validation loss against step (left) and the loss scale, log2, against step (right: the modes
// whose scaler is on), one colour per mode.
std::string svg_gpt_curves(const std::vector<tn::GptResult>& results, const std::string& title) {
  constexpr double kW = 420, kH = 300, kLeft = 60, kTop = 40, kGap = 90;
  int64_t max_step = 1;
  double lo = INFINITY, hi = -INFINITY, slo = INFINITY, shi = -INFINITY;
  for (const auto& r : results) {
    max_step = std::max(max_step, r.steps);
    for (const auto& e : r.evals) {
      if (!std::isfinite(e.val_loss)) continue;
      lo = std::min(lo, e.val_loss);
      hi = std::max(hi, e.val_loss);
    }
    for (const auto& e : r.evals) {
      slo = std::min(slo, std::log2(static_cast<double>(e.loss_scale)));
      shi = std::max(shi, std::log2(static_cast<double>(e.loss_scale)));
    }
    for (const auto& c : r.scale_changes) {
      slo = std::min(slo, std::log2(static_cast<double>(c.scale)));
      shi = std::max(shi, std::log2(static_cast<double>(c.scale)));
    }
  }
  if (!(lo < hi)) lo = 0, hi = 6;
  const double pad = 0.05 * (hi - lo);
  lo -= pad, hi += pad;
  if (!(slo < shi)) slo -= 1, shi += 1;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n",
      kLeft + 2 * kW + kGap + 150, kTop + kH + 50, kLeft, xml_escape(title));
  auto frame = [&](double x0, const std::string& label, double a, double b, auto tick_label) {
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", x0,
        kTop, kW, kH);
    s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", x0, kTop - 6, label);
    for (int i = 0; i <= 5; ++i) {
      const double v = a + (b - a) * i / 5.0, y = kTop + kH * (1.0 - i / 5.0);
      s += fmt::format(
          "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/><text x=\"{}\" "
          "y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
          x0, x0 + kW, y, y, x0 - 4, y + 4, tick_label(v));
    }
    for (int i = 0; i <= 5; ++i) {
      const double x = x0 + kW * i / 5.0;
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x,
                       kTop + kH + 16, max_step * i / 5);
    }
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">step</text>\n", x0 + kW / 2,
                     kTop + kH + 34);
  };
  auto line = [&](double x0, std::size_t i, const std::vector<std::pair<double, double>>& pts,
                  double a, double b) {
    std::string points;
    for (auto [step, v] : pts) {
      if (!std::isfinite(v)) continue;
      const double f = std::clamp((v - a) / (b - a), 0.0, 1.0);
      points += fmt::format("{:.1f},{:.1f} ", x0 + kW * step / static_cast<double>(max_step),
                            kTop + kH * (1 - f));
    }
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" points=\"{}\"/>\n",
                     kCurveColours[i % 8], points);
  };
  frame(kLeft, "validation loss (nats per byte)", lo, hi,
        [](double v) { return fmt::format("{:.2f}", v); });
  frame(kLeft + kW + kGap, "loss scale (log2; modes with a scaler)", slo, shi,
        [](double v) { return fmt::format("{:.1f}", v); });
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& e : results[i].evals) pts.emplace_back(e.step, e.val_loss);
    line(kLeft, i, pts, lo, hi);
    if (results[i].scale_changes.empty() && results[i].final_scale == 1.0f) continue;
    // The scale as a step function: 65536 at the start, then each change.
    std::vector<std::pair<double, double>> sp;
    double cur = 16.0;
    sp.emplace_back(0, cur);
    for (const auto& c : results[i].scale_changes) {
      sp.emplace_back(static_cast<double>(c.step), cur);
      cur = std::log2(static_cast<double>(c.scale));
      sp.emplace_back(static_cast<double>(c.step), cur);
    }
    sp.emplace_back(static_cast<double>(results[i].steps), cur);
    line(kLeft + kW + kGap, i, sp, slo, shi);
  }
  const double lx = kLeft + 2 * kW + kGap + 15;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const double y = kTop + 10 + 20.0 * i;
    s += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/><text "
        "x=\"{}\" y=\"{}\">{}</text>\n",
        lx, lx + 20, y, y, kCurveColours[i % 8], lx + 26, y + 4, results[i].mode);
  }
  s += "</svg>\n";
  return s;
}

// One parameter's weights as fp32 in a .npy file (format 1.0, little-endian, C order).
Status write_npy(const std::string& path, const tn::Parameter& p) {
  std::string shape;
  for (int64_t d : p.var.shape()) shape += std::to_string(d) + ", ";
  if (p.var.shape().size() == 1)
    shape.pop_back();  // "(4,)"
  else
    shape.resize(shape.size() - 2);
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::vector<float> values(static_cast<std::size_t>(p.var.numel()));
  tn::widen(p.var.data(), p.var.dtype(), values.data(), p.var.numel());
  std::ofstream f(path, std::ios::binary);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(len & 0xFF));
  f.put(static_cast<char>(len >> 8));
  f << header;
  f.write(reinterpret_cast<const char*>(values.data()),
          static_cast<std::streamsize>(values.size() * sizeof(float)));
  if (!f.flush()) return tn::invalid("train --export-init: cannot write " + path);
  return {};
}

// The analysis's normwise errors against depth (log scale), one line per kind of value: the
// forward values in graph order, then the values' gradients from the loss back.
std::string svg_analysis(const tn::GptAnalysis& a, const std::string& title) {
  constexpr double kW = 720, kH = 300, kLeft = 70, kTop = 40, kPanel = kH + 70;
  auto kind_of = [](std::string name) {
    if (name.rfind("d:", 0) == 0) name = name.substr(2);
    const auto dot = name.find('.');
    return name.rfind("block", 0) == 0 && dot != std::string::npos ? name.substr(dot + 1) : name;
  };
  std::vector<tn::GptTensorError> value_grads;
  for (const auto& r : a.grads) {
    if (r.name.rfind("d:", 0) == 0) value_grads.push_back(r);
  }
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n",
      kLeft + kW + 200, kTop + 2 * kPanel, kLeft, xml_escape(title));
  auto panel = [&](const std::vector<tn::GptTensorError>& rows, double top,
                   const std::string& label) {
    std::vector<std::string> kinds;
    int max_depth = 1;
    double lo = 1e-9, hi = 1e-1;
    for (const auto& r : rows) {
      const std::string k = kind_of(r.name);
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
      max_depth = std::max(max_depth, r.depth);
      if (r.rel_norm > 0 && std::isfinite(r.rel_norm)) {
        lo = std::min(lo, r.rel_norm);
        hi = std::max(hi, r.rel_norm);
      }
    }
    const double llo = std::floor(std::log10(lo)), lhi = std::ceil(std::log10(hi));
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n",
        kLeft, top, kW, kH);
    for (double p = llo; p <= lhi; p += 1) {
      const double y = top + kH * (1 - (p - llo) / (lhi - llo));
      s += fmt::format(
          "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/><text "
          "x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">1e{}</text>\n",
          kLeft, kLeft + kW, y, y, kLeft - 4, y + 4, static_cast<int>(p));
    }
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + kW / 2,
                     top + kH + 30, xml_escape(label));
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      std::string points;
      for (const auto& r : rows) {
        if (kind_of(r.name) != kinds[k] || !(r.rel_norm > 0) || !std::isfinite(r.rel_norm))
          continue;
        const double f = (std::log10(r.rel_norm) - llo) / (lhi - llo);
        points += fmt::format("{:.1f},{:.1f} ", kLeft + kW * r.depth / max_depth,
                              top + kH * (1 - std::clamp(f, 0.0, 1.0)));
      }
      const char* colour = kCurveColours[k % 8];
      const double ly = top + 10 + 16 * static_cast<double>(k);
      s += fmt::format(
          "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n"
          "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/>"
          "<text x=\"{}\" y=\"{}\">{}</text>\n",
          colour, points, kLeft + kW + 15, kLeft + kW + 35, ly, ly, colour, kLeft + kW + 40, ly + 4,
          xml_escape(kinds[k]));
    }
  };
  panel(a.rows, kTop,
        "forward: layer (graph order), normwise error of each value against the fp64 shadow");
  panel(value_grads, kTop + kPanel,
        "backward: layers from the loss back, normwise error of each value's gradient");
  s += "</svg>\n";
  return s;
}

std::string bytes_text(int64_t b) {
  if (b >= 1 << 20) return fmt::format("{:.2f} MiB", b / 1048576.0);
  return fmt::format("{:.1f} KiB", b / 1024.0);
}

}  // namespace

int run_train_gpt(const GptCommandOptions& o_in, train::Communicator* comm, bool quiet) {
  GptCommandOptions o = o_in;
  if (quiet) o.log_path.clear(), o.plot_path.clear(), o.export_init.clear();
  std::vector<std::string> modes;
  const std::vector<std::string> known = tn::gpt_mode_names();
  if (o.compare) {
    modes = known;
  } else if (!o.precision.empty() || o.policies.empty()) {
    std::stringstream ss(o.precision.empty() ? std::string("fp32") : o.precision);
    for (std::string name; std::getline(ss, name, ',');) {
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        fmt::print(stderr, "mantissa train: unknown precision mode '{}' ({})\n", name, list);
        return 2;
      }
      modes.push_back(name);
    }
  }
  const int ranks = comm != nullptr ? comm->size() : 1;
  tn::GptTrainOptions to;
  to.model.vocab = o.vocab;
  to.model.context = o.context;
  to.model.d_model = o.d_model;
  to.model.layers = o.layers;
  to.model.heads = o.heads;
  to.model.mlp = o.mlp == "swiglu" ? tn::MlpKind::kSwiGlu : tn::MlpKind::kGelu;
  to.model.norm = o.norm == "rmsnorm" ? tn::NormKind::kRmsNorm : tn::NormKind::kLayerNorm;
  to.model.tied = !o.untie;
  to.steps = o.steps;
  to.batch_size = o.batch_size;
  to.micro_batches = o.micro_batches;
  to.eval_every = o.eval_every;
  to.eval_windows = o.eval_windows;
  to.warmup = o.warmup;
  to.lr = static_cast<float>(o.lr);
  to.weight_decay = static_cast<float>(o.weight_decay);
  to.clip = o.clip;
  to.scale_growth_interval = o.scale_growth_interval;
  if (!o.optimizer_state.empty()) {
    static const std::pair<const char*, MomentFormat> kFormats[] = {
        {"fp32", MomentFormat::kFp32},
        {"bf16", MomentFormat::kBf16},
        {"int8", MomentFormat::kInt8},
        {"int4", MomentFormat::kInt4},
        {"fp8", MomentFormat::kFp8E4M3}};
    for (const auto& [name, f] : kFormats) {
      if (o.optimizer_state == name) to.optimizer_state = f;
    }
  }
  to.seed = o.seed;
  to.save_checkpoint = o.save_checkpoint;
  to.resume = o.resume;
  to.stop_after = o.stop_after;
  if (Status st = to.validate(); !st.ok()) {
    fmt::print(stderr, "mantissa {}\n", st.message());
    return 2;
  }
  // ---- Policies over the units (validated before anything is read or written) ------------------
  const std::vector<std::string> units = tn::unit_names(to.model);
  struct Run {
    std::string name;
    tn::GptPrecision precision;
    std::optional<tr::PrecisionPolicy> policy;
  };
  std::vector<Run> runs;
  tn::GemmRecipe gemm;
  gemm.mx_rule = o.mx_scale_rule == "rceil"  ? tn::MxScaleRule::kRceil
                 : o.mx_scale_rule == "even" ? tn::MxScaleRule::kEven
                                             : tn::MxScaleRule::kFloor;
  gemm.delayed.amax_history_len = o.amax_history;
  gemm.delayed.margin = static_cast<int32_t>(o.fp8_margin);
  gemm.seed = o.seed;
  for (const std::string& m : modes) {
    tn::GptPrecision p;
    tn::gpt_precision_of(m, to.model, gemm, &p);
    runs.push_back({m, p, {}});
  }
  std::vector<tr::PrecisionPolicy> policies;
  for (const std::string& spec : o.policies) {
    tr::PrecisionPolicy p;
    tn::GptPrecision g;
    Status st = tr::load_policy(spec, units, &p);
    if (st.ok()) st = tn::gpt_precision_from_policy(p, to.model, &g);
    if (!st.ok()) {
      fmt::print(stderr, "mantissa train: --policy {}: {}\n", spec, st.message());
      return 2;
    }
    runs.push_back({p.name, g, p});
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
  if (policy_tools && comm != nullptr) {
    fmt::print(stderr, "mantissa train: --sensitivity and --tradeoff run in one process\n");
    return 2;
  }
  std::string path;
  if (!o.data.empty()) {
    if (o.data.rfind("text:", 0) != 0) {
      fmt::print(stderr, "mantissa train --model gpt: --data takes text:FILE, got '{}'\n", o.data);
      return 2;
    }
    path = o.data.substr(5);
    if (path.empty()) {
      fmt::print(stderr, "mantissa train --model gpt: --data text: names no file\n");
      return 2;
    }
  }
  tn::TextCorpus corpus;
  if (Status st = tn::load_text(path, to.model.context, &corpus); !st.ok()) {
    fmt::print(stderr, "mantissa {}\n", st.message());
    return 1;
  }
  if ((!o.save_checkpoint.empty() || !o.resume.empty()) && runs.size() != 1) {
    fmt::print(stderr,
               "mantissa train: --save-checkpoint and --resume take one --precision mode or one "
               "--policy\n");
    return 2;
  }
  if (!o.analyze_path.empty() && runs.size() != 1) {
    fmt::print(stderr, "mantissa train: --analyze takes one --precision mode or one --policy\n");
    return 2;
  }
  std::ofstream log;
  if (!o.log_path.empty()) {
    log.open(o.log_path, std::ios::binary);
    if (!log) {
      fmt::print(stderr, "mantissa train: cannot write {}\n", o.log_path);
      return 1;
    }
  }
  const std::string shape = fmt::format(
      "GPT {} layers, d {}, {} heads, context {}, vocab {}, {} MLP, {}{}", to.model.layers,
      to.model.d_model, to.model.heads, to.model.context, to.model.vocab,
      tn::mlp_name(to.model.mlp), tn::norm_name(to.model.norm), to.model.tied ? ", tied head" : "");
  fmt::print(
      "data {} ({} files): {} train / {} validation bytes\nmodel {}\nAdamW{} lr {:g} (warmup "
      "{}, cosine to {:g}), weight decay {:g} on matrices, clip {:g}, batch {} x {} tokens, "
      "{} steps in {} micro-batches{}, seed {}, {} threads, SIMD {}\n",
      corpus.source, corpus.files, corpus.train.size(), corpus.validation.size(), shape,
      o.optimizer_state.empty() ? std::string() : " (" + o.optimizer_state + " moments)", to.lr,
      to.warmup >= 0 ? to.warmup : std::max<int64_t>(1, to.steps / 20), to.lr * to.min_lr_ratio,
      to.weight_decay, to.clip, to.batch_size, to.model.context, to.steps, to.micro_batch_count(),
      ranks > 1 ? fmt::format(" over {} ranks", ranks) : std::string(), to.seed, num_threads(),
      simd_target());
  if (policy_tools) {
    PolicyToolOptions po = o.policy_tools;
    po.policies = policies;
    PolicyModel pm;
    pm.layers = units;
    pm.gpt = true;
    pm.budget_key = "steps";
    pm.budget = to.steps;
    pm.batch_size = to.batch_size;
    pm.sensitivity = [&](const tr::SensitivityProgress& progress, tr::SensitivityReport* rep) {
      return tn::gpt_sensitivity_runs(corpus, to, progress, rep);
    };
    pm.train = [&](const tr::PrecisionPolicy& p, tr::PolicyResult* r) {
      return tn::gpt_train_policy(corpus, p, to, r);
    };
    return run_policy_tools(
        po, pm, fmt::format("{}, {}, {} steps, seed {}", corpus.source, shape, to.steps, to.seed));
  }
  const bool tty = isatty(STDERR_FILENO) != 0 && !quiet;
  std::vector<tn::GptResult> results;
  for (const Run& run : runs) {
    const std::string& name = run.name;
    if (log.is_open()) {
      nlohmann::json start{
          {"event", "start"},
          {"mode", name},
          {"model", "gpt"},
          {"data", corpus.source},
          {"train_bytes", corpus.train.size()},
          {"validation_bytes", corpus.validation.size()},
          {"layers", to.model.layers},
          {"d_model", to.model.d_model},
          {"heads", to.model.heads},
          {"context", to.model.context},
          {"vocab", to.model.vocab},
          {"mlp", tn::mlp_name(to.model.mlp)},
          {"norm", tn::norm_name(to.model.norm)},
          {"tied", to.model.tied},
          {"steps", to.steps},
          {"batch_size", to.batch_size},
          {"lr", to.lr},
          {"weight_decay", to.weight_decay},
          {"clip", to.clip},
          {"optimizer_state", o.optimizer_state.empty() ? "default" : o.optimizer_state},
          {"seed", to.seed},
          {"micro_batches", to.micro_batch_count()},
          {"ranks", ranks},
          {"threads", num_threads()},
          {"simd_target", simd_target()}};
      if (run.policy) start["policy"] = nlohmann::json::parse(tr::policy_json(*run.policy));
      log << start.dump() << "\n";
    }
    if (!tty) fmt::print("== {}\n", name);
    std::map<std::string, int64_t> shown;
    tn::GptCallbacks cb;
    if (!o.export_init.empty()) {
      cb.on_start = [&](const tn::Gpt& model) -> Status {
        for (const auto& p : model.params()) {
          TRAINER_TRY(write_npy(o.export_init + "/" + p->name + ".npy", *p));
        }
        return {};
      };
    }
    cb.on_step = [&](const tn::GptStep& p) {
      if (log.is_open()) {
        log << nlohmann::json{{"event", "step"}, {"mode", name},
                              {"step", p.step},  {"loss", number(p.loss)},
                              {"lr", p.lr},      {"loss_scale", p.loss_scale}}
                   .dump()
            << "\n";
      }
      if (!tty) return;
      const int width = 24;
      const int filled = static_cast<int>(width * p.step / std::max<int64_t>(1, p.steps));
      fmt::print(stderr,
                 "\r{:<13}[{}{}] step {}/{} loss {:.4f} lr {:.2e} scale {:g} skipped {}\033[K",
                 name, std::string(filled, '#'), std::string(width - filled, '.'), p.step, p.steps,
                 p.loss, p.lr, p.loss_scale, p.skipped_steps);
    };
    cb.on_eval = [&](const tn::GptEval& e) {
      if (!tty) {
        fmt::print(
            "{:<13} step {:>6}  train loss {:.4f}  val loss {:.4f} ({:.4f} bits/byte)  scale "
            "{:g}  skipped {}\n",
            name, e.step, e.train_loss, e.val_loss, e.val_bpb, e.loss_scale, e.skipped_steps);
      }
      if (log.is_open()) {
        log << nlohmann::json{{"event", "eval"},
                              {"mode", name},
                              {"step", e.step},
                              {"val_loss", number(e.val_loss)},
                              {"val_bpb", number(e.val_bpb)},
                              {"train_loss", number(e.train_loss)},
                              {"loss_scale", e.loss_scale},
                              {"skipped_steps", e.skipped_steps}}
                   .dump()
            << "\n";
      }
    };
    cb.on_anomaly = [&](int64_t step, const amp::AnomalyReport& report) {
      for (const amp::Finding& f : report.findings) {
        if (log.is_open()) {
          log << nlohmann::json{{"event", "finding"},     {"mode", name},
                                {"step", step},           {"pattern", f.pattern},
                                {"severity", f.severity}, {"root_cause", f.root_cause},
                                {"tensor", f.tensor},     {"count", f.count}}
                     .dump()
              << "\n";
        }
        if (f.severity >= o.show_severity && shown[f.pattern]++ == 0) {
          fmt::print(stderr, "{}{} step {}: {} (severity {}): {}{}\n", tty ? "\r\033[K" : "", name,
                     step, f.pattern, f.severity, f.root_cause,
                     f.tensor.empty() ? "" : " [" + f.tensor + "]");
        }
      }
    };
    if (log.is_open()) {
      // The FP8 and MX modes: each quantized operand's statistics on every evaluation step.
      cb.on_quant_stats = [&](int64_t step, const std::vector<tn::LowpGemm*>& gemms) {
        nlohmann::json operands = nlohmann::json::array();
        for (const tn::LowpGemm* g : gemms) {
          for (const tn::OperandStats& s : g->stats()) {
            operands.push_back({{"layer", g->name()},
                                {"operand", s.operand},
                                {"format", s.dtype},
                                {"count", s.count},
                                {"nonzero", s.nonzero},
                                {"underflow", s.underflow},
                                {"saturated", s.saturated},
                                {"amax", number(s.amax)},
                                {"scale", number(s.scale)},
                                {"error", number(s.error)}});
          }
        }
        log << nlohmann::json{{"event", "quantized"},
                              {"mode", name},
                              {"step", step},
                              {"operands", operands}}
                   .dump()
            << "\n";
      };
    }
    tn::GptAnalysis analysis;
    if (!o.analyze_path.empty()) {
      cb.on_finish = [&](tn::Gpt& model, float loss_scale) -> Status {
        // The first windows of the validation set (at most 4).
        const int64_t count = tn::validation_windows(corpus, to.model.context, to.eval_windows);
        const int64_t n = std::min<int64_t>(4, count);
        std::vector<int32_t> tokens, targets;
        tn::validation_batch(corpus, to.model.context, count, 0, n, &tokens, &targets);
        TRAINER_TRY(
            tn::analyze_gpt(model, tokens.data(), targets.data(), n, loss_scale, &analysis));
        analysis.mode = name;
        analysis.step = to.steps;
        return {};
      };
    }
    tn::GptResult r;
    if (Status st = tn::train_gpt(corpus, run.precision, name, to, cb, &r, comm); !st.ok()) {
      if (tty) fmt::print(stderr, "\r\033[K");
      fmt::print(stderr, "mantissa train: {}: {}\n", name, st.message());
      return 1;
    }
    if (tty) fmt::print(stderr, "\r\033[K");
    for (const auto& [pattern, count] : shown) {
      if (count > 1)
        fmt::print(stderr, "{}: {} more {} findings (see the log)\n", name, count - 1, pattern);
    }
    fmt::print(
        "{:<13} final: val loss {:.4f} ({:.4f} bits/byte)  skipped {}  {:.1f} ms/step  "
        "digest {}\n",
        name, r.val_loss, r.val_bpb, r.skipped_steps, 1e3 * r.step_time_s, r.digest);
    if (log.is_open()) {
      nlohmann::json changes = nlohmann::json::array();
      for (const auto& c : r.scale_changes) changes.push_back({c.step, c.scale});
      log << nlohmann::json{{"event", "final"},
                            {"mode", name},
                            {"steps", r.steps},
                            {"val_loss", number(r.val_loss)},
                            {"val_bpb", number(r.val_bpb)},
                            {"train_loss", number(r.train_loss)},
                            {"skipped_steps", r.skipped_steps},
                            {"overflow_steps", r.overflow_steps},
                            {"findings", r.findings},
                            {"grad_underflow", r.grad_underflow},
                            {"stalled_updates", r.stalled_updates},
                            {"step_time_s", r.step_time_s},
                            {"params", r.params},
                            {"state_bytes", r.state_bytes},
                            {"loss_scale", r.final_scale},
                            {"scale_changes", changes},
                            {"digest", r.digest}}
                 .dump()
          << "\n";
      log.flush();
    }
    results.push_back(std::move(r));
    if (!o.analyze_path.empty()) {
      const tn::GptAnalysis& a = analysis;
      fmt::print(
          "\nprecision analysis ({}, after {} steps, {} validation windows): loss {:.6f}, fp64 "
          "shadow {:.6f}\n{:<24} {:>5} {:>9} {:>10} {:>10} {:>10} {:>10} {:>9}\n",
          a.mode, a.step, a.batch, a.loss, a.shadow_loss, "value", "dtype", "elements", "normwise",
          "local", "max rel", "mean rel", "mean ulp");
      auto table = [&](const std::vector<tn::GptTensorError>& list) {
        nlohmann::json rows = nlohmann::json::array();
        for (const auto& e : list) {
          fmt::print("{:<24} {:>5} {:>9} {:>10.3e} {:>10.3e} {:>10.3e} {:>10.3e} {:>9.3f}\n",
                     e.name, e.dtype, e.count, e.rel_norm, e.local_norm, e.rel_max, e.rel_mean,
                     e.ulp_mean);
          rows.push_back({{"name", e.name},
                          {"block", e.block},
                          {"depth", e.depth},
                          {"dtype", e.dtype},
                          {"count", e.count},
                          {"shadow_rms", number(e.shadow_rms)},
                          {"rel_norm", number(e.rel_norm)},
                          {"local_norm", number(e.local_norm)},
                          {"rel_max", number(e.rel_max)},
                          {"rel_mean", number(e.rel_mean)},
                          {"ulp_mean", number(e.ulp_mean)},
                          {"ulp_max", number(e.ulp_max)}});
        }
        return rows;
      };
      const nlohmann::json rows = table(a.rows);
      fmt::print(
          "\ngradients of loss x {:g} (d: a value's, in the dtype the mode keeps it; dW: a "
          "parameter's, as the optimizer reads it)\n",
          a.loss_scale);
      const nlohmann::json grads = table(a.grads);
      fmt::print(
          "normwise: ||mode - shadow|| / ||shadow|| (inherited from the layers before); local: "
          "against fp64 on the mode's own inputs (what the layer adds)\n");
      nlohmann::json quantized = nlohmann::json::array();
      if (!a.quantized.empty()) {
        fmt::print(
            "\n{} operands of the blocks' products\n{:<18} {:>7} {:>6} {:>9} {:>10} {:>10} "
            "{:>10} {:>10} {:>10}\n",
            a.mode, "layer", "operand", "format", "elements", "amax", "scale", "underflow",
            "saturated", "error");
        for (const auto& q : a.quantized) {
          const tn::OperandStats& s = q.stats;
          const double nz = static_cast<double>(std::max<int64_t>(1, s.nonzero));
          const double all = static_cast<double>(std::max<int64_t>(1, s.count));
          fmt::print("{:<18} {:>7} {:>6} {:>9} {:>10.3e} {:>10} {:>9.4f}% {:>9.4f}% {:>10.3e}\n",
                     q.layer, s.operand, s.dtype, s.count, s.amax,
                     s.scale > 0 ? fmt::format("{:.3e}", s.scale) : std::string("blocks"),
                     100.0 * static_cast<double>(s.underflow) / nz,
                     100.0 * static_cast<double>(s.saturated) / all, s.error);
          quantized.push_back({{"layer", q.layer},
                               {"operand", s.operand},
                               {"format", s.dtype},
                               {"count", s.count},
                               {"nonzero", s.nonzero},
                               {"underflow", s.underflow},
                               {"saturated", s.saturated},
                               {"amax", number(s.amax)},
                               {"scale", number(s.scale)},
                               {"error", number(s.error)}});
        }
        fmt::print(
            "underflow: nonzero values that became zero, of the nonzero; saturated: values "
            "beyond the largest code after scaling; error: ||dequantized - x|| / ||x||; scale: "
            "the tensor's (blocks: one per block)\n");
      }
      const nlohmann::json doc{{"mode", a.mode},
                               {"model", "gpt"},
                               {"steps", a.step},
                               {"windows", a.batch},
                               {"loss", number(a.loss)},
                               {"shadow_loss", number(a.shadow_loss)},
                               {"loss_scale", a.loss_scale},
                               {"values", rows},
                               {"gradients", grads},
                               {"quantized", quantized}};
      std::ofstream f(o.analyze_path, std::ios::binary);
      f << doc.dump(1) << "\n";
      if (!f.flush()) {
        fmt::print(stderr, "mantissa train: cannot write {}\n", o.analyze_path);
        return 1;
      }
      std::string svg_path = o.analyze_svg;
      if (svg_path.empty()) {
        svg_path = o.analyze_path;
        const auto dot = svg_path.rfind('.');
        svg_path = (dot == std::string::npos ? svg_path : svg_path.substr(0, dot)) + ".svg";
      }
      std::ofstream svg(svg_path, std::ios::binary);
      svg << svg_analysis(
          a, fmt::format("mantissa train --model gpt --analyze: {}, {}", a.mode, shape));
      if (!svg.flush()) {
        fmt::print(stderr, "mantissa train: cannot write {}\n", svg_path);
        return 1;
      }
    }
  }
  if (results.size() > 1) {
    double fp32 = NAN, amp = NAN;
    for (const auto& r : results) {
      if (r.mode == "fp32") fp32 = r.val_loss;
      if (r.mode == "bf16-amp") amp = r.val_loss;
    }
    // Policies alone: against the first run.
    const bool no_fp32 = std::isnan(fp32);
    if (no_fp32) fp32 = results.front().val_loss;
    // The FP8 and MX modes are bf16-amp with quantized products: beside it.
    const bool beside_amp = !std::isnan(amp) && results.size() > 1;
    std::size_t width = 13;
    for (const auto& r : results) width = std::max(width, r.mode.size());
    fmt::print("\n{:<{}} {:>9} {:>9} {:>8}{} {:>10} {:>8} {:>10} {:>8} {:>9} {:>11}  {}\n", "mode",
               width, "val loss", "bits/B", no_fp32 ? "vs 1st" : "vs fp32",
               beside_amp ? fmt::format(" {:>8}", "vs amp") : std::string(), "train loss",
               "skipped", "underflow", "stalled", "ms/step", "state", "digest");
    for (const auto& r : results) {
      fmt::print(
          "{:<{}} {:>9.4f} {:>9.4f} {:>7.2f}%{} {:>10.4f} {:>8} {:>9.3f}% {:>7.2f}% {:>9.1f} "
          "{:>11}  {}\n",
          r.mode, width, r.val_loss, r.val_bpb, 100 * (r.val_loss / fp32 - 1),
          beside_amp ? fmt::format(" {:>7.2f}%", 100 * (r.val_loss / amp - 1)) : std::string(),
          r.train_loss, r.skipped_steps, 100 * r.grad_underflow, 100 * r.stalled_updates,
          1e3 * r.step_time_s, bytes_text(r.state_bytes), r.digest);
    }
    fmt::print(
        "vs fp32{}: relative change of the validation loss; underflow: gradient values nonzero in "
        "fp32 and zero in the mode's 16-bit dtype; stalled: weights an applied step left "
        "unchanged\n",
        beside_amp ? " (vs amp: against bf16-amp)" : "");
  }
  if (!o.plot_path.empty()) {
    std::ofstream plot(o.plot_path, std::ios::binary);
    plot << svg_gpt_curves(
        results, fmt::format("mantissa train --model gpt: {}, {} steps, batch {}", shape, to.steps,
                             to.batch_size));
    if (!plot.flush()) {
      fmt::print(stderr, "mantissa train: cannot write {}\n", o.plot_path);
      return 1;
    }
  }
  if (log.is_open() && !log.flush()) {
    fmt::print(stderr, "mantissa train: cannot write {}\n", o.log_path);
    return 1;
  }
  return 0;
}

}  // namespace mantissa::tool
