// Sensitivity by runs (train_policy.h): each layer alone in bf16 and fp16, trained; each layer
// alone in INT8 and FP8 E4M3 for inference on the trained fp32 model; and the suggested policy.
#include <algorithm>
#include <cmath>
#include <optional>

#include "mantissa/calibrate.h"
#include "mantissa/lowp.h"
#include "trainer/mlp/analyze.h"
#include "trainer/mlp/common.h"
#include "trainer/mlp/model.h"
#include "trainer/mlp/optimizer_step.h"
#include "trainer/mlp/policy.h"
#include "trainer/train_policy.h"

namespace mantissa::train {

namespace {

// Quantize-dequantize x [rows, cols] in place: symmetric INT8 (calib::quantize_int8, RNE,
// clamped to +-127) or FP8 E4M3 (saturating), with one scale per column (per_column) or one for
// the whole tensor taken from `amax` (< 0: the tensor's own largest magnitude).
Status fake_quantize(const std::string& format, float* x, int64_t rows, int64_t cols,
                     bool per_column, float amax) {
  const float qmax = format == "int8" ? 127.0f : 448.0f;
  const int64_t channels = per_column ? cols : 1;
  std::vector<float> scales(static_cast<std::size_t>(channels), 0.0f);
  for (int64_t i = 0; i < rows * cols; ++i) {
    float& s = scales[per_column ? i % cols : 0];
    s = std::max(s, std::fabs(x[i]));
  }
  for (float& s : scales) {
    if (!per_column && amax >= 0) s = amax;
    s = s > 0 && std::isfinite(s) ? s / qmax : 1.0f;
  }
  const int64_t shape[2] = {rows, cols};
  if (format == "int8") {
    std::vector<int8_t> q(static_cast<std::size_t>(rows * cols));
    const TensorView xv(x, DType::kFloat32, shape), qv(q.data(), DType::kInt8, shape);
    const calib::Int8Options io{.axis = per_column ? 1 : -1};
    TRAINER_TRY(calib::quantize_int8(xv, scales, qv, io));
    return calib::dequantize_int8(qv, scales, xv, io);
  }
  std::vector<float> scaled(static_cast<std::size_t>(rows * cols));
  for (int64_t i = 0; i < rows * cols; ++i) scaled[i] = x[i] / scales[per_column ? i % cols : 0];
  std::vector<uint8_t> codes(scaled.size());
  convert_fp32_to_lowp(DType::kFloat8E4M3FN, scaled.data(), codes.data(), codes.size(), true);
  convert_lowp_to_fp32(DType::kFloat8E4M3FN, codes.data(), scaled.data(), codes.size());
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = scaled[i] * scales[per_column ? i % cols : 0];
  return {};
}

PrecisionPolicy one_layer(std::span<const std::string> names, std::size_t layer, DType dtype) {
  PrecisionPolicy p = uniform_policy(names[layer] + "-" + policy_dtype_name(dtype), names,
                                     DType::kFloat32, DType::kFloat32, UpdateForm::kMaster);
  p.layers[layer].compute = p.layers[layer].stored = dtype;
  return p;
}

}  // namespace

Status sensitivity_runs(const Dataset& data, const TrainOptions& options,
                        const SensitivityProgress& progress, SensitivityReport* report) {
  return detail::sensitivity_runs(data, options, {}, progress, report);
}

Status detail::sensitivity_runs(const Dataset& data, const TrainOptions& options,
                                const PrepareModel& prepare, const SensitivityProgress& progress,
                                SensitivityReport* report) {
  const std::vector<std::string> names = layer_names(options);
  const int n = static_cast<int>(names.size());
  const int total = 1 + 4 * n;
  int done = 0;
  auto step = [&](const std::string& what) {
    if (progress) progress(done, total, what);
    ++done;
  };
  SensitivityReport r;

  // The all-fp32 baseline, keeping the trained model.
  step("fp32 baseline");
  std::optional<detail::Mlp> trained;
  ModeResult base;
  TRAINER_TRY(detail::train_precision_then(
      data,
      detail::resolve_policy(
          uniform_policy("fp32", names, DType::kFloat32, DType::kFloat32, UpdateForm::kMaster)),
      Mode::kFp32, options, {}, &base,
      [&](detail::Mlp& m, float) {
        trained.emplace(m);
        return Status{};
      },
      prepare));
  r.baseline_loss = base.test_loss;
  r.baseline_accuracy = base.test_accuracy;
  r.baseline_digest = base.digest;

  for (int i = 0; i < n; ++i) {
    for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
      const PrecisionPolicy p = one_layer(names, static_cast<std::size_t>(i), dtype);
      step("train " + p.name);
      PolicyResult pr;
      TRAINER_TRY(train_policy_prepared(data, p, options, {}, prepare, &pr));
      r.training.push_back({.layer = names[i],
                            .format = policy_dtype_name(dtype),
                            .depth = i,
                            .test_loss = pr.run.test_loss,
                            .test_accuracy = pr.run.test_accuracy,
                            .loss_change = pr.run.test_loss - r.baseline_loss,
                            .accuracy_change = pr.run.test_accuracy - r.baseline_accuracy,
                            .skipped_steps = pr.run.skipped_steps});
    }
  }

  // Calibration: every layer's largest input magnitude over the training split.
  std::vector<float> amax(static_cast<std::size_t>(n), 0.0f);
  {
    detail::Mlp m = *trained;
    for (int i = 0; i < n; ++i) {
      m.set_input_transform(static_cast<std::size_t>(i),
                            [&amax, i](float* x, int64_t rows, int64_t cols) {
                              for (int64_t k = 0; k < rows * cols; ++k)
                                amax[i] = std::max(amax[i], std::fabs(x[k]));
                            });
    }
    double loss = 0, accuracy = 0;
    TRAINER_TRY(detail::evaluate(m, data.x_train, data.y_train, data.features, options.batch_size,
                                 &loss, &accuracy));
  }
  for (int i = 0; i < n; ++i) {
    for (const std::string format : {"int8", "fp8-e4m3"}) {
      step("inference " + names[i] + "-" + format);
      detail::Mlp m = *trained;
      const detail::LayerSpec& L = m.layers()[static_cast<std::size_t>(i)];
      if (L.kind != detail::LayerKind::kActivation) {
        detail::Buffer& w = m.params()[static_cast<std::size_t>(L.weight)].var;
        // Linear: [in, out], one scale per output channel; LayerNorm's scale: per tensor.
        const bool linear = L.kind == detail::LayerKind::kLinear;
        TRAINER_TRY(fake_quantize(format, w.f32(), linear ? L.in : 1, L.out, linear, -1));
      }
      Status quant_status;
      m.set_input_transform(static_cast<std::size_t>(i),
                            [&, i](float* x, int64_t rows, int64_t cols) {
                              Status st = fake_quantize(format, x, rows, cols, false, amax[i]);
                              if (!st.ok() && quant_status.ok()) quant_status = st;
                            });
      double loss = 0, accuracy = 0;
      TRAINER_TRY(detail::evaluate(m, data.x_test, data.y_test, data.features, options.batch_size,
                                   &loss, &accuracy));
      TRAINER_TRY(quant_status);
      r.inference.push_back({.layer = names[i],
                             .format = format,
                             .depth = i,
                             .test_loss = loss,
                             .test_accuracy = accuracy,
                             .loss_change = loss - r.baseline_loss,
                             .accuracy_change = accuracy - r.baseline_accuracy,
                             .skipped_steps = 0});
    }
  }
  if (progress) progress(total, total, "done");
  *report = std::move(r);
  return {};
}

PrecisionPolicy suggest_policy(const SensitivityReport& report, std::span<const std::string> layers,
                               const std::string& format, double threshold) {
  const DType dtype = format == "fp16" ? DType::kFloat16 : DType::kBFloat16;
  PrecisionPolicy p = uniform_policy("suggested-" + std::string(policy_dtype_name(dtype)), layers,
                                     dtype, dtype, UpdateForm::kMaster);
  for (const SensitivityRow& row : report.training) {
    if (row.format != policy_dtype_name(dtype)) continue;
    const bool sensitive = !(row.loss_change <= threshold * report.baseline_loss);  // NaN too
    if (!sensitive) continue;
    for (LayerPolicy& l : p.layers) {
      if (l.layer == row.layer) l.compute = l.stored = DType::kFloat32;
    }
  }
  return p;
}

}  // namespace mantissa::train
