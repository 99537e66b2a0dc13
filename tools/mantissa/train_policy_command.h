// `mantissa train --sensitivity` and `--tradeoff`: the per-layer sensitivity ranking, the
// suggested policy, and the trade-off table of precision policies (see docs/training.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainer/train.h"
#include "trainer/train_policy.h"

namespace mantissa::tool {

struct PolicyToolOptions {
  std::string sensitivity_path;  // JSON; the SVG next to it
  std::string tradeoff_path;     // JSON; the SVG next to it
  std::string suggest_path;      // the suggested policy file ("": next to the sensitivity JSON)
  std::string suggest_format = "bf16";
  double suggest_threshold = 0.02;
  std::vector<train::PrecisionPolicy> policies;  // --policy, added to the trade-off table
};

// What the policy tools train: the MLP (per layer, epochs, test loss and accuracy, inference
// rows) or the GPT (per unit, steps, validation loss; no accuracy, no inference rows).
struct PolicyModel {
  std::vector<std::string> layers;  // the policy's layer (or unit) names
  bool gpt = false;
  std::string budget_key;  // "epochs" or "steps" (the JSON's key)
  int64_t budget = 0;
  int64_t batch_size = 0;
  std::function<Status(const train::SensitivityProgress&, train::SensitivityReport*)> sensitivity;
  std::function<Status(const train::PrecisionPolicy&, train::PolicyResult*)> train;
};

// Runs the sensitivity (when asked, or for the trade-off's suggested policy) and the trade-off
// table; prints the tables, writes the files. 0 on success, 1 on a failed run or write.
int run_policy_tools(const PolicyToolOptions& o, const PolicyModel& m, const std::string& title);

// The SVG file next to a JSON path: a.json -> a.svg, else path + ".svg".
std::string svg_next_to(const std::string& json_path);
// Where --sensitivity writes its suggested policy when --suggest is not given.
std::string suggested_policy_path(const std::string& sensitivity_json);

}  // namespace mantissa::tool
