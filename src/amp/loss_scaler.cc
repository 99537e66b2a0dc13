// DynamicLossScaler: host-side state around two operators, ForeachNonFiniteCheckAndUnscale (the
// pass over the gradients) and AmpUpdateScale (the scale's update rule).
#include "mantissa/amp/loss_scaler.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <utility>

#include "core/json_depth.h"
#include "core/validate.h"
#include "mantissa/amp/anomaly.h"
#include "mantissa/ops/amp_update_scale.h"
#include "mantissa/ops/foreach_non_finite_check_and_unscale.h"

namespace mantissa::amp {
namespace {

constexpr std::string_view kScalerName = "DynamicLossScaler";
constexpr std::string_view kFormat = "mantissa.dynamic_loss_scaler";
constexpr int kVersion = 1;

Status check_options(const LossScalerOptions& o) {
  using detail::fail;
  if (!std::isfinite(o.init_scale) || !(o.init_scale > 0.0f)) {
    return fail(StatusCode::kParamInvalid, kScalerName,
                "init_scale is {} but must be finite and > 0", o.init_scale);
  }
  if (!(o.growth_factor > 1.0) || !std::isfinite(o.growth_factor)) {
    return fail(StatusCode::kParamInvalid, kScalerName,
                "growth_factor is {} but must be finite and > 1", o.growth_factor);
  }
  if (!(o.backoff_factor > 0.0 && o.backoff_factor < 1.0)) {
    return fail(StatusCode::kParamInvalid, kScalerName,
                "backoff_factor is {} but must lie in (0, 1)", o.backoff_factor);
  }
  if (o.growth_interval < 1 || o.growth_interval > std::numeric_limits<int32_t>::max()) {
    return fail(StatusCode::kParamInvalid, kScalerName,
                "growth_interval is {} but must lie in [1, 2147483647]", o.growth_interval);
  }
  if (o.hysteresis < 1) {
    return fail(StatusCode::kParamInvalid, kScalerName, "hysteresis is {} but must be >= 1",
                o.hysteresis);
  }
  if (!(o.min_scale >= 0.0f) || o.min_scale > o.init_scale) {
    return fail(StatusCode::kParamInvalid, kScalerName,
                "min_scale is {} but must lie in [0, init_scale = {}]", o.min_scale, o.init_scale);
  }
  if (o.history_limit < 0) {
    return fail(StatusCode::kParamInvalid, kScalerName, "history_limit is {} but must be >= 0",
                o.history_limit);
  }
  return {};
}

TensorView scalar_view(float* p) { return TensorView(p, DType::kFloat32, {1}); }

}  // namespace

Status DynamicLossScaler::create(const LossScalerOptions& options, DynamicLossScaler* out) {
  if (out == nullptr) {
    return detail::fail(StatusCode::kParamNullptr, kScalerName, "out is null");
  }
  MANTISSA_RETURN_IF_ERROR(check_options(options));
  DynamicLossScaler s;
  s.options_ = options;
  s.scale_ = options.init_scale;
  s.hysteresis_left_ = options.hysteresis;
  *out = std::move(s);
  return {};
}

Status DynamicLossScaler::unscale_impl(TensorList grads, float inv_scale, Phase next) {
  if (phase_ == Phase::kStepped) {
    return detail::fail(StatusCode::kParamInvalid, kScalerName,
                        "the gradients of this step were already used by step(); call update() "
                        "before unscaling or checking again");
  }
  float found = found_;
  ForeachNonFiniteCheckAndUnscaleTensors t;
  t.scaled_grads = grads;
  t.found_inf = scalar_view(&found);
  t.inv_scale = scalar_view(&inv_scale);
  MANTISSA_RETURN_IF_ERROR(foreach_non_finite_check_and_unscale(t));
  found_ = found;
  if (phase_ != Phase::kUnscaled) phase_ = next;  // an unscaled list stays unscaled
  return {};
}

Status DynamicLossScaler::unscale(TensorList grads) {
  if (!options_.enabled) return {};
  // GradScaler: inv_scale = scale.double().reciprocal().float().
  const auto inv_scale = static_cast<float>(1.0 / static_cast<double>(scale_));
  return unscale_impl(grads, inv_scale, Phase::kUnscaled);
}

Status DynamicLossScaler::unscale_and_inspect(TensorList grads, const AnomalyDetector& detector,
                                              std::span<const std::string> names,
                                              AnomalyReport* report, std::optional<double> loss) {
  InspectContext ctx;
  ctx.loss = loss;
  ctx.scaler = this;
  if (!options_.enabled) return detector.inspect(grads, names, ctx, report);
  if (phase_ == Phase::kStepped || phase_ == Phase::kChecked) {
    return detail::fail(StatusCode::kParamInvalid, kScalerName,
                        "unscale_and_inspect() after {} in the same step; call update() first",
                        phase_ == Phase::kStepped ? "step()" : "check()");
  }
  const auto inv_scale = static_cast<float>(1.0 / static_cast<double>(scale_));
  MANTISSA_RETURN_IF_ERROR(detector.run(grads, names, ctx, inv_scale, true, report));
  if (report->found_inf) found_ = 1.0f;
  phase_ = Phase::kUnscaled;
  return {};
}

Status DynamicLossScaler::check(TensorList grads) {
  if (!options_.enabled) return {};
  return unscale_impl(grads, 1.0f, Phase::kChecked);
}

Status DynamicLossScaler::step(TensorList grads, const OptimizerStep& optimizer_step) {
  if (!optimizer_step) {
    return detail::fail(StatusCode::kParamNullptr, kScalerName, "optimizer_step is empty");
  }
  if (!options_.enabled) return optimizer_step(StepScaling{});
  if (phase_ == Phase::kChecked) {
    return detail::fail(StatusCode::kParamInvalid, kScalerName,
                        "check() ran this step, so the gradients are still scaled: use "
                        "step_fused(), or unscale() instead of check()");
  }
  if (phase_ == Phase::kIdle) MANTISSA_RETURN_IF_ERROR(unscale(grads));
  if (phase_ == Phase::kStepped) {
    return detail::fail(StatusCode::kParamInvalid, kScalerName,
                        "step() already ran since the last update()");
  }
  phase_ = Phase::kStepped;
  if (found_inf()) return {};
  return optimizer_step(StepScaling{});
}

Status DynamicLossScaler::step_fused(TensorList grads, const OptimizerStep& optimizer_step) {
  if (!optimizer_step) {
    return detail::fail(StatusCode::kParamNullptr, kScalerName, "optimizer_step is empty");
  }
  if (!options_.enabled) return optimizer_step(StepScaling{});
  if (phase_ == Phase::kUnscaled) {
    return detail::fail(StatusCode::kParamInvalid, kScalerName,
                        "unscale() ran this step, so the gradients are no longer scaled: use "
                        "step()");
  }
  if (phase_ == Phase::kIdle) MANTISSA_RETURN_IF_ERROR(check(grads));
  if (phase_ == Phase::kStepped) {
    return detail::fail(StatusCode::kParamInvalid, kScalerName,
                        "step_fused() already ran since the last update()");
  }
  phase_ = Phase::kStepped;
  if (found_inf()) return {};
  StepScaling s;
  s.grad_scale = scalar_view(&scale_);
  s.found_inf = scalar_view(&found_);
  return optimizer_step(s);
}

Status DynamicLossScaler::update() {
  if (!options_.enabled) return {};
  if (phase_ == Phase::kIdle) {
    return detail::fail(StatusCode::kParamInvalid, kScalerName,
                        "no gradients were checked since the last update(): call unscale(), "
                        "check(), step() or step_fused() first");
  }
  const bool overflow = found_inf();
  const float before = scale_;
  if (overflow && hysteresis_left_ > 1) {
    // Tolerated: the scale stays, the growth window restarts.
    --hysteresis_left_;
    growth_tracker_ = 0;
  } else {
    AmpUpdateScaleTensors t;
    t.current_scale = scalar_view(&scale_);
    t.growth_tracker = TensorView(&growth_tracker_, DType::kInt32, {1});
    t.found_inf = scalar_view(&found_);
    t.updated_scale = t.current_scale;
    t.updated_growth_tracker = t.growth_tracker;
    AmpUpdateScaleParams p;
    p.growth_factor = options_.growth_factor;
    p.backoff_factor = options_.backoff_factor;
    p.growth_interval = options_.growth_interval;
    MANTISSA_RETURN_IF_ERROR(amp_update_scale(t, p));
    if (overflow) {
      if (scale_ < options_.min_scale) scale_ = options_.min_scale;
      hysteresis_left_ = 1;  // until the next growth, every overflow backs off
    } else if (growth_tracker_ == 0) {
      hysteresis_left_ = options_.hysteresis;  // grown (or kept at the fp32 limit)
    }
  }

  LossScalerStats& st = stats_;
  ++st.steps;
  if (overflow) {
    ++st.skipped_steps;
    ++st.consecutive_overflows;
    st.steps_since_overflow = 0;
  } else {
    st.consecutive_overflows = 0;
    ++st.steps_since_overflow;
    if (before > st.best_scale) st.best_scale = before;
  }
  if (scale_ != before && options_.history_limit > 0) {
    if (st.history.size() >= static_cast<std::size_t>(options_.history_limit)) {
      st.history.erase(st.history.begin());
    }
    st.history.push_back({st.steps, scale_});
  }
  found_ = 0.0f;
  phase_ = Phase::kIdle;
  return {};
}

std::string DynamicLossScaler::state() const {
  nlohmann::json history = nlohmann::json::array();
  for (const ScaleChange& c : stats_.history) history.push_back({c.step, c.scale});
  const nlohmann::json j = {
      {"format", kFormat},
      {"version", kVersion},
      {"options",
       {{"init_scale", options_.init_scale},
        {"growth_factor", options_.growth_factor},
        {"backoff_factor", options_.backoff_factor},
        {"growth_interval", options_.growth_interval},
        {"hysteresis", options_.hysteresis},
        {"min_scale", options_.min_scale},
        {"enabled", options_.enabled},
        {"history_limit", options_.history_limit}}},
      {"scale", scale_},
      {"growth_tracker", growth_tracker_},
      {"hysteresis_left", hysteresis_left_},
      {"stats",
       {{"steps", stats_.steps},
        {"skipped_steps", stats_.skipped_steps},
        {"consecutive_overflows", stats_.consecutive_overflows},
        {"steps_since_overflow", stats_.steps_since_overflow},
        {"best_scale", stats_.best_scale},
        {"history", history}}},
  };
  return j.dump(1);
}

namespace {

// Whether a double rounds to a finite fp32 value (below FLT_MAX plus half its ulp), so that the
// conversion is defined and finite.
bool fits_fp32(double d) { return std::isfinite(d) && std::fabs(d) < 0x1.ffffffp+127; }

}  // namespace

Status DynamicLossScaler::load_state(std::string_view text) {
  using detail::fail;
  if (const int depth = mantissa::detail::json_nesting_depth(text);
      depth > mantissa::detail::kMaxJsonNesting) {
    return fail(StatusCode::kParamInvalid, kScalerName,
                "the state is nested {} levels deep (at most {})", depth,
                mantissa::detail::kMaxJsonNesting);
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return fail(StatusCode::kParamInvalid, kScalerName, "the state is not a JSON object");
  }
  if (!j.contains("format") || !j["format"].is_string() || j["format"] != kFormat) {
    return fail(StatusCode::kParamInvalid, kScalerName, "the state's format is {}, not \"{}\"",
                j.contains("format") ? j["format"].dump() : std::string("missing"), kFormat);
  }
  if (!j.contains("version") || !j["version"].is_number_integer()) {
    return fail(StatusCode::kParamInvalid, kScalerName, "the state has no integer version");
  }
  if (j["version"].get<int64_t>() != kVersion) {
    return fail(StatusCode::kParamInvalid, kScalerName,
                "the state has version {}; this library reads version {}",
                j["version"].get<int64_t>(), kVersion);
  }
  // Every field present with its type and within its type's range (an integer that would wrap,
  // a number that is not finite as fp32), read without exceptions.
  std::string missing, out_of_range;
  auto number = [&](const nlohmann::json& o, const char* key, auto& value) {
    using T = std::remove_reference_t<decltype(value)>;
    const bool ok = o.is_object() && o.contains(key) &&
                    (std::is_integral_v<T> ? o[key].is_number_integer() : o[key].is_number());
    if (!ok) {
      if (missing.empty()) missing = key;
      return;
    }
    const nlohmann::json& v = o[key];
    bool fits = true;
    if constexpr (std::is_integral_v<T>) {
      if (v.is_number_unsigned()) {
        fits = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
      } else {
        const int64_t i = v.get<int64_t>();
        fits = i >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
               i <= static_cast<int64_t>(std::numeric_limits<T>::max());
      }
    } else {
      fits = fits_fp32(v.get<double>());
    }
    if (!fits) {
      if (out_of_range.empty()) out_of_range = fmt::format("\"{}\" is {}", key, v.dump());
      return;
    }
    value = v.get<T>();
  };
  auto boolean = [&](const nlohmann::json& o, const char* key, bool& value) {
    if (!o.is_object() || !o.contains(key) || !o[key].is_boolean()) {
      if (missing.empty()) missing = key;
      return;
    }
    value = o[key].get<bool>();
  };
  const nlohmann::json& jo = j.contains("options") ? j["options"] : nlohmann::json();
  const nlohmann::json& js = j.contains("stats") ? j["stats"] : nlohmann::json();
  LossScalerOptions o;
  number(jo, "init_scale", o.init_scale);
  number(jo, "growth_factor", o.growth_factor);
  number(jo, "backoff_factor", o.backoff_factor);
  number(jo, "growth_interval", o.growth_interval);
  number(jo, "hysteresis", o.hysteresis);
  number(jo, "min_scale", o.min_scale);
  boolean(jo, "enabled", o.enabled);
  number(jo, "history_limit", o.history_limit);
  DynamicLossScaler s;
  number(j, "scale", s.scale_);
  number(j, "growth_tracker", s.growth_tracker_);
  number(j, "hysteresis_left", s.hysteresis_left_);
  number(js, "steps", s.stats_.steps);
  number(js, "skipped_steps", s.stats_.skipped_steps);
  number(js, "consecutive_overflows", s.stats_.consecutive_overflows);
  number(js, "steps_since_overflow", s.stats_.steps_since_overflow);
  number(js, "best_scale", s.stats_.best_scale);
  if (!missing.empty()) {
    return fail(StatusCode::kParamInvalid, kScalerName, "the state lacks a valid \"{}\"", missing);
  }
  if (!out_of_range.empty()) {
    return fail(StatusCode::kParamInvalid, kScalerName, "the state's {}, out of its field's range",
                out_of_range);
  }
  if (!js.contains("history") || !js["history"].is_array()) {
    return fail(StatusCode::kParamInvalid, kScalerName, "the state lacks a valid \"history\"");
  }
  // At most history_limit entries (what save_state keeps), each a step and a finite fp32 scale.
  auto excerpt = [](const nlohmann::json& v) {
    std::string json = v.dump();  // depth already limited above
    return json.size() > 80 ? json.substr(0, 77) + "..." : json;
  };
  if (o.history_limit >= 0 && js["history"].size() > static_cast<std::size_t>(o.history_limit)) {
    return fail(StatusCode::kParamInvalid, kScalerName,
                "the state's history holds {} entries, more than its history_limit {}",
                js["history"].size(), o.history_limit);
  }
  for (const auto& c : js["history"]) {
    if (!c.is_array() || c.size() != 2 || !c[0].is_number_integer() || !c[1].is_number() ||
        (c[0].is_number_unsigned() && c[0].get<uint64_t>() > INT64_MAX) ||
        !fits_fp32(c[1].get<double>())) {
      return fail(StatusCode::kParamInvalid, kScalerName,
                  "a history entry is {}, not [step, scale] with a finite fp32 scale", excerpt(c));
    }
    s.stats_.history.push_back({c[0].get<int64_t>(), c[1].get<float>()});
  }
  MANTISSA_RETURN_IF_ERROR(check_options(o));
  if (!std::isfinite(s.scale_) || !(s.scale_ > 0.0f) || s.growth_tracker_ < 0 ||
      s.growth_tracker_ >= o.growth_interval || s.hysteresis_left_ < 1 ||
      s.hysteresis_left_ > o.hysteresis || s.stats_.steps < 0 || s.stats_.skipped_steps < 0 ||
      s.stats_.skipped_steps > s.stats_.steps) {
    return fail(StatusCode::kParamInvalid, kScalerName,
                "the state's values are inconsistent (scale {}, growth_tracker {} of interval {}, "
                "hysteresis_left {} of {}, steps {}, skipped {})",
                s.scale_, s.growth_tracker_, o.growth_interval, s.hysteresis_left_, o.hysteresis,
                s.stats_.steps, s.stats_.skipped_steps);
  }
  s.options_ = o;
  *this = std::move(s);
  return {};
}

}  // namespace mantissa::amp
