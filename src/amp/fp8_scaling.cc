// FP8 scaling recipes: delayed scaling (Transformer Engine's DelayedScaling) and current
// scaling, on the QuantMax operator. See mantissa/amp/fp8_scaling.h and docs/fp8_training.md.
#include "mantissa/amp/fp8_scaling.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "core/validate.h"
#include "mantissa/convert.h"
#include "mantissa/ops/quant_max.h"
#include "mantissa/reduce.h"

namespace mantissa::amp {

namespace {

constexpr std::string_view kDelayedName = "DelayedScaling";
constexpr std::string_view kDelayedFormat = "mantissa.fp8_delayed_scaling";
constexpr int kDelayedVersion = 1;
constexpr int64_t kMaxAmaxHistory = 65536;

bool is_fp8_dtype(DType d) { return d == DType::kFloat8E4M3FN || d == DType::kFloat8E5M2; }

Status check_recipe(const DelayedScalingRecipe& r) {
  using detail::fail;
  const auto format = static_cast<int32_t>(r.fp8_format);
  if (format != 0 && format != 1) {
    return fail(StatusCode::kParamInvalid, kDelayedName,
                "fp8_format {} is not E4M3 (0) or HYBRID (1)", format);
  }
  if (r.amax_history_len < 1 || r.amax_history_len > kMaxAmaxHistory) {
    return fail(StatusCode::kParamInvalid, kDelayedName, "amax_history_len {} is not in [1, {}]",
                r.amax_history_len, kMaxAmaxHistory);
  }
  const auto algo = static_cast<int32_t>(r.amax_compute_algo);
  if (algo != 0 && algo != 1) {
    return fail(StatusCode::kParamInvalid, kDelayedName,
                "amax_compute_algo {} is not max (0) or most_recent (1)", algo);
  }
  if (r.margin < -126 || r.margin > 127) {
    return fail(StatusCode::kParamInvalid, kDelayedName, "margin {} is not in [-126, 127]",
                r.margin);
  }
  return {};
}

// max with NaN from either side (torch.max's rule).
float nan_max_f32(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  return std::max(a, b);
}

// An amax produced by QuantMax in x's dtype, widened exactly.
float widen_amax(const void* bits, DType d) {
  float f = 0.0f;
  if (d == DType::kFloat32) {
    std::memcpy(&f, bits, sizeof f);
  } else if (d == DType::kFloat16) {
    convert_fp16_to_fp32(static_cast<const uint16_t*>(bits), &f, 1);
  } else {
    convert_bf16_to_fp32(static_cast<const uint16_t*>(bits), &f, 1);
  }
  return f;
}

// QuantMax with a host scale; *amax gets max |x| (fp32).
Status cast_with_scale(const TensorView& x, const TensorView& y, float scale, float* amax) {
  float s = scale;
  alignas(4) uint8_t amax_bits[4] = {};
  const TensorView scale_view(&s, DType::kFloat32, {1});
  const TensorView amax_view(amax_bits, x.dtype, {1});
  MANTISSA_RETURN_IF_ERROR(
      quant_max({.x = x, .scale = scale_view, .y = y, .amax = amax_view},
                {.round_mode = QuantMaxRoundMode::kRint, .dst_type = y.dtype}));
  *amax = widen_amax(amax_bits, x.dtype);
  return {};
}

}  // namespace

DType fp8_dtype(Fp8Format format, Fp8Role role) noexcept {
  return format == Fp8Format::kHybrid && role == Fp8Role::kGradient ? DType::kFloat8E5M2
                                                                    : DType::kFloat8E4M3FN;
}

float fp8_max(DType fp8) noexcept {
  if (fp8 == DType::kFloat8E4M3FN) return 448.0f;
  if (fp8 == DType::kFloat8E5M2) return 57344.0f;
  return 0.0f;
}

// ---- Delayed scaling ---------------------------------------------------------------------------

DelayedScaling::DelayedScaling()
    : history_(static_cast<std::size_t>(DelayedScalingRecipe{}.amax_history_len), 0.0f) {}

Status DelayedScaling::create(const DelayedScalingRecipe& recipe, Fp8Role role,
                              DelayedScaling* out) {
  MANTISSA_RETURN_IF_ERROR(check_recipe(recipe));
  const auto r = static_cast<int32_t>(role);
  if (r != 0 && r != 1) {
    return detail::fail(StatusCode::kParamInvalid, kDelayedName,
                        "role {} is not forward (0) or gradient (1)", r);
  }
  if (out == nullptr) return detail::fail(StatusCode::kParamNullptr, kDelayedName, "out is null");
  DelayedScaling s;
  s.recipe_ = recipe;
  s.role_ = role;
  s.dtype_ = fp8_dtype(recipe.fp8_format, role);
  s.history_.assign(static_cast<std::size_t>(recipe.amax_history_len), 0.0f);
  *out = std::move(s);
  return {};
}

void DelayedScaling::record(float amax) { history_[0] = nan_max_f32(history_[0], amax); }

void DelayedScaling::update() {
  float amax = history_[0];
  if (recipe_.amax_compute_algo == AmaxComputeAlgo::kMax) {
    for (float a : history_) amax = nan_max_f32(amax, a);
  }
  if (std::isfinite(amax) && amax > 0.0f) {
    // The spec's grouping: fp8_max * 2^-margin (exact, or +inf for E5M2 with a margin below
    // -112), then one fp32 division.
    float s = (fp8_max(dtype_) * std::ldexp(1.0f, -recipe_.margin)) / amax;
    if (std::isinf(s)) s = std::numeric_limits<float>::max();
    scale_ = s;
  }
  std::rotate(history_.begin(), history_.begin() + 1, history_.end());
  history_[0] = 0.0f;
  ++steps_;
}

Status DelayedScaling::quantize(const TensorView& x, const TensorView& y) {
  if (y.dtype != dtype_ && is_fp8_dtype(y.dtype)) {
    return detail::fail(StatusCode::kParamInvalid, kDelayedName,
                        "y dtype {} is not this tensor's FP8 dtype {}", dtype_name(y.dtype),
                        dtype_name(dtype_));
  }
  float amax = 0.0f;
  MANTISSA_RETURN_IF_ERROR(cast_with_scale(x, y, scale_, &amax));
  record(amax);
  return {};
}

std::string DelayedScaling::state() const {
  nlohmann::json history = nlohmann::json::array();
  for (float a : history_) history.push_back(std::bit_cast<uint32_t>(a));
  const nlohmann::json j = {
      {"format", kDelayedFormat},
      {"version", kDelayedVersion},
      {"recipe",
       {{"fp8_format", static_cast<int32_t>(recipe_.fp8_format)},
        {"amax_history_len", recipe_.amax_history_len},
        {"amax_compute_algo", static_cast<int32_t>(recipe_.amax_compute_algo)},
        {"margin", recipe_.margin}}},
      {"role", static_cast<int32_t>(role_)},
      {"scale_bits", std::bit_cast<uint32_t>(scale_)},
      {"amax_history_bits", history},
      {"steps", steps_},
  };
  return j.dump(1);
}

Status DelayedScaling::load_state(std::string_view text) {
  using detail::fail;
  if (const int depth = detail::json_nesting_depth(text); depth > detail::kMaxJsonNesting) {
    return fail(StatusCode::kParamInvalid, kDelayedName,
                "the state is nested {} levels deep (at most {})", depth, detail::kMaxJsonNesting);
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return fail(StatusCode::kParamInvalid, kDelayedName, "the state is not a JSON object");
  }
  if (!j.contains("format") || j["format"] != kDelayedFormat) {
    return fail(StatusCode::kParamInvalid, kDelayedName, "the state's format is not \"{}\"",
                kDelayedFormat);
  }
  if (!j.contains("version") || !j["version"].is_number_integer() ||
      j["version"].get<int64_t>() != kDelayedVersion) {
    return fail(StatusCode::kParamInvalid, kDelayedName, "the state is not version {}",
                kDelayedVersion);
  }
  // Integers only, each within its range; read without exceptions.
  auto integer = [&](const nlohmann::json& o, const char* key, int64_t lo, int64_t hi,
                     int64_t* value) -> Status {
    if (!o.is_object() || !o.contains(key) || !o[key].is_number_integer()) {
      return fail(StatusCode::kParamInvalid, kDelayedName, "the state has no integer {}", key);
    }
    const nlohmann::json& v = o[key];
    const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                             : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
    if (!fits) {
      return fail(StatusCode::kParamInvalid, kDelayedName, "the state's {} {} is not in [{}, {}]",
                  key, v.dump(), lo, hi);
    }
    *value = v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
    return {};
  };
  const nlohmann::json& jr = j.contains("recipe") ? j["recipe"] : nlohmann::json();
  int64_t format = 0, len = 0, algo = 0, margin = 0, role = 0, scale_bits = 0, steps = 0;
  MANTISSA_RETURN_IF_ERROR(integer(jr, "fp8_format", 0, 1, &format));
  MANTISSA_RETURN_IF_ERROR(integer(jr, "amax_history_len", 1, kMaxAmaxHistory, &len));
  MANTISSA_RETURN_IF_ERROR(integer(jr, "amax_compute_algo", 0, 1, &algo));
  MANTISSA_RETURN_IF_ERROR(integer(jr, "margin", -126, 127, &margin));
  MANTISSA_RETURN_IF_ERROR(integer(j, "role", 0, 1, &role));
  MANTISSA_RETURN_IF_ERROR(integer(j, "scale_bits", 0, UINT32_MAX, &scale_bits));
  MANTISSA_RETURN_IF_ERROR(integer(j, "steps", 0, INT64_MAX, &steps));
  const auto scale = std::bit_cast<float>(static_cast<uint32_t>(scale_bits));
  if (!std::isfinite(scale) || !(scale > 0.0f)) {
    return fail(StatusCode::kParamInvalid, kDelayedName,
                "the state's scale {} is not finite and > 0", scale);
  }
  if (!j.contains("amax_history_bits") || !j["amax_history_bits"].is_array() ||
      j["amax_history_bits"].size() != static_cast<std::size_t>(len)) {
    return fail(StatusCode::kParamInvalid, kDelayedName,
                "the state's amax_history_bits is not an array of amax_history_len ({}) entries",
                len);
  }
  std::vector<float> history;
  for (const nlohmann::json& v : j["amax_history_bits"]) {
    if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX) {
      return fail(StatusCode::kParamInvalid, kDelayedName,
                  "the state's amax_history_bits holds {}, not a 32-bit pattern", v.dump());
    }
    history.push_back(std::bit_cast<float>(static_cast<uint32_t>(v.get<uint64_t>())));
  }
  recipe_ = {.fp8_format = static_cast<Fp8Format>(format),
             .amax_history_len = len,
             .amax_compute_algo = static_cast<AmaxComputeAlgo>(algo),
             .margin = static_cast<int32_t>(margin)};
  role_ = static_cast<Fp8Role>(role);
  dtype_ = fp8_dtype(recipe_.fp8_format, role_);
  scale_ = scale;
  history_ = std::move(history);
  steps_ = steps;
  return {};
}

// ---- Current scaling ---------------------------------------------------------------------------

float current_scale(float amax, DType fp8, const CurrentScalingOptions& o) noexcept {
  if (amax < o.amax_epsilon) amax = o.amax_epsilon;
  if (std::isinf(amax) || amax == 0.0f || std::isnan(amax)) return 1.0f;
  float scale = fp8_max(fp8) / amax;
  if (std::isinf(scale)) scale = std::numeric_limits<float>::max();
  if (std::isnan(scale) || scale == 0.0f) return 1.0f;  // not an FP8 dtype
  if (o.power_of_two_scales) {
    scale = std::bit_cast<float>(std::bit_cast<uint32_t>(scale) & 0xFF800000u);
  }
  return scale;
}

Status current_scaling_quantize(const TensorView& x, const TensorView& y,
                                const CurrentScalingOptions& o, float* scale, float* amax) {
  constexpr std::string_view op = "current_scaling_quantize";
  if (scale == nullptr || amax == nullptr) {
    return detail::fail(StatusCode::kParamNullptr, op, "scale and amax must not be null");
  }
  if (!(o.amax_epsilon >= 0.0f) || std::isinf(o.amax_epsilon)) {
    return detail::fail(StatusCode::kParamInvalid, op, "amax_epsilon {} is not finite and >= 0",
                        o.amax_epsilon);
  }
  // Everything QuantMax checks, before the first pass: nothing is written on error.
  float one = 1.0f;
  alignas(4) uint8_t probe[4] = {};
  MANTISSA_RETURN_IF_ERROR(
      quant_max_validate({.x = x,
                          .scale = TensorView(&one, DType::kFloat32, {1}),
                          .y = y,
                          .amax = TensorView(probe, x.dtype, {1})},
                         {.round_mode = QuantMaxRoundMode::kRint, .dst_type = y.dtype}));
  double m = 0.0;
  MANTISSA_RETURN_IF_ERROR(max_abs(x, &m));
  const auto a = static_cast<float>(m);  // one of x's magnitudes: exact
  const float s = current_scale(a, y.dtype, o);
  float seen = 0.0f;
  MANTISSA_RETURN_IF_ERROR(cast_with_scale(x, y, s, &seen));
  *scale = s;
  *amax = a;
  return {};
}

}  // namespace mantissa::amp
