// AnomalyDetector: what went wrong in a mixed-precision step, and what to do about it.
//
// One pass over the gradients (a read; with DynamicLossScaler::unscale_and_inspect the same
// pass also unscales them) counts NaN, +Inf, -Inf, values that underflow to zero in the working
// dtype and values above the fp16 maximum, and sums the squares for each tensor's L2 norm and
// the global norm (fp64, a fixed order: the same bits for any thread count and SIMD target).
// The findings follow patterns, each with a severity 0..10 (docs/amp.md gives the formulas), a
// root-cause sentence, evidence and recommended actions, as text and as JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mantissa/dtype.h"
#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa::amp {

class DynamicLossScaler;

struct AnomalyThresholds {
  double explosion_norm = 1e6;   // global gradient norm above this: explosion
  double vanishing_norm = 1e-9;  // global gradient norm below this: vanishing
  int64_t underflow_count = 10;  // more underflowing elements in one tensor than this: underflow
  DType working_dtype = DType::kFloat16;  // whose underflow is counted (FLOAT16 or BFLOAT16)
  int64_t collapse_overflows = 8;         // consecutive skipped steps that mean loss-scale collapse
};

struct TensorFindings {
  std::string name;
  DType dtype = DType::kFloat32;
  int64_t numel = 0;
  int64_t nan = 0, pos_inf = 0, neg_inf = 0;
  int64_t underflow = 0;         // nonzero values that round to zero in the working dtype
  int64_t above_fp16_max = 0;    // finite values with |x| > 65504
  int64_t first_nonfinite = -1;  // element index of the first NaN or Inf, or -1
  double first_nonfinite_value = 0.0;
  double norm = 0.0;  // L2 norm (of the unscaled values when the pass unscales)
};

struct Finding {
  std::string pattern;  // "nan_inf", "explosion", "vanishing", "underflow", "scale_collapse"
  int severity = 0;     // 0..10
  std::string root_cause;
  // Evidence: the tensor (empty for a finding about the whole step), how many elements, the
  // first index, and the values that triggered it.
  std::string tensor;
  int64_t count = 0;
  int64_t first_index = -1;
  std::vector<double> values;
  std::vector<std::string> actions;
};

struct MANTISSA_API AnomalyReport {
  std::vector<TensorFindings> tensors;
  double global_norm = 0.0;
  bool found_inf = false;  // any NaN or Inf in any gradient (what the loss scaler skips on)
  std::optional<double> loss;
  std::vector<Finding> findings;  // most severe first
  bool healthy() const { return findings.empty(); }
  std::string text() const;
  std::string json() const;
};

// What the detector knows besides the gradients.
struct InspectContext {
  std::optional<double> loss;                 // the step's loss, if known
  const DynamicLossScaler* scaler = nullptr;  // for loss-scale collapse
};

class MANTISSA_API AnomalyDetector {
 public:
  AnomalyDetector() = default;
  // Validates the thresholds (161002 naming the threshold and its value).
  static Status create(const AnomalyThresholds& thresholds, AnomalyDetector* out);
  const AnomalyThresholds& thresholds() const { return thresholds_; }

  // Reads the gradients once. names: one per gradient, or empty ("grads[i]"). The gradients
  // follow ForeachNonFiniteCheckAndUnscale's C++ rules (fp32/fp16/bf16, contiguous, disjoint).
  Status inspect(TensorList grads, std::span<const std::string> names, const InspectContext& ctx,
                 AnomalyReport* report) const;

 private:
  friend class DynamicLossScaler;
  // The pass, with an optional fused unscale by inv_scale.
  Status run(TensorList grads, std::span<const std::string> names, const InspectContext& ctx,
             float inv_scale, bool write, AnomalyReport* report) const;

  AnomalyThresholds thresholds_;
};

}  // namespace mantissa::amp
