// The optimizer step and the evaluation shared by the trainers (optimizer_step.h).
#include "trainer/mlp/optimizer_step.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "mantissa/optim.h"
#include "trainer/mlp/common.h"
#include "trainer/mlp/rng.h"

namespace mantissa::train::detail {

StepGuard::StepGuard(const Precision& precision, std::vector<std::string> names)
    : names_(std::move(names)) {
  thresholds_.working_dtype =
      precision.compute == DType::kFloat16 ? DType::kFloat16 : DType::kBFloat16;
  base_explosion_ = thresholds_.explosion_norm;
  base_vanishing_ = thresholds_.vanishing_norm;
}

Status StepGuard::inspect(const std::vector<TensorView>& grads, double loss,
                          const amp::DynamicLossScaler& scaler, const TrainOptions& o,
                          const TrainCallbacks& cb, int epoch, int64_t step, ModeResult* r,
                          std::optional<float>* clip_coef) {
  if (scaler.scale() != detector_scale_) {
    detector_scale_ = scaler.scale();
    thresholds_.explosion_norm = base_explosion_ * detector_scale_;
    thresholds_.vanishing_norm = base_vanishing_ * detector_scale_;
    TRAINER_TRY(amp::AnomalyDetector::create(thresholds_, &detector_));
  }
  amp::AnomalyReport report;
  amp::InspectContext ctx;
  ctx.loss = loss;
  ctx.scaler = &scaler;
  TRAINER_TRY(detector_.inspect(grads, names_, ctx, &report));
  if (report.found_inf) ++r->overflow_steps;
  if (!report.healthy()) {
    r->findings += static_cast<int64_t>(report.findings.size());
    if (cb.on_anomaly) cb.on_anomaly(epoch, step, report);
  }
  clip_coef->reset();
  if (o.clip > 0.0 && !report.found_inf) {
    double norm = 0.0;
    GradNormOptions no;
    float scale_value = scaler.scale();
    if (scaler.enabled()) no.grad_scale = TensorView(&scale_value, DType::kFloat32, {1});
    TRAINER_TRY(grad_norm(grads, &norm, no));
    *clip_coef = clip_coefficient(norm, o.clip);
  }
  return {};
}

OptimizerStep::OptimizerStep(const TrainOptions& o, Mlp* model) : o_(o), model_(model) {
  lr_ = o.lr.value_or(o.optimizer == Optimizer::kSgd ? 0.05f : 1e-3f);
}

Status OptimizerStep::run(const amp::StepScaling& s, std::optional<float> clip_coef,
                          const std::vector<char>& owned) {
  // One fused call per rounding of the parameters' vars: one call in every precision mode; a
  // per-layer policy may mix plain, Kahan and stochastic rounding.
  for (WeightRounding rounding :
       {WeightRounding::kNearest, WeightRounding::kKahan, WeightRounding::kStochastic}) {
    std::vector<std::reference_wrapper<Parameter>> group;
    for (std::size_t i = 0; i < model_->params().size(); ++i) {
      Parameter& p = model_->params()[i];
      if (!owned.empty() && !owned[i]) continue;
      const bool master = p.var.dtype() == DType::kFloat32;
      if ((master ? WeightRounding::kNearest : p.rounding) == rounding) group.push_back(p);
    }
    if (!group.empty()) TRAINER_TRY(run_group(group, rounding, s, clip_coef));
  }
  // A rank whose shard holds no parameter still counts the step.
  ++steps_;
  return {};
}

Status OptimizerStep::run_group(const std::vector<std::reference_wrapper<Parameter>>& selected,
                                WeightRounding rounding, const amp::StepScaling& s,
                                std::optional<float> clip_coef) {
  FusedStepOptions fo;
  fo.grad_scale = s.grad_scale;
  fo.found_inf = s.found_inf;
  fo.clip_coef = clip_coef;
  fo.rounding = rounding;
  fo.seed = stream_seed(o_.seed, 5);
  fo.rng_step = static_cast<uint64_t>(steps_);
  auto working = [](Parameter& p) {
    return p.working.empty() ? std::optional<TensorView>() : p.working.view();
  };
  auto compensation = [](Parameter& p) {
    return p.compensation.empty() ? std::optional<TensorView>() : p.compensation.view();
  };
  Status st;
  switch (o_.optimizer) {
    case Optimizer::kAdamW: {
      std::vector<AdamWParamTensors> list;
      for (Parameter& p : selected) {
        list.push_back({.var = p.var.view(),
                        .m = p.m.view(),
                        .v = p.v.view(),
                        .max_grad_norm = std::nullopt,
                        .grad = p.grad.view(),
                        .working = working(p),
                        .compensation = compensation(p)});
      }
      MultiAdamWParams hp;
      hp.hyper.lr = lr_;
      hp.hyper.weight_decay = o_.weight_decay;
      hp.step = steps_;
      st = multi_tensor_adam_w(list, hp, fo);
      break;
    }
    case Optimizer::kAdam: {
      std::vector<AdamDParamTensors> list;
      for (Parameter& p : selected) {
        list.push_back({.var = p.var.view(),
                        .m = p.m.view(),
                        .v = p.v.view(),
                        .grad = p.grad.view(),
                        .working = working(p),
                        .compensation = compensation(p)});
      }
      // TensorFlow's form: beta^t for the step being taken, in fp64, rounded to fp32.
      const double t = static_cast<double>(steps_ + 1);
      MultiAdamDParams hp{.beta1_power = static_cast<float>(std::pow(0.9, t)),
                          .beta2_power = static_cast<float>(std::pow(0.999, t)),
                          .lr = lr_,
                          .beta1 = 0.9f,
                          .beta2 = 0.999f,
                          .epsilon = 1e-8f,
                          .use_nesterov = false};
      st = multi_tensor_apply_adam_d(list, hp, fo);
      break;
    }
    case Optimizer::kSgd: {
      std::vector<SgdParamTensors> list;
      for (Parameter& p : selected) {
        list.push_back({.parameters = p.var.view(),
                        .gradient = p.grad.view(),
                        .accum = p.m.view(),
                        .stat = p.v.view(),
                        .working = working(p),
                        .compensation = compensation(p)});
      }
      const MultiSgdParams hp{.learning_rate = lr_,
                              .momentum = o_.momentum,
                              .dampening = 0.0f,
                              .weight_decay = o_.weight_decay,
                              .nesterov = false};
      st = multi_tensor_sgd(list, hp, fo);
      break;
    }
  }
  return st;
}

// Loss and accuracy over a whole split, in batches of the training batch size.
Status evaluate(Mlp& model, const std::vector<float>& x, const std::vector<int32_t>& y,
                int64_t features, int64_t batch, double* loss, double* accuracy) {
  const int64_t rows = static_cast<int64_t>(y.size());
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (int64_t b = 0; b < rows; b += batch) {
    const int64_t n = std::min(batch, rows - b);
    TRAINER_TRY(model.forward(x.data() + b * features, n));
    double l = 0.0;
    int64_t c = 0;
    TRAINER_TRY(model.loss(y.data() + b, n, 1.0f, &l, &c));
    loss_sum += l * static_cast<double>(n);
    correct += c;
  }
  *loss = loss_sum / static_cast<double>(rows);
  *accuracy = static_cast<double>(correct) / static_cast<double>(rows);
  return {};
}

Status epoch_record(Mlp& model, const Dataset& data, const TrainOptions& o,
                    const amp::DynamicLossScaler& scaler, const ModeResult& r, int epoch,
                    EpochSums sums, std::pair<int64_t, int64_t> counters_before, double seconds,
                    EpochRecord* e) {
  e->epoch = epoch;
  e->train_loss = sums.loss_sum / static_cast<double>(sums.seen);
  e->train_accuracy = static_cast<double>(sums.correct) / static_cast<double>(sums.seen);
  TRAINER_TRY(evaluate(model, data.x_test, data.y_test, data.features, o.batch_size, &e->test_loss,
                       &e->test_accuracy));
  e->loss_scale = scaler.scale();
  e->skipped_steps = scaler.stats().skipped_steps;
  e->overflow_steps = r.overflow_steps;
  e->findings = r.findings;
  e->seconds = seconds;
  const int64_t values = model.grad_values() - counters_before.first;
  e->grad_underflow = values > 0
                          ? static_cast<double>(model.grad_underflows() - counters_before.second) /
                                static_cast<double>(values)
                          : 0.0;
  return {};
}

}  // namespace mantissa::train::detail
