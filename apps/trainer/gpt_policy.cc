// The GPT's sensitivity runs and policy runs (gpt_policy.h).
#include "trainer/gpt_policy.h"

#include <string>
#include <utility>
#include <vector>

namespace mantissa::trainer {

namespace {

// One run under `precision`; the fields the policy tools read.
Status run(const TextCorpus& corpus, const GptPrecision& precision, const std::string& name,
           const GptTrainOptions& o, GptResult* r) {
  return train_gpt(corpus, precision, name, o, {}, r);
}

}  // namespace

Status gpt_sensitivity_runs(const TextCorpus& corpus, const GptTrainOptions& o,
                            const train::SensitivityProgress& progress,
                            train::SensitivityReport* report) {
  TRAINER_TRY(o.validate());
  const std::vector<std::string> units = unit_names(o.model);
  const int total = 1 + 2 * static_cast<int>(units.size());
  int done = 0;
  auto step = [&](const std::string& what) {
    if (progress) progress(done, total, what);
  };
  train::SensitivityReport rep;
  step("train fp32 (baseline)");
  GptResult base;
  const GptPrecision fp32 = gpt_precision_of(train::Mode::kFp32, o.model);
  TRAINER_TRY(run(corpus, fp32, "fp32", o, &base));
  ++done;
  rep.baseline_loss = base.val_loss;
  rep.baseline_digest = base.digest;
  for (std::size_t u = 0; u < units.size(); ++u) {
    for (DType d : {DType::kBFloat16, DType::kFloat16}) {
      const std::string format = train::policy_dtype_name(d);
      step("train " + units[u] + " alone in " + format);
      GptPrecision p = fp32;
      p.units[u].compute = d;
      p.units[u].master = true;
      p.loss_scaling = d == DType::kFloat16;
      for (Precision& q : p.units) q.loss_scaling = p.loss_scaling;
      GptResult r;
      TRAINER_TRY(run(corpus, p, units[u] + "-" + format, o, &r));
      ++done;
      train::SensitivityRow row;
      row.layer = units[u];
      row.format = format;
      row.depth = static_cast<int>(u);
      row.test_loss = r.val_loss;
      row.loss_change = r.val_loss - base.val_loss;
      row.skipped_steps = r.skipped_steps;
      rep.training.push_back(std::move(row));
    }
  }
  step("done");
  *report = std::move(rep);
  return {};
}

Status gpt_train_policy(const TextCorpus& corpus, const train::PrecisionPolicy& policy,
                        const GptTrainOptions& o, train::PolicyResult* result) {
  GptPrecision p;
  TRAINER_TRY(gpt_precision_from_policy(policy, o.model, &p));
  GptResult r;
  TRAINER_TRY(run(corpus, p, policy.name, o, &r));
  train::PolicyResult out;
  out.policy = policy.name;
  out.run.test_loss = r.val_loss;
  out.run.skipped_steps = r.skipped_steps;
  out.run.overflow_steps = r.overflow_steps;
  out.run.findings = r.findings;
  out.run.grad_underflow = r.grad_underflow;
  out.run.stalled_updates = r.stalled_updates;
  out.run.seconds_per_epoch = r.step_time_s;
  out.run.state_bytes = r.state_bytes;
  out.run.digest = r.digest;
  out.best_epoch_seconds = r.step_time_s;
  *result = std::move(out);
  return {};
}

}  // namespace mantissa::trainer
