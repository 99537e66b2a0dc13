// AnomalyDetector: the pass (amp/grad_stats.h) and the patterns. The severity formulas are
// documented in docs/amp.md; keep the two in step.
#include "mantissa/amp/anomaly.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "amp/grad_stats.h"
#include "core/validate.h"
#include "mantissa/amp/loss_scaler.h"
#include "mantissa/ops/foreach_non_finite_check_and_unscale.h"

namespace mantissa::amp {
namespace {

constexpr std::string_view kDetectorName = "AnomalyDetector";

// floor(log10(x)) for x >= 1, 0 below (the decades a value exceeds its threshold by).
int decades(double x) {
  if (!(x >= 1.0)) return 0;
  if (std::isinf(x)) return 100;
  return static_cast<int>(std::floor(std::log10(x)));
}

std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

// JSON has no NaN or Inf: those become the strings "nan", "inf", "-inf".
nlohmann::json json_number(double v) {
  if (std::isfinite(v)) return v;
  return number(v);
}

}  // namespace

Status AnomalyDetector::create(const AnomalyThresholds& t, AnomalyDetector* out) {
  using detail::fail;
  if (out == nullptr) return fail(StatusCode::kParamNullptr, kDetectorName, "out is null");
  if (!(t.explosion_norm > 0.0)) {
    return fail(StatusCode::kParamInvalid, kDetectorName, "explosion_norm is {} but must be > 0",
                t.explosion_norm);
  }
  if (!(t.vanishing_norm >= 0.0) || !(t.vanishing_norm < t.explosion_norm)) {
    return fail(StatusCode::kParamInvalid, kDetectorName,
                "vanishing_norm is {} but must lie in [0, explosion_norm = {})", t.vanishing_norm,
                t.explosion_norm);
  }
  if (t.underflow_count < 0) {
    return fail(StatusCode::kParamInvalid, kDetectorName, "underflow_count is {} but must be >= 0",
                t.underflow_count);
  }
  if (t.working_dtype != DType::kFloat16 && t.working_dtype != DType::kBFloat16) {
    return fail(StatusCode::kParamInvalid, kDetectorName,
                "working_dtype is {} but must be FLOAT16 or BFLOAT16", dtype_name(t.working_dtype));
  }
  if (t.collapse_overflows < 1) {
    return fail(StatusCode::kParamInvalid, kDetectorName,
                "collapse_overflows is {} but must be >= 1", t.collapse_overflows);
  }
  out->thresholds_ = t;
  return {};
}

Status AnomalyDetector::inspect(TensorList grads, std::span<const std::string> names,
                                const InspectContext& ctx, AnomalyReport* report) const {
  return run(grads, names, ctx, 1.0f, false, report);
}

Status AnomalyDetector::run(TensorList grads, std::span<const std::string> names,
                            const InspectContext& ctx, float inv_scale, bool write,
                            AnomalyReport* report) const {
  using detail::fail;
  if (report == nullptr) return fail(StatusCode::kParamNullptr, kDetectorName, "report is null");
  if (!names.empty() && names.size() != grads.size()) {
    return fail(StatusCode::kParamInvalid, kDetectorName, "{} names for {} gradients", names.size(),
                grads.size());
  }
  // The gradients follow ForeachNonFiniteCheckAndUnscale's C++ rules.
  float found = 0.0f, inv = inv_scale;
  ForeachNonFiniteCheckAndUnscaleTensors rules;
  rules.scaled_grads = grads;
  rules.found_inf = TensorView(&found, DType::kFloat32, {1});
  rules.inv_scale = TensorView(&inv, DType::kFloat32, {1});
  if (Status st = foreach_non_finite_check_and_unscale_validate(rules); !st.ok()) {
    return Status(st.code(), fmt::format("{}: {}", kDetectorName, st.message()));
  }

  detail::GradStatsArgs pass;
  pass.grads = grads;
  pass.inv_scale = inv_scale;
  pass.write = write && inv_scale != 1.0f;
  // Half the smallest subnormal of the working dtype: values up to it round to zero there.
  pass.underflow_bound = thresholds_.working_dtype == DType::kFloat16 ? 0x1p-25f : 0x1p-134f;
  const std::vector<detail::GradTensorStats> stats = detail::grad_stats(pass);

  AnomalyReport r;
  r.loss = ctx.loss;
  double total = 0.0;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const detail::GradTensorStats& s = stats[i];
    TensorFindings f;
    f.name = names.empty() ? fmt::format("grads[{}]", i) : names[i];
    f.dtype = grads[i].dtype;
    f.numel = grads[i].numel().value_or(0);
    f.nan = s.nan;
    f.pos_inf = s.pos_inf;
    f.neg_inf = s.neg_inf;
    f.underflow = s.underflow;
    f.above_fp16_max = s.above_fp16_max;
    f.first_nonfinite = s.first_nonfinite;
    f.first_nonfinite_value = s.first_nonfinite_value;
    f.norm = std::sqrt(s.sum_squares);
    total += s.sum_squares;  // in list order
    r.found_inf |= s.nan + s.pos_inf + s.neg_inf > 0;
    r.tensors.push_back(std::move(f));
  }
  r.global_norm = std::sqrt(total);

  const AnomalyThresholds& th = thresholds_;
  const bool loss_bad = ctx.loss && !std::isfinite(*ctx.loss);
  if (r.found_inf || loss_bad) {
    Finding f;
    f.pattern = "nan_inf";
    int tensors = 0;
    bool any_nan = loss_bad && std::isnan(*ctx.loss);
    const TensorFindings* first = nullptr;
    for (const TensorFindings& t : r.tensors) {
      const int64_t bad = t.nan + t.pos_inf + t.neg_inf;
      if (bad == 0) continue;
      ++tensors;
      any_nan |= t.nan > 0;
      f.count += bad;
      if (first == nullptr) first = &t;
    }
    f.severity = std::min(10, 8 + (any_nan ? 1 : 0) + (tensors > 1 ? 1 : 0));
    if (first != nullptr) {
      f.tensor = first->name;
      f.first_index = first->first_nonfinite;
      f.values = {first->first_nonfinite_value};
    }
    if (loss_bad) {
      f.root_cause = fmt::format(
          "the loss is {}: the forward pass produced it (an overflowing activation, log or "
          "division of zero, or a bad batch), and every gradient derived from it is invalid",
          number(*ctx.loss));
    } else {
      f.root_cause = fmt::format(
          "{} gradient tensor(s) hold {} NaN/Inf values (first: {} element {} = {}) while the "
          "loss is {}: the backward pass overflowed{}",
          tensors, f.count, first->name, first->first_nonfinite,
          number(first->first_nonfinite_value), ctx.loss ? number(*ctx.loss) : "not given",
          any_nan ? " and the overflow propagated into NaN" : "");
    }
    if (ctx.scaler != nullptr && ctx.scaler->enabled()) {
      f.actions.push_back(fmt::format(
          "nothing to do once: the loss scaler skips this step and backs off from scale {}",
          number(ctx.scaler->scale())));
    } else {
      f.actions.push_back(
          "skip this optimizer step (no loss scaler is active to do it), and enable dynamic loss "
          "scaling for fp16 or train in bf16");
    }
    f.actions.push_back(
        "if it repeats at every step: find the first layer whose output turns non-finite and "
        "check its inputs (normalisation eps, log/exp arguments, divisions)");
    f.actions.push_back("lower the learning rate and clip gradients by their global norm");
    r.findings.push_back(std::move(f));
  }

  if (!r.found_inf && r.global_norm > th.explosion_norm) {
    Finding f;
    f.pattern = "explosion";
    f.severity = std::min(10, 6 + decades(r.global_norm / th.explosion_norm));
    const auto big = std::max_element(r.tensors.begin(), r.tensors.end(),
                                      [](const auto& a, const auto& b) { return a.norm < b.norm; });
    f.tensor = big->name;
    f.count = big->numel;
    f.values = {r.global_norm, big->norm};
    f.root_cause = fmt::format(
        "the global gradient norm {} exceeds {} ({} contributes the most, norm {}): the loss "
        "surface is steep here or the learning rate is too high for this point of training",
        number(r.global_norm), number(th.explosion_norm), big->name, number(big->norm));
    f.actions = {"clip gradients by their global norm (e.g. max_norm 1.0), after unscaling",
                 "lower the learning rate or lengthen its warm-up",
                 "check the batch that produced it (outliers, mislabelled data)"};
    r.findings.push_back(std::move(f));
  }

  if (!r.found_inf && !r.tensors.empty() && r.global_norm < th.vanishing_norm) {
    Finding f;
    f.pattern = "vanishing";
    f.severity = std::min(8, 4 + decades(th.vanishing_norm / std::max(r.global_norm, 1e-300)));
    f.values = {r.global_norm};
    f.root_cause = fmt::format(
        "the global gradient norm {} is below {}: the gradients underflow in the backward pass "
        "(loss scale too small for fp16), activations saturate, or the loss does not depend on "
        "the parameters",
        number(r.global_norm), number(th.vanishing_norm));
    f.actions = {"raise the loss scale (or its growth) when training in fp16",
                 "check for saturated activations and dead units",
                 "check that the loss is connected to the parameters (no detached graph)"};
    r.findings.push_back(std::move(f));
  }

  {
    int64_t total_under = 0, total_numel = 0;
    const TensorFindings* worst = nullptr;
    for (const TensorFindings& t : r.tensors) {
      if (t.underflow > th.underflow_count) {
        total_under += t.underflow;
        total_numel += t.numel;
        if (worst == nullptr || t.underflow > worst->underflow) worst = &t;
      }
    }
    if (worst != nullptr) {
      Finding f;
      f.pattern = "underflow";
      const double over = static_cast<double>(total_under) /
                          static_cast<double>(std::max<int64_t>(1, th.underflow_count));
      f.severity = std::min(7, 3 + decades(over));
      f.tensor = worst->name;
      f.count = total_under;
      f.values = {static_cast<double>(worst->underflow) / static_cast<double>(worst->numel)};
      f.root_cause = fmt::format(
          "{} gradient values ({:.3g}% of the tensors affected) are nonzero but round to zero "
          "in {} (most in {}: {} of {})",
          total_under, 100.0 * static_cast<double>(total_under) / static_cast<double>(total_numel),
          dtype_name(th.working_dtype), worst->name, worst->underflow, worst->numel);
      f.actions = {"raise the loss scale (a larger init_scale or a shorter growth_interval)",
                   "keep these gradients in fp32, or use bf16 (its range reaches 1e-38)"};
      r.findings.push_back(std::move(f));
    }
  }

  if (ctx.scaler != nullptr && ctx.scaler->enabled()) {
    const DynamicLossScaler& s = *ctx.scaler;
    const bool at_floor = s.options().min_scale > 0.0f && s.scale() <= s.options().min_scale;
    const int64_t run = s.stats().consecutive_overflows;
    if (at_floor || run >= th.collapse_overflows) {
      Finding f;
      f.pattern = "scale_collapse";
      f.severity =
          std::min(10, 7 + (at_floor ? 1 : 0) + (run >= 2 * th.collapse_overflows ? 1 : 0) +
                           (at_floor && run >= th.collapse_overflows ? 1 : 0));
      f.count = run;
      f.values = {s.scale(), static_cast<double>(s.stats().skipped_steps)};
      f.root_cause = fmt::format(
          "the loss scale is {}{} after {} overflowing steps in a row ({} skipped in all): the "
          "gradients overflow at any scale, so they hold NaN/Inf for another reason",
          number(s.scale()), at_floor ? " (its minimum)" : "", run, s.stats().skipped_steps);
      f.actions = {"look for the first non-finite activation in the forward pass",
                   "check the data for NaN/Inf and the loss for log(0) or division by zero",
                   "restore the last good checkpoint with a lower learning rate"};
      r.findings.push_back(std::move(f));
    }
  }

  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  *report = std::move(r);
  return {};
}

std::string AnomalyReport::text() const {
  std::string out = fmt::format("anomaly report: {} finding(s); global gradient norm {}",
                                findings.size(), number(global_norm));
  if (loss) out += fmt::format("; loss {}", number(*loss));
  out += "\n";
  if (findings.empty()) out += "  healthy: no pattern fired\n";
  for (const Finding& f : findings) {
    out += fmt::format("[severity {}] {}: {}\n", f.severity, f.pattern, f.root_cause);
    std::string values;
    for (double v : f.values) values += (values.empty() ? "" : ", ") + number(v);
    out += fmt::format("  evidence: tensor {}, count {}, first index {}, values [{}]\n",
                       f.tensor.empty() ? "-" : f.tensor, f.count, f.first_index, values);
    for (const std::string& a : f.actions) out += fmt::format("  - {}\n", a);
  }
  return out;
}

std::string AnomalyReport::json() const {
  nlohmann::json j;
  j["global_norm"] = json_number(global_norm);
  j["found_inf"] = found_inf;
  j["loss"] = loss ? json_number(*loss) : nlohmann::json();
  j["healthy"] = healthy();
  nlohmann::json fs = nlohmann::json::array();
  for (const Finding& f : findings) {
    nlohmann::json values = nlohmann::json::array();
    for (double v : f.values) values.push_back(json_number(v));
    fs.push_back({{"pattern", f.pattern},
                  {"severity", f.severity},
                  {"root_cause", f.root_cause},
                  {"evidence",
                   {{"tensor", f.tensor},
                    {"count", f.count},
                    {"first_index", f.first_index},
                    {"values", values}}},
                  {"actions", f.actions}});
  }
  j["findings"] = fs;
  nlohmann::json ts = nlohmann::json::array();
  for (const TensorFindings& t : tensors) {
    ts.push_back({{"name", t.name},
                  {"dtype", dtype_name(t.dtype)},
                  {"numel", t.numel},
                  {"nan", t.nan},
                  {"pos_inf", t.pos_inf},
                  {"neg_inf", t.neg_inf},
                  {"underflow", t.underflow},
                  {"above_fp16_max", t.above_fp16_max},
                  {"first_nonfinite", t.first_nonfinite},
                  {"first_nonfinite_value", json_number(t.first_nonfinite_value)},
                  {"norm", json_number(t.norm)}});
  }
  j["tensors"] = ts;
  return j.dump(1);
}

}  // namespace mantissa::amp
