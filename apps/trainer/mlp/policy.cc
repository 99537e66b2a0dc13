// Per-layer precision policies (train_policy.h): the file format, the presets, and a training
// run under a policy (the trainer with a per-layer detail::Precision).
#include "trainer/mlp/policy.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/json_depth.h"
#include "trainer/mlp/analyze.h"
#include "trainer/mlp/common.h"
#include "trainer/mlp/model.h"
#include "trainer/train_policy.h"

namespace mantissa::train {

namespace {

// The MLP's Linear and LayerNorm layers; every unit of the GPT ("embeddings", "block0", ...).
bool has_parameters(std::string_view layer) {
  return layer.starts_with("linear") || layer.starts_with("layernorm") ||
         layer.starts_with("block") || layer == "embeddings";
}

std::string joined(std::span<const std::string> names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// One layer object's fields over `base`: compute, stored, update. `where` names it.
Status apply_fields(const nlohmann::json& j, const std::string& where, bool parameters,
                    LayerPolicy* p, bool* stored_given) {
  if (!j.is_object()) return invalid("policy: " + where + " must be an object, got " + j.dump());
  static const std::map<std::string, DType> kDtypes{
      {"fp32", DType::kFloat32}, {"bf16", DType::kBFloat16}, {"fp16", DType::kFloat16}};
  static const std::map<std::string, UpdateForm> kUpdates{{"master", UpdateForm::kMaster},
                                                          {"plain", UpdateForm::kPlain},
                                                          {"kahan", UpdateForm::kKahan},
                                                          {"sr", UpdateForm::kStochastic}};
  for (const auto& [key, value] : j.items()) {
    const std::string at = where + "." + key;
    if (key != "compute" && key != "stored" && key != "update") {
      return invalid("policy: unknown key '" + at + "' (known: compute, stored, update)");
    }
    if (!value.is_string())
      return invalid("policy: " + at + " must be a string, got " + value.dump());
    const std::string v = value.get<std::string>();
    if (key == "update") {
      const auto it = kUpdates.find(v);
      if (it == kUpdates.end()) {
        return invalid("policy: " + at + ": unknown update form '" + v +
                       "' (known: master, plain, kahan, sr)");
      }
      if (!parameters) return invalid("policy: " + at + ": the layer has no parameters to update");
      p->update = it->second;
    } else {
      const auto it = kDtypes.find(v);
      if (it == kDtypes.end()) {
        return invalid("policy: " + at + ": unknown dtype '" + v + "' (known: fp32, bf16, fp16)");
      }
      (key == "compute" ? p->compute : p->stored) = it->second;
      if (key == "stored") *stored_given = true;
    }
  }
  return {};
}

Status check_layer(const LayerPolicy& p, const std::string& where) {
  if (p.compute != DType::kFloat32 && p.stored == DType::kFloat32) {
    return invalid("policy: " + where + ": stored 'fp32' is wider than compute '" +
                   policy_dtype_name(p.compute) + "' (the layer's input is already " +
                   policy_dtype_name(p.compute) + ")");
  }
  if (has_parameters(p.layer) && p.update != UpdateForm::kMaster && p.compute != DType::kBFloat16) {
    return invalid("policy: " + where + ": update '" + update_form_name(p.update) +
                   "' keeps bf16 weights and needs compute 'bf16', got '" +
                   policy_dtype_name(p.compute) + "'");
  }
  return {};
}

}  // namespace

const char* update_form_name(UpdateForm u) noexcept {
  switch (u) {
    case UpdateForm::kMaster: return "master";
    case UpdateForm::kPlain: return "plain";
    case UpdateForm::kKahan: return "kahan";
    case UpdateForm::kStochastic: return "sr";
  }
  return "?";
}

const char* loss_scaling_name(LossScaling s) noexcept {
  switch (s) {
    case LossScaling::kAuto: return "auto";
    case LossScaling::kNone: return "none";
    case LossScaling::kDynamic: return "dynamic";
  }
  return "?";
}

const char* policy_dtype_name(DType d) noexcept {
  switch (d) {
    case DType::kFloat32: return "fp32";
    case DType::kBFloat16: return "bf16";
    case DType::kFloat16: return "fp16";
    default: return "?";
  }
}

std::vector<std::string> layer_names(const TrainOptions& options) {
  std::vector<std::string> names;
  const std::size_t n = options.hidden.size();
  for (std::size_t l = 0; l <= n; ++l) {
    names.push_back("linear" + std::to_string(l));
    if (l == n) break;
    names.push_back("layernorm" + std::to_string(l));
    names.push_back(activation_name(options.activation) + std::to_string(l));
  }
  return names;
}

PrecisionPolicy uniform_policy(std::string name, std::span<const std::string> layers, DType compute,
                               DType stored, UpdateForm update) {
  PrecisionPolicy p;
  p.name = std::move(name);
  for (const std::string& l : layers) {
    p.layers.push_back({.layer = l, .compute = compute, .stored = stored, .update = update});
  }
  return p;
}

Status preset_policy(std::string_view preset, std::span<const std::string> layers,
                     PrecisionPolicy* out) {
  PrecisionPolicy p;
  if (preset == "fp32") {
    p = uniform_policy("fp32", layers, DType::kFloat32, DType::kFloat32, UpdateForm::kMaster);
  } else if (preset == "bf16-amp") {
    p = uniform_policy("bf16-amp", layers, DType::kBFloat16, DType::kBFloat16, UpdateForm::kMaster);
  } else if (preset == "fp16-amp") {
    p = uniform_policy("fp16-amp", layers, DType::kFloat16, DType::kFloat16, UpdateForm::kMaster);
    p.loss_scaling = LossScaling::kDynamic;
  } else if (preset == "seed") {
    p = uniform_policy("seed", layers, DType::kBFloat16, DType::kBFloat16, UpdateForm::kMaster);
    for (std::size_t i = 0; i < p.layers.size(); ++i) {
      LayerPolicy& l = p.layers[i];
      if (i == 0 || i + 1 == p.layers.size() || l.layer.starts_with("layernorm"))
        l.compute = DType::kFloat32;
      // The GPT's units keep their activations in their compute dtype.
      if (layers[0] == "embeddings") l.stored = l.compute;
    }
  } else {
    return invalid("policy: unknown preset '" + std::string(preset) +
                   "' (known: seed, fp32, bf16-amp, fp16-amp)");
  }
  *out = std::move(p);
  return {};
}

Status parse_policy(std::string_view text, std::span<const std::string> layers,
                    PrecisionPolicy* out) {
  if (const int depth = mantissa::detail::json_nesting_depth(text);
      depth > mantissa::detail::kMaxJsonNesting) {
    return invalid("policy: the JSON is nested " + std::to_string(depth) +
                   " levels deep (at most " + std::to_string(mantissa::detail::kMaxJsonNesting) +
                   ")");
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return invalid(std::string("policy: not JSON: ") + e.what());
  }
  if (!j.is_object()) return invalid("policy: the file must hold a JSON object");
  PrecisionPolicy p;
  p.name = "policy";
  LayerPolicy base;
  bool base_stored = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "name") {
      if (!value.is_string() || value.get<std::string>().empty()) {
        return invalid("policy: name must be a non-empty string, got " + value.dump());
      }
      p.name = value.get<std::string>();
    } else if (key == "loss_scaling") {
      const std::string v = value.is_string() ? value.get<std::string>() : value.dump();
      if (v == "auto") {
        p.loss_scaling = LossScaling::kAuto;
      } else if (v == "none") {
        p.loss_scaling = LossScaling::kNone;
      } else if (v == "dynamic") {
        p.loss_scaling = LossScaling::kDynamic;
      } else {
        return invalid("policy: loss_scaling: unknown value '" + v +
                       "' (known: auto, none, dynamic)");
      }
    } else if (key == "default") {
      // "update" in the default applies to the layers that have parameters.
      TRAINER_TRY(apply_fields(value, "default", true, &base, &base_stored));
    } else if (key != "layers") {
      return invalid("policy: unknown key '" + key +
                     "' (known: name, default, layers, loss_scaling)");
    }
  }
  std::map<std::string, nlohmann::json> given;
  if (j.contains("layers")) {
    const nlohmann::json& l = j["layers"];
    if (!l.is_object()) return invalid("policy: layers must be an object, got " + l.dump());
    for (const auto& [name, value] : l.items()) {
      if (std::find(layers.begin(), layers.end(), name) == layers.end()) {
        return invalid("policy: layers." + name +
                       ": no such layer (the model's: " + joined(layers) + ")");
      }
      given[name] = value;
    }
  }
  for (const std::string& name : layers) {
    LayerPolicy lp = base;
    lp.layer = name;
    bool stored_given = base_stored;
    const auto it = given.find(name);
    if (it != given.end()) {
      // A layer that names its compute dtype and not its stored one stores in its compute dtype.
      if (it->second.is_object() && it->second.contains("compute") &&
          !it->second.contains("stored")) {
        stored_given = false;
      }
      TRAINER_TRY(
          apply_fields(it->second, "layers." + name, has_parameters(name), &lp, &stored_given));
    }
    if (!stored_given) lp.stored = lp.compute;
    if (!has_parameters(name)) lp.update = UpdateForm::kMaster;
    TRAINER_TRY(check_layer(lp, it != given.end() ? "layers." + name : "default"));
    p.layers.push_back(std::move(lp));
  }
  *out = std::move(p);
  return {};
}

Status load_policy(const std::string& spec, std::span<const std::string> layers,
                   PrecisionPolicy* out) {
  if (spec.starts_with("preset:")) return preset_policy(spec.substr(7), layers, out);
  std::ifstream in(spec, std::ios::binary);
  if (!in) return invalid("policy: cannot read " + spec);
  std::stringstream ss;
  ss << in.rdbuf();
  Status st = parse_policy(ss.str(), layers, out);
  if (!st.ok()) return invalid(spec + ": " + st.message());
  return {};
}

std::string policy_json(const PrecisionPolicy& policy) {
  nlohmann::ordered_json j;
  j["name"] = policy.name;
  j["loss_scaling"] = loss_scaling_name(policy.loss_scaling);
  nlohmann::ordered_json layers = nlohmann::ordered_json::object();
  for (const LayerPolicy& l : policy.layers) {
    nlohmann::ordered_json e;
    e["compute"] = policy_dtype_name(l.compute);
    e["stored"] = policy_dtype_name(l.stored);
    if (has_parameters(l.layer)) e["update"] = update_form_name(l.update);
    layers[l.layer] = e;
  }
  j["layers"] = layers;
  return j.dump(2) + "\n";
}

detail::Precision detail::resolve_policy(const PrecisionPolicy& policy) {
  Precision p;
  bool any_fp16 = false, any_bf16 = false;
  for (const LayerPolicy& l : policy.layers) {
    any_fp16 |= l.compute == DType::kFloat16;
    any_bf16 |= l.compute == DType::kBFloat16;
    WeightRounding rounding = WeightRounding::kNearest;
    if (l.update == UpdateForm::kKahan) rounding = WeightRounding::kKahan;
    if (l.update == UpdateForm::kStochastic) rounding = WeightRounding::kStochastic;
    p.layers.push_back({.compute = l.compute,
                        .stored = l.stored,
                        .master = l.update == UpdateForm::kMaster,
                        .rounding = rounding});
  }
  // The anomaly detector's working dtype: the narrowest 16-bit format in use.
  p.compute = any_fp16 ? DType::kFloat16 : (any_bf16 ? DType::kBFloat16 : DType::kFloat32);
  p.master = true;
  p.loss_scaling = policy.loss_scaling == LossScaling::kDynamic ||
                   (policy.loss_scaling == LossScaling::kAuto && any_fp16);
  return p;
}

Status train_policy(const Dataset& data, const PrecisionPolicy& policy, const TrainOptions& options,
                    const TrainCallbacks& callbacks, PolicyResult* result) {
  return detail::train_policy_prepared(data, policy, options, callbacks, {}, result);
}

Status detail::train_policy_prepared(const Dataset& data, const PrecisionPolicy& policy,
                                     const TrainOptions& options, const TrainCallbacks& callbacks,
                                     const PrepareModel& prepare, PolicyResult* result) {
  const std::vector<std::string> names = layer_names(options);
  if (policy.layers.size() != names.size()) {
    return invalid("train: policy '" + policy.name + "' names " +
                   std::to_string(policy.layers.size()) + " layers, the model has " +
                   std::to_string(names.size()) + " (" + joined(names) + ")");
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (policy.layers[i].layer != names[i]) {
      return invalid("train: policy '" + policy.name + "' layer " + std::to_string(i) + " is '" +
                     policy.layers[i].layer + "', the model's is '" + names[i] + "'");
    }
    TRAINER_TRY(check_layer(policy.layers[i], "layers." + names[i]));
  }
  const detail::Precision precision = detail::resolve_policy(policy);
  PolicyResult r;
  r.policy = policy.name;
  int64_t activation_bytes = 0;
  TRAINER_TRY(detail::train_precision_then(
      data, precision, Mode::kFp32, options, callbacks, &r.run,
      [&](detail::Mlp& model, float) {
        activation_bytes = model.stored_activation_bytes(options.batch_size);
        return Status{};
      },
      prepare));
  r.activation_bytes = activation_bytes;
  r.best_epoch_seconds = 0.0;
  for (const EpochRecord& e : r.run.epochs) {
    if (r.best_epoch_seconds == 0.0 || e.seconds < r.best_epoch_seconds) {
      r.best_epoch_seconds = e.seconds;
    }
  }
  *result = std::move(r);
  return {};
}

}  // namespace mantissa::train
