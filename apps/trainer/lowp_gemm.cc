// A Linear layer's products in FP8 or a microscaling format (lowp_gemm.h).
#include "trainer/lowp_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "mantissa/lowp.h"
#include "mantissa/ops/quant_max.h"
#include "trainer/rng.h"

namespace mantissa::trainer {

namespace {

bool fp4(DType d) { return d == DType::kFloat4E2M1 || d == DType::kFloat4E1M2; }

int64_t code_bytes(DType d, int64_t n) { return fp4(d) ? (n + 1) / 2 : n; }

// The largest finite value of an element format: 448 (E4M3FN), 57344 (E5M2), 6 (E2M1).
float format_max(DType d) { return d == DType::kFloat4E2M1 ? 6.0f : amp::fp8_max(d); }

// dst [c, r] = src [r, c]^T, elements of `size` bytes.
void transpose(const void* src, std::size_t size, int64_t r, int64_t c, void* dst) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < r; i0 += kTile) {
    for (int64_t j0 = 0; j0 < c; j0 += kTile) {
      for (int64_t i = i0; i < std::min(r, i0 + kTile); ++i) {
        for (int64_t j = j0; j < std::min(c, j0 + kTile); ++j) {
          std::memcpy(d + (j * r + i) * size, s + (i * c + j) * size, size);
        }
      }
    }
  }
}

float widen_one(DType t, const void* data, int64_t i) {
  float f = 0.0f;
  widen(static_cast<const unsigned char*>(data) + i * static_cast<int64_t>(dtype_size(t)), t, &f,
        1);
  return f;
}

}  // namespace

const char* gemm_format_name(GemmFormat f) {
  switch (f) {
    case GemmFormat::kNone: return "none";
    case GemmFormat::kFp8Delayed: return "fp8-delayed";
    case GemmFormat::kFp8Current: return "fp8-current";
    case GemmFormat::kMxfp8: return "mxfp8";
    case GemmFormat::kMxfp4: return "mxfp4";
    case GemmFormat::kNvfp4: return "nvfp4";
  }
  return "?";
}

LowpGemm::LowpGemm(std::string name, const GemmRecipe& recipe, uint64_t stream)
    : name_(std::move(name)), recipe_(recipe), stream_(stream) {
  if (recipe.format == GemmFormat::kFp8Delayed) {
    for (int i = 0; i < 3; ++i) {
      const amp::Fp8Role role = i == 2 ? amp::Fp8Role::kGradient : amp::Fp8Role::kForward;
      // The recipe was validated with the options; create() cannot fail on it here.
      (void)amp::DelayedScaling::create(recipe.delayed, role,
                                        &delayed_[static_cast<std::size_t>(i)]);
    }
  }
}

// ---- Quantization ----------------------------------------------------------------------------

Status LowpGemm::tensorwise(const Context& ctx, const TensorView& src, int which, Operand* out,
                            const char* label) {
  const amp::Fp8Role role = which == 2 ? amp::Fp8Role::kGradient : amp::Fp8Role::kForward;
  out->dtype = amp::fp8_dtype(recipe_.delayed.fp8_format, role);
  out->shape.assign(src.shape.begin(), src.shape.begin() + src.rank);
  int64_t n = 1;
  for (int64_t d : out->shape) n *= d;
  out->codes.resize(static_cast<std::size_t>(n));
  const TensorView y(out->codes.data(), out->dtype, std::span<const int64_t>(out->shape));
  float scale = 1.0f;
  if (recipe_.format == GemmFormat::kFp8Delayed) {
    amp::DelayedScaling& ds = delayed_[static_cast<std::size_t>(which)];
    scale = ds.scale();
    uint32_t amax_bits = 0;  // x's dtype: fp32, fp16 or bf16
    QuantMaxParams p;
    p.dst_type = out->dtype;
    TRAINER_TRY(quant_max({.x = src,
                           .scale = TensorView(&scale, DType::kFloat32, {1}),
                           .y = y,
                           .amax = TensorView(&amax_bits, src.dtype, {1})},
                          p));
    // The validation passes are the model's forward without a step: they cast with the scale
    // and leave the history alone.
    if (ctx.training) ds.record(widen_one(src.dtype, &amax_bits, 0));
  } else {
    float amax = 0.0f;
    TRAINER_TRY(amp::current_scaling_quantize(src, y, {}, &scale, &amax));
  }
  out->scale = scale;
  out->scale_inv = 1.0f / scale;
  if (ctx.collect_stats) note(ctx, label, src, *out);
  return {};
}

Status LowpGemm::blocks(const Context& ctx, const TensorView& src, bool gradient, uint64_t salt,
                        Operand* out, const char* label) {
  const int64_t r = src.shape[0], c = src.shape[1];
  out->shape = {r, c};
  if (recipe_.format == GemmFormat::kNvfp4) {
    out->dtype = DType::kFloat4E2M1;
    out->codes.resize(static_cast<std::size_t>(code_bytes(out->dtype, r * c)));
    out->scales.resize(static_cast<std::size_t>(r * (c / 16)));
    amp::Nvfp4Matrix m{.codes = TensorView(out->codes.data(), out->dtype, {r, c}),
                       .scales = TensorView(out->scales.data(), DType::kFloat8E4M3FN, {r, c / 16}),
                       .tensor_scale_inv = 1.0f};
    amp::Nvfp4Options o;
    o.stochastic = gradient && recipe_.stochastic_gradients;
    o.seed = stream_seed(recipe_.seed, stream_ * 16 + salt);
    o.step = ctx.pass;
    TRAINER_TRY(amp::nvfp4_quantize(src, m, o));
    out->scale_inv = m.tensor_scale_inv;
    out->scale = 1.0f / m.tensor_scale_inv;
    if (ctx.collect_stats) note(ctx, label, src, *out);
    return {};
  }
  out->dtype = recipe_.format == GemmFormat::kMxfp4 ? DType::kFloat4E2M1 : DType::kFloat8E4M3FN;
  const int64_t pairs = ((c + 31) / 32 + 1) / 2;
  out->codes.resize(static_cast<std::size_t>(code_bytes(out->dtype, r * c)));
  out->scales.assign(static_cast<std::size_t>(r * pairs * 2), 0);
  out->scale = out->scale_inv = 1.0f;
  TRAINER_TRY(amp::mx_quantize_blocks(
      src,
      {.codes = TensorView(out->codes.data(), out->dtype, {r, c}),
       .scales = TensorView(out->scales.data(), DType::kFloat8E8M0, {r, pairs, 2})},
      recipe_.mx_rule));
  if (ctx.collect_stats) note(ctx, label, src, *out);
  return {};
}

Status LowpGemm::product(const Operand& a, const Operand& b, bool transpose_b,
                         const TensorView& out) const {
  auto codes = [](const Operand& o) {
    return TensorView(const_cast<uint8_t*>(o.codes.data()), o.dtype,
                      std::span<const int64_t>(o.shape));
  };
  switch (recipe_.format) {
    case GemmFormat::kFp8Delayed:
    case GemmFormat::kFp8Current:
      return amp::fp8_matmul({codes(a), a.scale_inv}, {codes(b), b.scale_inv}, out, transpose_b);
    case GemmFormat::kNvfp4: {
      auto m = [&](const Operand& o) {
        return amp::Nvfp4Matrix{
            .codes = codes(o),
            .scales = TensorView(const_cast<uint8_t*>(o.scales.data()), DType::kFloat8E4M3FN,
                                 {o.shape[0], o.shape[1] / 16}),
            .tensor_scale_inv = o.scale_inv};
      };
      return amp::nvfp4_matmul(m(a), m(b), out);
    }
    default: {
      auto m = [&](const Operand& o) {
        const int64_t pairs = ((o.shape[1] + 31) / 32 + 1) / 2;
        return amp::MxMatrix{.codes = codes(o),
                             .scales = TensorView(const_cast<uint8_t*>(o.scales.data()),
                                                  DType::kFloat8E8M0, {o.shape[0], pairs, 2})};
      };
      return amp::mx_matmul(m(a), m(b), out);
    }
  }
}

// ---- The three products ----------------------------------------------------------------------

Status LowpGemm::forward(const Context& ctx, const Tensor& x, const Tensor& w,
                         const TensorView& y) {
  if (ctx.collect_stats) stats_.clear();
  if (recipe_.format == GemmFormat::kFp8Delayed || recipe_.format == GemmFormat::kFp8Current) {
    TRAINER_TRY(tensorwise(ctx, x.view(), 0, &xq_, "x"));
    TRAINER_TRY(tensorwise(ctx, w.view(), 1, &wq_, "w"));
    return product(xq_, wq_, false, y);
  }
  // Block formats quantize along the reduction dim: x [m, k] as it is, W [k, n] as W^T [n, k].
  const int64_t k = w.shape()[0], n = w.shape()[1];
  t_src_.resize(static_cast<std::size_t>(w.bytes()));
  transpose(w.data(), dtype_size(w.dtype()), k, n, t_src_.data());
  TRAINER_TRY(blocks(ctx, x.view(), false, 0, &aq_, "x"));
  TRAINER_TRY(blocks(ctx, TensorView(t_src_.data(), w.dtype(), {n, k}), false, 1, &bq_, "w"));
  return product(aq_, bq_, false, y);
}

Status LowpGemm::backward(const Context& ctx, const Tensor& x, const Tensor& w, const Tensor& dy,
                          const TensorView& dx, const TensorView& dw) {
  const int64_t m = dy.shape()[0], n = dy.shape()[1], k = x.shape()[1];
  if (recipe_.format == GemmFormat::kFp8Delayed || recipe_.format == GemmFormat::kFp8Current) {
    TRAINER_TRY(tensorwise(ctx, dy.view(), 2, &dyq_, "dy"));
    // dx = dy W^T: W's codes [k, n] read as the transposed B.
    TRAINER_TRY(product(dyq_, wq_, true, dx));
    // dW = x^T dy: x's codes transposed (the same values: a tensor-wise cast commutes with it).
    aq_.dtype = xq_.dtype;
    aq_.shape = {k, m};
    aq_.scale = xq_.scale;
    aq_.scale_inv = xq_.scale_inv;
    aq_.codes.resize(xq_.codes.size());
    transpose(xq_.codes.data(), 1, m, k, aq_.codes.data());
    return product(aq_, dyq_, false, dw);
  }
  // dx [m, k] = dy [m, n] W^T: both along n (W [k, n] as it is).
  TRAINER_TRY(blocks(ctx, dy.view(), true, 2, &aq_, "dy"));
  TRAINER_TRY(blocks(ctx, w.view(), false, 3, &bq_, "w^T"));
  TRAINER_TRY(product(aq_, bq_, false, dx));
  // dW [k, n] = x^T dy: x^T [k, m] and dy^T [n, m], both along the rows.
  t_src_.resize(static_cast<std::size_t>(x.bytes()));
  transpose(x.data(), dtype_size(x.dtype()), m, k, t_src_.data());
  TRAINER_TRY(blocks(ctx, TensorView(t_src_.data(), x.dtype(), {k, m}), false, 4, &aq_, "x^T"));
  t_src_.resize(static_cast<std::size_t>(dy.bytes()));
  transpose(dy.data(), dtype_size(dy.dtype()), m, n, t_src_.data());
  TRAINER_TRY(blocks(ctx, TensorView(t_src_.data(), dy.dtype(), {n, m}), true, 5, &bq_, "dy^T"));
  return product(aq_, bq_, false, dw);
}

// ---- Delayed scaling's step and state ----------------------------------------------------------

std::array<float, 3> LowpGemm::pending_amax() const {
  std::array<float, 3> a{};
  if (recipe_.format != GemmFormat::kFp8Delayed) return a;
  for (std::size_t i = 0; i < 3; ++i) a[i] = delayed_[i].amax_history()[0];
  return a;
}

void LowpGemm::record(const std::array<float, 3>& amax) {
  if (recipe_.format != GemmFormat::kFp8Delayed) return;
  for (std::size_t i = 0; i < 3; ++i) delayed_[i].record(amax[i]);
}

void LowpGemm::end_step() {
  if (recipe_.format != GemmFormat::kFp8Delayed) return;
  for (auto& d : delayed_) d.update();
}

std::vector<std::string> LowpGemm::state() const {
  std::vector<std::string> s;
  if (recipe_.format != GemmFormat::kFp8Delayed) return s;
  for (const auto& d : delayed_) s.push_back(d.state());
  return s;
}

Status LowpGemm::load_state(const std::vector<std::string>& state) {
  if (recipe_.format != GemmFormat::kFp8Delayed) {
    if (!state.empty()) return invalid(name_ + ": FP8 scaling state for a mode without one");
    return {};
  }
  if (state.size() != 3) {
    return invalid(name_ + ": " + std::to_string(state.size()) +
                   " FP8 scaling states, expected 3 (x, w, dy)");
  }
  std::array<amp::DelayedScaling, 3> next = delayed_;
  for (std::size_t i = 0; i < 3; ++i) {
    Status st = next[i].load_state(state[i]);
    if (!st.ok()) return invalid(name_ + ": " + st.message());
    if (next[i].role() != delayed_[i].role()) {
      return invalid(name_ + ": FP8 scaling state " + std::to_string(i) + " has another role");
    }
  }
  delayed_ = next;
  return {};
}

// ---- Statistics ------------------------------------------------------------------------------

void LowpGemm::note(const Context&, const char* label, const TensorView& src, const Operand& q) {
  const int64_t r = q.shape[0], c = q.shape[1], n = r * c;
  std::vector<float> x(static_cast<std::size_t>(n)), v(static_cast<std::size_t>(n));
  widen(src.data, src.dtype, x.data(), n);
  convert_lowp_to_fp32(q.dtype, q.codes.data(), v.data(), static_cast<std::size_t>(n));
  const float vmax = format_max(q.dtype);
  OperandStats s;
  s.operand = label;
  s.dtype = q.dtype == DType::kFloat8E4M3FN ? "e4m3"
            : q.dtype == DType::kFloat8E5M2 ? "e5m2"
                                            : "e2m1";
  s.count = n;
  s.scale =
      recipe_.format == GemmFormat::kMxfp8 || recipe_.format == GemmFormat::kMxfp4 ? 0.0f : q.scale;
  double dd = 0.0, xx = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t col = i % c, row = i / c;
    double factor = q.scale_inv;  // what the code is multiplied by
    if (recipe_.format == GemmFormat::kNvfp4) {
      float s16 = 0.0f;
      convert_lowp_to_fp32(DType::kFloat8E4M3FN,
                           &q.scales[static_cast<std::size_t>(row * (c / 16) + col / 16)], &s16, 1);
      factor = static_cast<double>(s16) * q.scale_inv;
    } else if (recipe_.format == GemmFormat::kMxfp8 || recipe_.format == GemmFormat::kMxfp4) {
      const int64_t pairs = ((c + 31) / 32 + 1) / 2;
      const int code = q.scales[static_cast<std::size_t>(row * pairs * 2 + col / 32)];
      factor = code == 0xFF ? NAN : std::ldexp(1.0, code - 127);
    }
    const double xi = x[static_cast<std::size_t>(i)], qi = v[static_cast<std::size_t>(i)];
    const double deq = qi * factor;
    s.amax = std::max(s.amax, static_cast<float>(std::fabs(xi)));
    if (xi != 0.0) {
      ++s.nonzero;
      if (deq == 0.0) ++s.underflow;
    }
    if (std::fabs(qi) == vmax && std::fabs(xi) > std::fabs(deq)) ++s.saturated;
    if (std::isfinite(deq) && std::isfinite(xi)) {
      dd += (deq - xi) * (deq - xi);
      xx += xi * xi;
    }
  }
  s.error = xx > 0 ? std::sqrt(dd / xx) : 0.0;
  stats_.push_back(std::move(s));
}

}  // namespace mantissa::trainer
