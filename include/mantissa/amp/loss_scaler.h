// DynamicLossScaler: dynamic loss scaling for fp16 training, PyTorch's GradScaler as the
// behavioural anchor (same defaults, same update rule), with Megatron-style hysteresis, a
// minimum scale, statistics and a versioned checkpoint format. See docs/amp.md.
//
// One training step:
//   loss_for_backward = scaler.scale_loss(loss);      // backward on the scaled loss
//   scaler.step(grads, [&](const StepScaling& s) { return optimizer_step(s); });
//   scaler.update();
// step() unscales the gradients in place (ForeachNonFiniteCheckAndUnscale) and calls the
// optimizer only when no gradient holds Inf or NaN. step_fused() instead runs the read-only
// check and hands the optimizer the scale to divide by inside its own pass (no write pass over
// the gradients). Disabled (bf16 training), every call is a no-op and the optimizer always runs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa::amp {

class AnomalyDetector;
struct AnomalyReport;

struct LossScalerOptions {
  float init_scale = 65536.0f;     // finite, > 0
  double growth_factor = 2.0;      // > 1 (applied in fp32 by AmpUpdateScale)
  double backoff_factor = 0.5;     // in (0, 1)
  int64_t growth_interval = 2000;  // steps without overflow before growing; [1, 2^31 - 1]
  // Overflowing steps tolerated before the scale backs off (Megatron's hysteresis): 1 backs off
  // at every overflow, as GradScaler does. Growing the scale restores the allowance.
  int32_t hysteresis = 1;  // >= 1
  float min_scale = 0.0f;  // the scale never backs off below this (0: no floor); <= init_scale
  bool enabled = true;     // false: scale 1, nothing checked, the optimizer always runs
  int32_t history_limit = 1024;  // scale changes kept in the statistics (oldest dropped); >= 0
};

struct ScaleChange {
  int64_t step = 0;  // the update() that changed the scale (1 = the first)
  float scale = 0.0f;
};

struct LossScalerStats {
  int64_t steps = 0;                  // update() calls
  int64_t skipped_steps = 0;          // steps whose gradients held Inf or NaN
  int64_t consecutive_overflows = 0;  // overflowing steps since the last clean one
  int64_t steps_since_overflow = 0;   // clean steps since the last overflow (or the start)
  float best_scale = 0.0f;            // the largest scale a clean step ran with
  std::vector<ScaleChange> history;   // every change of the scale, the latest history_limit
};

// What the optimizer callback receives. After step(), gradients are already unscaled and both
// are unset; after step_fused(), grad_scale holds the scale the optimizer divides by (FLOAT, one
// element) and found_inf the flag (FLOAT, one element, 0 here: the step runs only when clean).
struct StepScaling {
  std::optional<TensorView> grad_scale;
  std::optional<TensorView> found_inf;
};

class MANTISSA_API DynamicLossScaler {
 public:
  DynamicLossScaler() = default;  // the default options

  // Validates the options (161002 naming the option and its value); *out is left unchanged on
  // error.
  static Status create(const LossScalerOptions& options, DynamicLossScaler* out);

  bool enabled() const { return options_.enabled; }
  const LossScalerOptions& options() const { return options_; }
  float scale() const { return options_.enabled ? scale_ : 1.0f; }
  // loss * scale (rounded to fp32; to double for the double overload).
  float scale_loss(float loss) const { return loss * scale(); }
  double scale_loss(double loss) const { return loss * static_cast<double>(scale()); }

  // Multiplies the gradients by 1/scale in place and records whether any held Inf or NaN
  // (ForeachNonFiniteCheckAndUnscale; 1/scale computed in double and rounded to fp32, as
  // GradScaler does). May be called for several gradient lists in one step (each list once).
  Status unscale(TensorList grads);
  // The read-only check (the same pass with inverse scale 1: gradients are only read).
  Status check(TensorList grads);
  // unscale() and the anomaly detector's pass in one read and one write of the gradients: the
  // report holds the counts and norms of the unscaled values (as AnomalyDetector::inspect on
  // them would), and this step's found_inf. Disabled, the detector only reads the gradients.
  Status unscale_and_inspect(TensorList grads, const AnomalyDetector& detector,
                             std::span<const std::string> names, AnomalyReport* report,
                             std::optional<double> loss = std::nullopt);
  // Whether a gradient checked this step held Inf or NaN.
  bool found_inf() const { return found_ != 0.0f; }

  using OptimizerStep = std::function<Status(const StepScaling&)>;
  // Unscales `grads` unless unscale() already ran this step, then calls optimizer_step unless a
  // gradient held Inf or NaN (the step is skipped; statistics count it). Returns the callback's
  // status.
  Status step(TensorList grads, const OptimizerStep& optimizer_step);
  // Checks `grads` (read only) and, when clean, calls optimizer_step with grad_scale and
  // found_inf for a fused optimizer that divides the gradients inside its own pass.
  Status step_fused(TensorList grads, const OptimizerStep& optimizer_step);

  // Moves the scale for the next step (AmpUpdateScale, then hysteresis and the floor) and
  // updates the statistics. Needs an unscale(), check() or step() since the last update().
  Status update();

  const LossScalerStats& stats() const { return stats_; }

  // The complete state (options, scale, trackers, statistics) as JSON text, format
  // "mantissa.dynamic_loss_scaler" version 1 (docs/amp.md). load_state() restores it exactly;
  // malformed text, another format, a newer version or invalid values give 161002 and leave
  // the scaler unchanged.
  std::string state() const;
  Status load_state(std::string_view text);

 private:
  enum class Phase { kIdle, kUnscaled, kChecked, kStepped };
  Status unscale_impl(TensorList grads, float inv_scale, Phase next);

  LossScalerOptions options_;
  float scale_ = 65536.0f;
  int32_t growth_tracker_ = 0;
  int32_t hysteresis_left_ = 1;
  float found_ = 0.0f;
  Phase phase_ = Phase::kIdle;
  LossScalerStats stats_;
};

}  // namespace mantissa::amp
