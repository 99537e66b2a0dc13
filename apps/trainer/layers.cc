// The trainer's layers (layers.h).
#include "trainer/layers.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "mantissa/ops/add_rms_norm.h"
#include "mantissa/ops/cross_entropy_loss.h"
#include "mantissa/ops/gelu.h"
#include "mantissa/ops/layer_norm.h"
#include "mantissa/ops/layer_norm_grad.h"
#include "mantissa/ops/matmul.h"
#include "mantissa/ops/rms_norm.h"
#include "mantissa/ops/rms_norm_grad.h"
#include "mantissa/ops/softmax.h"
#include "mantissa/ops/softmax_cross_entropy_with_logits.h"
#include "mantissa/ops/softmax_grad.h"
#include "mantissa/ops/swi_glu.h"

namespace mantissa::trainer {

namespace {

Status product(const TensorView& a, const TensorView& b, bool ta, bool tb, const TensorView& out) {
  MatmulParams p;
  p.transpose_self = ta;
  p.transpose_mat2 = tb;
  return matmul({.self = a, .mat2 = b, .out = out}, p);
}

TensorView f32_view(const float* data, std::initializer_list<int64_t> shape) {
  return TensorView(const_cast<float*>(data), DType::kFloat32,
                    std::span<const int64_t>(shape.begin(), shape.size()));
}

// An fp32 gradient handed to v as 16-bit `dtype`: rounded once (counting underflows) into v's
// gradient, or added to the one it has (fp32 addition, rounded once).
void give_rounded(Value& v, const Tensor& g32, DType dtype, Tensor* scratch,
                  UnderflowCount* count) {
  Tensor* t = v.has_grad ? scratch : &v.grad;
  t->ensure(dtype, g32.shape());
  narrow(g32.f32(), dtype, t->data(), g32.numel(), count);
  if (t == &v.grad) {
    v.has_grad = true;
  } else {
    std::vector<float> sum(static_cast<std::size_t>(g32.numel()));
    widen(v.grad.data(), dtype, sum.data(), g32.numel());
    accumulate(t->data(), dtype, sum.data(), g32.numel());
    narrow(sum.data(), dtype, v.grad.data(), g32.numel());
  }
}

}  // namespace

// ---- Embedding -------------------------------------------------------------------------------

Embedding::Embedding(std::string name, Parameter* wte, Parameter* wpe)
    : Layer(std::move(name)), wte_(wte), wpe_(wpe) {}

Status Embedding::forward(const Context& ctx, std::span<Value* const>,
                          std::span<Value* const> out) {
  const int64_t d = wte_->var.shape()[1], rows = ctx.rows();
  const float* te = wte_->weights_f32(&wte32_);
  const float* pe = wpe_->weights_f32(&wpe32_);
  Tensor& y = out[0]->data;
  y.ensure(DType::kFloat32, {rows, d});
  float* dst = y.f32();
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = te + static_cast<int64_t>(ctx.tokens[r]) * d;
    const float* b = pe + (r % ctx.context) * d;
    for (int64_t j = 0; j < d; ++j) dst[r * d + j] = a[j] + b[j];
  }
  return {};
}

Status Embedding::backward(const Context& ctx, std::span<Value* const>,
                           std::span<Value* const> out) {
  const int64_t d = wte_->var.shape()[1], rows = ctx.rows();
  dwte_.reset(DType::kFloat32, wte_->var.shape());
  dwpe_.reset(DType::kFloat32, wpe_->var.shape());
  if (out[0]->has_grad) {
    const float* g = out[0]->grad.f32();
    float* dt = dwte_.f32();
    float* dp = dwpe_.f32();
    for (int64_t r = 0; r < rows; ++r) {  // rows in order: a fixed summation order
      float* a = dt + static_cast<int64_t>(ctx.tokens[r]) * d;
      float* b = dp + (r % ctx.context) * d;
      for (int64_t j = 0; j < d; ++j) {
        a[j] += g[r * d + j];
        b[j] += g[r * d + j];
      }
    }
  }
  wte_->add_grad(dwte_.f32());
  wpe_->add_grad(dwpe_.f32());
  return {};
}

// ---- Linear ----------------------------------------------------------------------------------

Linear::Linear(std::string name, Parameter* weight, DType out_dtype, bool transposed,
               const GemmRecipe* recipe, uint64_t stream)
    : Layer(std::move(name)), w_(weight), out_dtype_(out_dtype), transposed_(transposed) {
  if (recipe != nullptr && recipe->format != GemmFormat::kNone && !transposed) {
    gemm_ = std::make_unique<LowpGemm>(this->name(), *recipe, stream);
  }
}

Linear::Linear(std::string name, Parameter* weight, Parameter* bias, DType out_dtype)
    : Layer(std::move(name)), w_(weight), b_(bias), out_dtype_(out_dtype), transposed_(false) {}

Status Linear::forward(const Context& ctx, std::span<Value* const> in,
                       std::span<Value* const> out) {
  const Tensor& x = in[0]->data;
  const Tensor& w = w_->weights();
  const int64_t n = transposed_ ? w.shape()[0] : w.shape()[1];
  Tensor& y = out[0]->data;
  y.ensure(out_dtype_, {x.shape()[0], n});
  if (gemm_) return gemm_->forward(ctx, x, w, y.view());
  if (b_ == nullptr) return product(x.view(), w.view(), false, transposed_, y.view());
  // b + x @ W in fp32 (Addmm, beta = alpha = 1), rounded once to out_dtype.
  cast(b_->weights(), DType::kFloat32, &b32_);
  Tensor* y32 = out_dtype_ == DType::kFloat32 ? &y : &y32_;
  y32->ensure(DType::kFloat32, y.shape());
  TRAINER_TRY(addmm({.self = b32_.view(), .mat1 = x.view(), .mat2 = w.view(), .out = y32->view()}));
  if (y32 != &y) narrow(y32->f32(), out_dtype_, y.data(), y.numel());
  return {};
}

Status Linear::backward(const Context& ctx, std::span<Value* const> in,
                        std::span<Value* const> out) {
  const Tensor& x = in[0]->data;
  const Tensor& w = w_->weights();
  const DType c = x.dtype();
  Value& y = *out[0];
  if (!y.has_grad) y.grad.reset(out_dtype_, y.data.shape());
  if (gemm_) {
    // dx and dW in fp32 from the quantized operands; dx rounded once to c.
    dx32_.ensure(DType::kFloat32, x.shape());
    float* first = w_->first_grad();
    dw32_.ensure(DType::kFloat32, w.shape());
    const TensorView dw =
        first != nullptr ? TensorView(first, DType::kFloat32, w.shape()) : dw32_.view();
    TRAINER_TRY(gemm_->backward(ctx, x, w, y.grad, dx32_.view(), dw));
    if (first == nullptr) w_->add_grad(dw32_.f32());
    if (c == DType::kFloat32) {
      give_grad(*in[0], dx32_);
    } else {
      give_rounded(*in[0], dx32_, c, &scratch_, ctx.underflow);
    }
    return {};
  }
  // The gradient of y as the products read it: c.
  const Tensor* dy = &y.grad;
  if (y.grad.dtype() != c) {
    cast(y.grad, c, &dy_, ctx.underflow);
    dy = &dy_;
  }
  // dx = dy @ W^T (or dy @ W), in fp32, rounded once to c.
  if (!in[0]->needs_grad) {
  } else if (c == DType::kFloat32) {
    Tensor* dx = grad_target(*in[0], &scratch_, c, x.shape());
    TRAINER_TRY(product(dy->view(), w.view(), false, !transposed_, dx->view()));
    if (ctx.underflow != nullptr && ctx.underflow->fp32_values) ctx.underflow->values += x.numel();
    give_grad_from(*in[0], dx);
  } else {
    dx32_.ensure(DType::kFloat32, x.shape());
    TRAINER_TRY(product(dy->view(), w.view(), false, !transposed_, dx32_.view()));
    give_rounded(*in[0], dx32_, c, &scratch_, ctx.underflow);
  }
  if (b_ != nullptr) {
    // db: the column sums of dy in fp32, each in fp64 in row order (the rows side by side).
    const int64_t rows = x.shape()[0], n = b_->var.numel();
    cast(*dy, DType::kFloat32, &scratch_);
    sums_.assign(static_cast<std::size_t>(n), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      const float* g = scratch_.f32() + r * n;
      for (int64_t j = 0; j < n; ++j) sums_[j] += g[j];
    }
    b32_.ensure(DType::kFloat32, {n});
    for (int64_t j = 0; j < n; ++j) b32_.f32()[j] = static_cast<float>(sums_[j]);
    b_->add_grad(b32_.f32(), ctx.underflow);
  }
  // dW = x^T @ dy (W [in, out]) or dy^T @ x (W [out, in]).
  // Written straight into the parameter's fp32 gradient when this is its first contribution.
  float* first = w_->first_grad();
  dw32_.ensure(DType::kFloat32, w.shape());
  const TensorView dw =
      first != nullptr ? TensorView(first, DType::kFloat32, w.shape()) : dw32_.view();
  if (transposed_) {
    TRAINER_TRY(product(dy->view(), x.view(), true, false, dw));
  } else {
    TRAINER_TRY(product(x.view(), dy->view(), true, false, dw));
  }
  if (first == nullptr) w_->add_grad(dw32_.f32(), ctx.underflow);
  return {};
}

// ---- LayerNorm -------------------------------------------------------------------------------

LayerNormLayer::LayerNormLayer(std::string name, Parameter* weight, Parameter* bias, DType compute,
                               NormForm form)
    : Layer(std::move(name)), w_(weight), b_(bias), compute_(compute), form_(form) {}

Status LayerNormLayer::forward_compute(std::span<Value* const> in, std::span<Value* const> out) {
  const Tensor& x = in[0]->data;
  const int64_t rows = x.shape()[0], d = x.shape()[1];
  Tensor& y = out[0]->data;
  y.ensure(compute_, {rows, d});
  mean_.ensure(DType::kFloat32, {rows, 1});
  rstd_.ensure(DType::kFloat32, {rows, 1});
  return layer_norm({.input = x.view(),
                     .weight = w_->weights().view(),
                     .bias = b_->weights().view(),
                     .out = y.view(),
                     .mean = mean_.view(),
                     .rstd = rstd_.view()},
                    {.normalized_shape = Dims{d}, .eps = 1e-5});
}

Status LayerNormLayer::backward_compute(std::span<Value* const> in, std::span<Value* const> out) {
  const Tensor& x = in[0]->data;
  const int64_t d = x.shape()[1];
  Value& y = *out[0];
  if (!y.has_grad) y.grad.reset(compute_, y.data.shape());
  Tensor* dx = grad_target(*in[0], &dx_, compute_, x.shape());
  TRAINER_TRY(layer_norm_grad({.dy = y.grad.view(),
                               .input = x.view(),
                               .mean = mean_.view(),
                               .rstd = rstd_.view(),
                               .weight = w_->weights().view(),
                               .bias = std::nullopt,
                               .dx = dx->view(),
                               .dweight = w_->grad.view(),
                               .dbias = b_->grad.view()},
                              {.normalized_shape = Dims{d}}));
  give_grad_from(*in[0], dx);
  return {};
}

Status LayerNormLayer::forward(const Context&, std::span<Value* const> in,
                               std::span<Value* const> out) {
  if (form_ == NormForm::kCompute) return forward_compute(in, out);
  const Tensor& x = in[0]->data;
  const int64_t rows = x.shape()[0], d = x.shape()[1];
  const float* w = w_->weights_f32(&w32_);
  const float* b = b_->weights_f32(&b32_);
  Tensor& y = out[0]->data;
  y.ensure(compute_, {rows, d});
  Tensor* y32 = compute_ == DType::kFloat32 ? &y : &y32_;
  y32->ensure(DType::kFloat32, {rows, d});
  mean_.ensure(DType::kFloat32, {rows});
  rstd_.ensure(DType::kFloat32, {rows});
  LayerNormTensors t{.input = x.view(),
                     .weight = f32_view(w, {d}),
                     .bias = f32_view(b, {d}),
                     .out = y32->view(),
                     .mean = mean_.view(),
                     .rstd = rstd_.view()};
  LayerNormParams p;
  p.normalized_shape = {d};
  p.eps = 1e-5;
  TRAINER_TRY(layer_norm(t, p));
  if (y32 != &y) narrow(y32->f32(), compute_, y.data(), y.numel());
  return {};
}

Status LayerNormLayer::backward(const Context&, std::span<Value* const> in,
                                std::span<Value* const> out) {
  if (form_ == NormForm::kCompute) return backward_compute(in, out);
  const Tensor& x = in[0]->data;
  const int64_t d = x.shape()[1];
  Value& y = *out[0];
  if (!y.has_grad) y.grad.reset(compute_, y.data.shape());
  cast(y.grad, DType::kFloat32, &dy32_);
  const float* w = w_->weights_f32(&w32_);
  dx_.ensure(DType::kFloat32, x.shape());
  dw_.ensure(DType::kFloat32, {d});
  db_.ensure(DType::kFloat32, {d});
  LayerNormGradTensors t{.dy = dy32_.view(),
                         .input = x.view(),
                         .mean = mean_.view(),
                         .rstd = rstd_.view(),
                         .weight = f32_view(w, {d}),
                         .bias = std::nullopt,
                         .dx = dx_.view(),
                         .dweight = dw_.view(),
                         .dbias = db_.view()};
  LayerNormGradParams p;
  p.normalized_shape = {d};
  TRAINER_TRY(layer_norm_grad(t, p));
  give_grad(*in[0], dx_);
  w_->add_grad(dw_.f32());
  b_->add_grad(db_.f32());
  return {};
}

// ---- RmsNorm and AddRmsNorm ------------------------------------------------------------------

RmsNormLayer::RmsNormLayer(std::string name, Parameter* gamma, DType compute, bool add)
    : Layer(std::move(name)), g_(gamma), compute_(compute), add_(add) {}

Status RmsNormLayer::forward(const Context&, std::span<Value* const> in,
                             std::span<Value* const> out) {
  const Tensor& a = in[0]->data;
  const int64_t rows = a.shape()[0], d = a.shape()[1];
  const float* g = g_->weights_f32(&g32_);
  Tensor& y = out[add_ ? 1 : 0]->data;
  y.ensure(compute_, {rows, d});
  Tensor* y32 = compute_ == DType::kFloat32 ? &y : &y32_;
  y32->ensure(DType::kFloat32, {rows, d});
  rstd_.ensure(DType::kFloat32, {rows});
  if (add_) {
    Tensor& sum = out[0]->data;
    sum.ensure(DType::kFloat32, {rows, d});
    AddRmsNormTensors t{.x1 = a.view(),
                        .x2 = in[1]->data.view(),
                        .gamma = f32_view(g, {d}),
                        .y = y32->view(),
                        .rstd = rstd_.view(),
                        .x = sum.view()};
    TRAINER_TRY(add_rms_norm(t, {.epsilon = 1e-6}));
  } else {
    RmsNormTensors t{
        .x = a.view(), .gamma = f32_view(g, {d}), .y = y32->view(), .rstd = rstd_.view()};
    TRAINER_TRY(rms_norm(t, {.epsilon = 1e-6}));
  }
  if (y32 != &y) narrow(y32->f32(), compute_, y.data(), y.numel());
  return {};
}

Status RmsNormLayer::backward(const Context&, std::span<Value* const> in,
                              std::span<Value* const> out) {
  const Tensor& x = add_ ? out[0]->data : in[0]->data;
  const int64_t d = x.shape()[1];
  Value& y = *out[add_ ? 1 : 0];
  if (!y.has_grad) y.grad.reset(compute_, y.data.shape());
  cast(y.grad, DType::kFloat32, &dy32_);
  const float* g = g_->weights_f32(&g32_);
  dx_.ensure(DType::kFloat32, x.shape());
  dg_.ensure(DType::kFloat32, {d});
  RmsNormGradTensors t{.dy = dy32_.view(),
                       .x = x.view(),
                       .rstd = rstd_.view(),
                       .gamma = f32_view(g, {d}),
                       .dx = dx_.view(),
                       .dgamma = dg_.view()};
  TRAINER_TRY(rms_norm_grad(t, {}));
  g_->add_grad(dg_.f32());
  if (add_) {
    // The sum's gradient: what its readers gave (in the graph's order), plus the norm's.
    if (out[0]->has_grad) {
      const float* s = out[0]->grad.f32();
      float* dx = dx_.f32();
      add(s, dx, dx, dx_.numel());
    }
    give_grad(*in[0], dx_);
    give_grad(*in[1], dx_);
  } else {
    give_grad(*in[0], dx_);
  }
  return {};
}

// ---- Add -------------------------------------------------------------------------------------

Status Add::forward(const Context&, std::span<Value* const> in, std::span<Value* const> out) {
  const Tensor& a = in[0]->data;
  const Tensor& b = in[1]->data;
  Tensor& y = out[0]->data;
  y.ensure(DType::kFloat32, a.shape());
  add(a.f32(), b.f32(), y.f32(), a.numel());
  return {};
}

Status Add::backward(const Context&, std::span<Value* const> in, std::span<Value* const> out) {
  if (!out[0]->has_grad) return {};
  give_grad(*in[0], out[0]->grad);
  give_grad(*in[1], out[0]->grad);
  return {};
}

// ---- Attention -------------------------------------------------------------------------------

Attention::Attention(std::string name, int64_t heads, DType compute)
    : Layer(std::move(name)), heads_(heads), compute_(compute) {}

namespace {

// The strided view of one of q, k, v (part 0, 1, 2) of qkv [B*T, 3d] as [B, H, T, dh].
TensorView head_view(const Tensor& qkv, int part, int64_t B, int64_t T, int64_t H) {
  const int64_t d3 = qkv.shape()[1], d = d3 / 3, dh = d / H;
  const std::size_t es = dtype_size(qkv.dtype());
  auto* base = static_cast<unsigned char*>(const_cast<void*>(qkv.data())) + part * d * es;
  const int64_t shape[4] = {B, H, T, dh};
  const int64_t strides[4] = {T * d3, dh, d3, 1};
  return TensorView(base, qkv.dtype(), shape, strides);
}

// dst[B*T, width] columns [offset + h*dh, ...) <- src [B, H, T, dh] (contiguous), or back.
void heads_to_rows(const Tensor& src, Tensor* dst, int64_t offset, int64_t B, int64_t T, int64_t H,
                   int64_t dh) {
  const int64_t width = dst->shape()[1];
  const std::size_t es = dtype_size(src.dtype());
  const auto* s = static_cast<const unsigned char*>(src.data());
  auto* t = static_cast<unsigned char*>(dst->data());
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < T; ++i) {
        std::memcpy(t + ((b * T + i) * width + offset + h * dh) * es,
                    s + (((b * H + h) * T + i) * dh) * es, dh * es);
      }
    }
  }
}

}  // namespace

Status Attention::forward(const Context& ctx, std::span<Value* const> in,
                          std::span<Value* const> out) {
  const Tensor& qkv = in[0]->data;
  const int64_t B = ctx.batch, T = ctx.context, H = heads_;
  const int64_t d = qkv.shape()[1] / 3, dh = d / H;
  // The probabilities are the layer's second output, in c (in fp32 mode the fp32 ones themselves).
  Tensor& probs = out[1]->data;
  Tensor& p32 = compute_ == DType::kFloat32 ? probs : p32_own_;
  p32.ensure(DType::kFloat32, {B, H, T, T});
  TRAINER_TRY(
      product(head_view(qkv, 0, B, T, H), head_view(qkv, 1, B, T, H), false, true, p32.view()));
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dh)));
  float* s = p32.f32();
  for (int64_t bh = 0; bh < B * H; ++bh) {
    for (int64_t i = 0; i < T; ++i) {
      float* row = s + (bh * T + i) * T;
      for (int64_t j = 0; j <= i; ++j) row[j] = row[j] * scale;
      for (int64_t j = i + 1; j < T; ++j) row[j] = -std::numeric_limits<float>::infinity();
    }
  }
  TRAINER_TRY(softmax({.self = p32.view(), .out = p32.view()}, {.dim = -1}));
  const Tensor* pc = &p32;
  if (compute_ != DType::kFloat32) {
    cast(p32, compute_, &probs);
    pc = &probs;
  }
  o_.ensure(compute_, {B, H, T, dh});
  TRAINER_TRY(product(pc->view(), head_view(qkv, 2, B, T, H), false, false, o_.view()));
  Tensor& y = out[0]->data;
  y.ensure(compute_, {B * T, d});
  heads_to_rows(o_, &y, 0, B, T, H, dh);
  return {};
}

Status Attention::backward(const Context& ctx, std::span<Value* const> in,
                           std::span<Value* const> out) {
  const Tensor& qkv = in[0]->data;
  const int64_t B = ctx.batch, T = ctx.context, H = heads_;
  const int64_t d = qkv.shape()[1] / 3, dh = d / H;
  Value& y = *out[0];
  if (!y.has_grad) y.grad.reset(compute_, y.data.shape());
  // dO as [B, H, T, dh], a strided view of the rows.
  const int64_t oshape[4] = {B, H, T, dh};
  const int64_t ostrides[4] = {T * d, dh, d, 1};
  const TensorView dO(y.grad.data(), compute_, oshape, ostrides);
  const Tensor& p32 = compute_ == DType::kFloat32 ? out[1]->data : p32_own_;
  const Tensor* pc = &out[1]->data;

  Tensor* dqkv = grad_target(*in[0], &dy_, compute_, {B * T, 3 * d});
  part32_.ensure(DType::kFloat32, {B, H, T, dh});
  auto store = [&](int part) {
    const Tensor* src = &part32_;
    if (compute_ != DType::kFloat32) {
      cast(part32_, compute_, &partc_, ctx.underflow);
      src = &partc_;
    }
    heads_to_rows(*src, dqkv, part * d, B, T, H, dh);
  };
  // dV = P^T dO
  TRAINER_TRY(product(pc->view(), dO, true, false, part32_.view()));
  store(2);
  // dP = dO V^T; dS = SoftmaxGrad(dP, P) * scale
  dp_.ensure(DType::kFloat32, {B, H, T, T});
  TRAINER_TRY(product(dO, head_view(qkv, 2, B, T, H), false, true, dp_.view()));
  ds_.ensure(DType::kFloat32, {B, H, T, T});
  TRAINER_TRY(
      softmax_grad({.grad_output = dp_.view(), .output = p32.view(), .out = ds_.view()}, {}));
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dh)));
  trainer::scale(ds_.f32(), scale, ds_.numel());
  const Tensor* dsc = &ds_;
  if (compute_ != DType::kFloat32) {
    cast(ds_, compute_, &dsc_, ctx.underflow);
    dsc = &dsc_;
  }
  // dQ = dS K, dK = dS^T Q
  TRAINER_TRY(product(dsc->view(), head_view(qkv, 1, B, T, H), false, false, part32_.view()));
  store(0);
  TRAINER_TRY(product(dsc->view(), head_view(qkv, 0, B, T, H), true, false, part32_.view()));
  store(1);
  give_grad_from(*in[0], dqkv);
  return {};
}

// ---- GELU and SwiGLU -------------------------------------------------------------------------

Status Gelu::forward(const Context&, std::span<Value* const> in, std::span<Value* const> out) {
  const Tensor& x = in[0]->data;
  out[0]->data.ensure(x.dtype(), x.shape());
  return gelu({.self = x.view(), .out = out[0]->data.view()});
}

Status Gelu::backward(const Context& ctx, std::span<Value* const> in, std::span<Value* const> out) {
  const Tensor& x = in[0]->data;
  Value& y = *out[0];
  if (!y.has_grad) y.grad.reset(x.dtype(), x.shape());
  if (fp32_grad_) {
    // Into fp32, then one rounding to c here (counted).
    dx32_.ensure(DType::kFloat32, x.shape());
    TRAINER_TRY(gelu_backward(
        {.grad_output = y.grad.view(), .self = x.view(), .grad_input = dx32_.view()}));
    Tensor* dx = grad_target(*in[0], &scratch_, x.dtype(), x.shape());
    narrow(dx32_.f32(), x.dtype(), dx->data(), x.numel(), ctx.underflow);
    give_grad_from(*in[0], dx);
    return {};
  }
  // The operator rounds its result once to c (its promoted dtype): written in place.
  Tensor* dx = grad_target(*in[0], &scratch_, x.dtype(), x.shape());
  TRAINER_TRY(
      gelu_backward({.grad_output = y.grad.view(), .self = x.view(), .grad_input = dx->view()}));
  give_grad_from(*in[0], dx);
  return {};
}

Status SwiGluLayer::forward(const Context&, std::span<Value* const> in,
                            std::span<Value* const> out) {
  const Tensor& x = in[0]->data;
  out[0]->data.ensure(x.dtype(), {x.shape()[0], x.shape()[1] / 2});
  return swi_glu({.x = x.view(), .out = out[0]->data.view()}, {.dim = -1});
}

Status SwiGluLayer::backward(const Context&, std::span<Value* const> in,
                             std::span<Value* const> out) {
  const Tensor& x = in[0]->data;
  Value& y = *out[0];
  if (!y.has_grad) y.grad.reset(x.dtype(), y.data.shape());
  Tensor* dx = grad_target(*in[0], &scratch_, x.dtype(), x.shape());
  TRAINER_TRY(
      swi_glu_grad({.y_grad = y.grad.view(), .x = x.view(), .out = dx->view()}, {.dim = -1}));
  give_grad_from(*in[0], dx);
  return {};
}

// ---- ReLU ------------------------------------------------------------------------------------

Status Relu::forward(const Context&, std::span<Value* const> in, std::span<Value* const> out) {
  const Tensor& x = in[0]->data;
  Tensor& y = out[0]->data;
  y.ensure(x.dtype(), x.shape());
  relu(x.data(), x.dtype(), y.data(), x.numel());
  return {};
}

Status Relu::backward(const Context&, std::span<Value* const> in, std::span<Value* const> out) {
  const Tensor& x = in[0]->data;
  Value& y = *out[0];
  if (!y.has_grad) y.grad.reset(x.dtype(), x.shape());
  Tensor* dx = grad_target(*in[0], &scratch_, x.dtype(), x.shape());
  relu_grad(x.data(), y.grad.data(), x.dtype(), dx->data(), x.numel());
  give_grad_from(*in[0], dx);
  return {};
}

// ---- Cross-entropy ---------------------------------------------------------------------------

Status SoftmaxCrossEntropy::forward(const Context& ctx, std::span<Value* const> in,
                                    std::span<Value* const> out) {
  const Tensor& logits = in[0]->data;
  const int64_t rows = logits.shape()[0], c = logits.shape()[1];
  cast(logits, DType::kFloat32, &logits32_);
  onehot_.reset(DType::kFloat32, {rows, c});
  for (int64_t r = 0; r < rows; ++r) onehot_.f32()[r * c + ctx.targets[r]] = 1.0f;
  out[0]->data.ensure(DType::kFloat32, {rows});
  backprop32_.ensure(DType::kFloat32, {rows, c});
  return softmax_cross_entropy_with_logits({.features = logits32_.view(),
                                            .labels = onehot_.view(),
                                            .loss = out[0]->data.view(),
                                            .backprop = backprop32_.view()});
}

Status SoftmaxCrossEntropy::backward(const Context& ctx, std::span<Value* const> in,
                                     std::span<Value* const>) {
  const int64_t rows = in[0]->data.shape()[0];
  const int64_t over = ctx.grad_rows > 0 ? ctx.grad_rows : rows;
  const float factor = static_cast<float>(static_cast<double>(ctx.loss_scale) / over);
  float* g = backprop32_.f32();
  for (int64_t i = 0; i < backprop32_.numel(); ++i) g[i] = g[i] * factor;
  Tensor* d = grad_target(*in[0], &scratch_, in[0]->data.dtype(), in[0]->data.shape());
  narrow(g, d->dtype(), d->data(), d->numel(), ctx.underflow);
  give_grad_from(*in[0], d);
  return {};
}

// ---- Cross-entropy over the vocabulary -------------------------------------------------------

Status CrossEntropy::forward(const Context& ctx, std::span<Value* const> in,
                             std::span<Value* const> out) {
  const Tensor& logits = in[0]->data;
  const int64_t rows = logits.shape()[0];
  Tensor& loss = out[0]->data;
  loss.ensure(DType::kFloat32, {1});
  log_prob_.ensure(DType::kFloat32, logits.shape());
  zloss_.ensure(DType::kFloat32, {1});
  lse_.ensure(DType::kFloat32, {rows});
  const int64_t tshape[1] = {rows};
  CrossEntropyLossTensors t{
      .input = logits.view(),
      .target = TensorView(const_cast<int32_t*>(ctx.targets), DType::kInt32, tshape),
      .weight = std::nullopt,
      .loss = loss.view(),
      .log_prob = log_prob_.view(),
      .zloss = zloss_.view(),
      .lse_for_zloss = lse_.view()};
  const uint64_t bytes = cross_entropy_loss_workspace_size(t);
  scratch_.ensure(DType::kFloat32, {static_cast<int64_t>((bytes + 3) / 4)});
  return cross_entropy_loss(t, {}, {.data = scratch_.data(), .size = bytes});
}

Status CrossEntropy::backward(const Context& ctx, std::span<Value* const> in,
                              std::span<Value* const>) {
  const int64_t rows = in[0]->data.shape()[0];
  // The gradient of loss * scale with the mean over grad_rows rows (this batch's by default): a
  // sum whose per-row weight is fp32(scale / rows), the same bits however the rows are sharded.
  const int64_t over = ctx.grad_rows > 0 ? ctx.grad_rows : rows;
  float g = static_cast<float>(static_cast<double>(ctx.loss_scale) / static_cast<double>(over));
  const int64_t tshape[1] = {rows};
  Tensor* d = grad_target(*in[0], &dlogits_, DType::kFloat32, in[0]->data.shape());
  CrossEntropyLossGradTensors t{
      .grad_loss = TensorView(&g, DType::kFloat32, {1}),
      .log_prob = log_prob_.view(),
      .target = TensorView(const_cast<int32_t*>(ctx.targets), DType::kInt32, tshape),
      .weight = std::nullopt,
      .grad_zloss = std::nullopt,
      .lse_for_zloss = std::nullopt,
      .out = d->view()};
  CrossEntropyLossGradParams p;
  p.reduction = LossReduction::kSum;
  const uint64_t bytes = cross_entropy_loss_grad_workspace_size(t, p);
  scratch_.ensure(DType::kFloat32, {static_cast<int64_t>((bytes + 3) / 4) + 1});
  TRAINER_TRY(cross_entropy_loss_grad(t, p, {.data = scratch_.data(), .size = bytes}));
  give_grad_from(*in[0], d);
  return {};
}

}  // namespace mantissa::trainer

// ---- The fp64 shadows ------------------------------------------------------------------------
// Plain loops in double; the weights as the forward pass reads them, widened exactly.

namespace mantissa::trainer {

namespace {

Shadow widened(const Tensor& t) {
  Shadow v(static_cast<std::size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = load_as_float(t.dtype(), t.data(), i);
  return v;
}

// x [rows, k] @ w [k, n] (or w^T with w [n, k])
void product64(const Shadow& x, const Shadow& w, int64_t rows, int64_t k, int64_t n,
               bool transposed, Shadow* y) {
  y->assign(static_cast<std::size_t>(rows * n), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double* out = y->data() + r * n;
    for (int64_t p = 0; p < k; ++p) {
      const double a = x[r * k + p];
      if (transposed) {
        for (int64_t j = 0; j < n; ++j) out[j] += a * w[j * k + p];
      } else {
        const double* row = w.data() + p * n;
        for (int64_t j = 0; j < n; ++j) out[j] += a * row[j];
      }
    }
  }
}

// The gradient a parameter's shadow accumulates into (created zero).
Shadow& param_grad(ShadowGrads* g, const Parameter* p) {
  Shadow& s = (*g)[p];
  if (s.empty()) s.assign(static_cast<std::size_t>(p->var.numel()), 0.0);
  return s;
}

// The backward of norm64 for rows of d values: adds dx to *dx and the weight's (and bias's)
// gradients to *dw (*db). xhat = (x - mean) rstd (LayerNorm) or x rstd (RMSNorm);
// dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), the first mean only when centred.
void norm64_backward(const Shadow& x, const Shadow& dy, int64_t d, bool centre, double eps,
                     const Shadow& w, Shadow* dx, Shadow* dw, Shadow* db) {
  const int64_t rows = static_cast<int64_t>(x.size()) / d;
  std::vector<double> xhat(static_cast<std::size_t>(d)), g(static_cast<std::size_t>(d));
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * d;
    const double* dyr = dy.data() + r * d;
    double mean = 0.0, sq = 0.0;
    if (centre) {
      for (int64_t j = 0; j < d; ++j) mean += row[j];
      mean /= static_cast<double>(d);
    }
    for (int64_t j = 0; j < d; ++j) sq += (row[j] - mean) * (row[j] - mean);
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
    double mg = 0.0, mgx = 0.0;
    for (int64_t j = 0; j < d; ++j) {
      xhat[j] = (row[j] - mean) * rstd;
      g[j] = dyr[j] * w[j];
      mg += g[j];
      mgx += g[j] * xhat[j];
      (*dw)[j] += dyr[j] * xhat[j];
      if (db != nullptr) (*db)[j] += dyr[j];
    }
    mg /= static_cast<double>(d);
    mgx /= static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j) {
      (*dx)[r * d + j] += rstd * (g[j] - (centre ? mg : 0.0) - xhat[j] * mgx);
    }
  }
}

// Normalises rows of d values: (x - mean) * rstd * w + b (LayerNorm) or x * rstd * w (RMSNorm).
void norm64(const Shadow& x, int64_t d, bool centre, double eps, const Shadow& w, const Shadow* b,
            Shadow* y) {
  const int64_t rows = static_cast<int64_t>(x.size()) / d;
  y->resize(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * d;
    double mean = 0.0, sq = 0.0;
    if (centre) {
      for (int64_t j = 0; j < d; ++j) mean += row[j];
      mean /= static_cast<double>(d);
    }
    for (int64_t j = 0; j < d; ++j) sq += (row[j] - mean) * (row[j] - mean);
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
    for (int64_t j = 0; j < d; ++j) {
      (*y)[r * d + j] = (row[j] - mean) * rstd * w[j] + (b != nullptr ? (*b)[j] : 0.0);
    }
  }
}

}  // namespace

void Embedding::shadow(const Context& ctx, std::span<const Shadow* const>,
                       std::span<Shadow* const> out) const {
  const int64_t d = wte_->var.shape()[1], rows = ctx.rows();
  const Shadow te = widened(wte_->var), pe = widened(wpe_->var);
  Shadow& y = *out[0];
  y.resize(static_cast<std::size_t>(rows * d));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < d; ++j) {
      y[r * d + j] = te[ctx.tokens[r] * d + j] + pe[(r % ctx.context) * d + j];
    }
  }
}

void Linear::shadow(const Context&, std::span<const Shadow* const> in,
                    std::span<Shadow* const> out) const {
  const Tensor& w = w_->weights();
  const int64_t k = transposed_ ? w.shape()[1] : w.shape()[0];
  const int64_t n = transposed_ ? w.shape()[0] : w.shape()[1];
  const int64_t rows = static_cast<int64_t>(in[0]->size()) / k;
  product64(*in[0], widened(w), rows, k, n, transposed_, out[0]);
  if (b_ == nullptr) return;
  const Shadow b = widened(b_->weights());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) (*out[0])[r * n + j] += b[j];
  }
}

void LayerNormLayer::shadow(const Context&, std::span<const Shadow* const> in,
                            std::span<Shadow* const> out) const {
  const Shadow w = widened(weights_read(w_)), b = widened(weights_read(b_));
  norm64(*in[0], static_cast<int64_t>(w.size()), true, 1e-5, w, &b, out[0]);
}

void RmsNormLayer::shadow(const Context&, std::span<const Shadow* const> in,
                          std::span<Shadow* const> out) const {
  const Shadow g = widened(g_->var);
  const int64_t d = static_cast<int64_t>(g.size());
  if (!add_) {
    norm64(*in[0], d, false, 1e-6, g, nullptr, out[0]);
    return;
  }
  Shadow& sum = *out[0];
  sum.resize(in[0]->size());
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = (*in[0])[i] + (*in[1])[i];
  norm64(sum, d, false, 1e-6, g, nullptr, out[1]);
}

void Add::shadow(const Context&, std::span<const Shadow* const> in,
                 std::span<Shadow* const> out) const {
  Shadow& y = *out[0];
  y.resize(in[0]->size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = (*in[0])[i] + (*in[1])[i];
}

void Attention::shadow(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<Shadow* const> out) const {
  const Shadow& qkv = *in[0];
  const int64_t B = ctx.batch, T = ctx.context, H = heads_;
  const int64_t d = static_cast<int64_t>(qkv.size()) / (B * T * 3), dh = d / H;
  Shadow& y = *out[0];
  Shadow& p = *out[1];
  y.assign(static_cast<std::size_t>(B * T * d), 0.0);
  p.assign(static_cast<std::size_t>(B * H * T * T), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < T; ++i) {
        double* row = p.data() + ((b * H + h) * T + i) * T;
        const double* q = qkv.data() + (b * T + i) * 3 * d + h * dh;
        double mx = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j <= i; ++j) {
          const double* kj = qkv.data() + (b * T + j) * 3 * d + d + h * dh;
          double dot = 0.0;
          for (int64_t e = 0; e < dh; ++e) dot += q[e] * kj[e];
          row[j] = dot * scale;
          mx = std::max(mx, row[j]);
        }
        for (int64_t j = 0; j <= i; ++j) sum += (row[j] = std::exp(row[j] - mx));
        double* o = y.data() + (b * T + i) * d + h * dh;
        for (int64_t j = 0; j <= i; ++j) {
          row[j] /= sum;
          const double* vj = qkv.data() + (b * T + j) * 3 * d + 2 * d + h * dh;
          for (int64_t e = 0; e < dh; ++e) o[e] += row[j] * vj[e];
        }
      }
    }
  }
}

void Relu::shadow(const Context&, std::span<const Shadow* const> in,
                  std::span<Shadow* const> out) const {
  Shadow& y = *out[0];
  y.resize(in[0]->size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = (*in[0])[i] > 0.0 ? (*in[0])[i] : 0.0;
}

void SoftmaxCrossEntropy::shadow(const Context& ctx, std::span<const Shadow* const> in,
                                 std::span<Shadow* const> out) const {
  const int64_t rows = ctx.rows(), c = static_cast<int64_t>(in[0]->size()) / rows;
  out[0]->assign(static_cast<std::size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* z = in[0]->data() + r * c;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < c; ++j) mx = std::max(mx, z[j]);
    for (int64_t j = 0; j < c; ++j) sum += std::exp(z[j] - mx);
    (*out[0])[r] = mx + std::log(sum) - z[ctx.targets[r]];
  }
}

void Gelu::shadow(const Context&, std::span<const Shadow* const> in,
                  std::span<Shadow* const> out) const {
  Shadow& y = *out[0];
  y.resize(in[0]->size());
  const double c = std::sqrt(2.0 / std::numbers::pi);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double x = (*in[0])[i];
    y[i] = 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
  }
}

void SwiGluLayer::shadow(const Context& ctx, std::span<const Shadow* const> in,
                         std::span<Shadow* const> out) const {
  const int64_t rows = ctx.rows(), h = static_cast<int64_t>(in[0]->size()) / rows / 2;
  Shadow& y = *out[0];
  y.resize(static_cast<std::size_t>(rows * h));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < h; ++j) {
      const double a = (*in[0])[r * 2 * h + j], b = (*in[0])[r * 2 * h + h + j];
      y[r * h + j] = a / (1.0 + std::exp(-a)) * b;
    }
  }
}

void CrossEntropy::shadow(const Context& ctx, std::span<const Shadow* const> in,
                          std::span<Shadow* const> out) const {
  const int64_t rows = ctx.rows(), v = static_cast<int64_t>(in[0]->size()) / rows;
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const double* z = in[0]->data() + r * v;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < v; ++j) mx = std::max(mx, z[j]);
    for (int64_t j = 0; j < v; ++j) sum += std::exp(z[j] - mx);
    total += mx + std::log(sum) - z[ctx.targets[r]];
  }
  out[0]->assign(1, total / static_cast<double>(rows));
}

// ---- The backward shadows ---------------------------------------------------------------------

void Embedding::shadow_backward(const Context& ctx, std::span<const Shadow* const>,
                                std::span<const Shadow* const> dout, std::span<Shadow* const>,
                                ShadowGrads* dparams) const {
  const Shadow& dy = *dout[0];
  if (dy.empty()) return;
  const int64_t d = wte_->var.shape()[1], rows = ctx.rows();
  Shadow& dte = param_grad(dparams, wte_);
  Shadow& dpe = param_grad(dparams, wpe_);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < d; ++j) {
      dte[ctx.tokens[r] * d + j] += dy[r * d + j];
      dpe[(r % ctx.context) * d + j] += dy[r * d + j];
    }
  }
}

void Linear::shadow_backward(const Context&, std::span<const Shadow* const> in,
                             std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                             ShadowGrads* dparams) const {
  const Shadow& dy = *dout[0];
  if (dy.empty()) return;
  const Tensor& wt = w_->weights();
  const Shadow w = widened(wt);
  const int64_t k = transposed_ ? wt.shape()[1] : wt.shape()[0];
  const int64_t n = transposed_ ? wt.shape()[0] : wt.shape()[1];
  const Shadow& x = *in[0];
  const int64_t rows = static_cast<int64_t>(x.size()) / k;
  Shadow& dx = *din[0];
  Shadow& dw = param_grad(dparams, w_);
  for (int64_t r = 0; r < rows; ++r) {
    const double* dyr = dy.data() + r * n;
    const double* xr = x.data() + r * k;
    for (int64_t p = 0; p < k; ++p) {
      double acc = 0.0;
      for (int64_t j = 0; j < n; ++j) acc += dyr[j] * (transposed_ ? w[j * k + p] : w[p * n + j]);
      dx[r * k + p] += acc;
      for (int64_t j = 0; j < n; ++j) {
        (transposed_ ? dw[j * k + p] : dw[p * n + j]) += xr[p] * dyr[j];
      }
    }
  }
  if (b_ == nullptr) return;
  Shadow& db = param_grad(dparams, b_);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) db[j] += dy[r * n + j];
  }
}

void LayerNormLayer::shadow_backward(const Context&, std::span<const Shadow* const> in,
                                     std::span<const Shadow* const> dout,
                                     std::span<Shadow* const> din, ShadowGrads* dparams) const {
  if (dout[0]->empty()) return;
  const Shadow w = widened(weights_read(w_));
  norm64_backward(*in[0], *dout[0], static_cast<int64_t>(w.size()), true, 1e-5, w, din[0],
                  &param_grad(dparams, w_), &param_grad(dparams, b_));
}

void RmsNormLayer::shadow_backward(const Context&, std::span<const Shadow* const> in,
                                   std::span<const Shadow* const> dout,
                                   std::span<Shadow* const> din, ShadowGrads* dparams) const {
  const Shadow g = widened(g_->var);
  const int64_t d = static_cast<int64_t>(g.size());
  if (!add_) {
    if (dout[0]->empty()) return;
    norm64_backward(*in[0], *dout[0], d, false, 1e-6, g, din[0], &param_grad(dparams, g_), nullptr);
    return;
  }
  // Outputs: the sum (the residual stream) and its norm. The sum's gradient is its readers'
  // plus the norm's; both inputs receive it.
  Shadow sum(in[0]->size()), dsum(in[0]->size(), 0.0);
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = (*in[0])[i] + (*in[1])[i];
  if (!dout[1]->empty()) {
    norm64_backward(sum, *dout[1], d, false, 1e-6, g, &dsum, &param_grad(dparams, g_), nullptr);
  }
  if (!dout[0]->empty()) {
    for (std::size_t i = 0; i < dsum.size(); ++i) dsum[i] += (*dout[0])[i];
  }
  for (std::size_t i = 0; i < dsum.size(); ++i) {
    (*din[0])[i] += dsum[i];
    (*din[1])[i] += dsum[i];
  }
}

void Add::shadow_backward(const Context&, std::span<const Shadow* const>,
                          std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                          ShadowGrads*) const {
  if (dout[0]->empty()) return;
  for (std::size_t i = 0; i < dout[0]->size(); ++i) {
    (*din[0])[i] += (*dout[0])[i];
    (*din[1])[i] += (*dout[0])[i];
  }
}

void Attention::shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                                std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                                ShadowGrads*) const {
  // Probabilities recomputed in fp64 from the input (as shadow() does); the gradient of the
  // probabilities output (read by no layer) is taken as given when present.
  const Shadow& qkv = *in[0];
  const Shadow& dy = *dout[0];
  const Shadow& dprobs = *dout[1];
  if (dy.empty() && dprobs.empty()) return;
  const int64_t B = ctx.batch, T = ctx.context, H = heads_;
  const int64_t d = static_cast<int64_t>(qkv.size()) / (B * T * 3), dh = d / H;
  Shadow& dqkv = *din[0];
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  std::vector<double> p(static_cast<std::size_t>(T)), dp(static_cast<std::size_t>(T));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < T; ++i) {
        const double* q = qkv.data() + (b * T + i) * 3 * d + h * dh;
        double mx = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j <= i; ++j) {
          const double* kj = qkv.data() + (b * T + j) * 3 * d + d + h * dh;
          double dot = 0.0;
          for (int64_t e = 0; e < dh; ++e) dot += q[e] * kj[e];
          p[j] = dot * scale;
          mx = std::max(mx, p[j]);
        }
        for (int64_t j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - mx));
        for (int64_t j = 0; j <= i; ++j) p[j] /= sum;
        // dp = dy . v (+ the probabilities' own gradient); dv += p dy.
        const double* dyi = dy.empty() ? nullptr : dy.data() + (b * T + i) * d + h * dh;
        double pdp = 0.0;
        for (int64_t j = 0; j <= i; ++j) {
          double g = dprobs.empty() ? 0.0 : dprobs[((b * H + h) * T + i) * T + j];
          if (dyi != nullptr) {
            const double* vj = qkv.data() + (b * T + j) * 3 * d + 2 * d + h * dh;
            double* dvj = dqkv.data() + (b * T + j) * 3 * d + 2 * d + h * dh;
            for (int64_t e = 0; e < dh; ++e) {
              g += dyi[e] * vj[e];
              dvj[e] += p[j] * dyi[e];
            }
          }
          dp[j] = g;
          pdp += p[j] * g;
        }
        // ds = p (dp - sum p dp); dq += ds k scale, dk += ds q scale.
        double* dq = dqkv.data() + (b * T + i) * 3 * d + h * dh;
        for (int64_t j = 0; j <= i; ++j) {
          const double ds = p[j] * (dp[j] - pdp) * scale;
          const double* kj = qkv.data() + (b * T + j) * 3 * d + d + h * dh;
          double* dk = dqkv.data() + (b * T + j) * 3 * d + d + h * dh;
          for (int64_t e = 0; e < dh; ++e) {
            dq[e] += ds * kj[e];
            dk[e] += ds * q[e];
          }
        }
      }
    }
  }
}

void Gelu::shadow_backward(const Context&, std::span<const Shadow* const> in,
                           std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                           ShadowGrads*) const {
  if (dout[0]->empty()) return;
  const double c = std::sqrt(2.0 / std::numbers::pi);
  for (std::size_t i = 0; i < in[0]->size(); ++i) {
    const double x = (*in[0])[i];
    const double t = std::tanh(c * (x + 0.044715 * x * x * x));
    const double dg = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x);
    (*din[0])[i] += (*dout[0])[i] * dg;
  }
}

void SwiGluLayer::shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                                  std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                                  ShadowGrads*) const {
  if (dout[0]->empty()) return;
  const int64_t rows = ctx.rows(), h = static_cast<int64_t>(in[0]->size()) / rows / 2;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < h; ++j) {
      const double a = (*in[0])[r * 2 * h + j], b = (*in[0])[r * 2 * h + h + j];
      const double sig = 1.0 / (1.0 + std::exp(-a)), dy = (*dout[0])[r * h + j];
      (*din[0])[r * 2 * h + j] += dy * b * sig * (1.0 + a * (1.0 - sig));
      (*din[0])[r * 2 * h + h + j] += dy * a * sig;
    }
  }
}

void CrossEntropy::shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                                   std::span<const Shadow* const> dout,
                                   std::span<Shadow* const> din, ShadowGrads*) const {
  if (dout[0]->empty()) return;
  // The mean over the rows (grad_rows when set): dz = (softmax(z) - onehot) dloss / rows.
  const int64_t rows = ctx.rows(), v = static_cast<int64_t>(in[0]->size()) / rows;
  const double g = (*dout[0])[0] / static_cast<double>(ctx.grad_rows > 0 ? ctx.grad_rows : rows);
  for (int64_t r = 0; r < rows; ++r) {
    const double* z = in[0]->data() + r * v;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < v; ++j) mx = std::max(mx, z[j]);
    for (int64_t j = 0; j < v; ++j) sum += std::exp(z[j] - mx);
    for (int64_t j = 0; j < v; ++j) {
      const double pj = std::exp(z[j] - mx) / sum;
      (*din[0])[r * v + j] += (pj - (j == ctx.targets[r] ? 1.0 : 0.0)) * g;
    }
  }
}

void Relu::shadow_backward(const Context&, std::span<const Shadow* const> in,
                           std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                           ShadowGrads*) const {
  if (dout[0]->empty()) return;
  for (std::size_t i = 0; i < in[0]->size(); ++i) {
    if ((*in[0])[i] > 0.0) (*din[0])[i] += (*dout[0])[i];
  }
}

// dout is the gradient of the mean loss (the graph's seed, loss_scale): each row's share is
// dout / rows (grad_rows when set).
void SoftmaxCrossEntropy::shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                                          std::span<const Shadow* const> dout,
                                          std::span<Shadow* const> din, ShadowGrads*) const {
  if (dout[0]->empty()) return;
  const int64_t rows = ctx.rows(), c = static_cast<int64_t>(in[0]->size()) / rows;
  const double g = (*dout[0])[0] / static_cast<double>(ctx.grad_rows > 0 ? ctx.grad_rows : rows);
  for (int64_t r = 0; r < rows; ++r) {
    const double* z = in[0]->data() + r * c;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < c; ++j) mx = std::max(mx, z[j]);
    for (int64_t j = 0; j < c; ++j) sum += std::exp(z[j] - mx);
    for (int64_t j = 0; j < c; ++j) {
      const double pj = std::exp(z[j] - mx) / sum;
      (*din[0])[r * c + j] += (pj - (j == ctx.targets[r] ? 1.0 : 0.0)) * g;
    }
  }
}

}  // namespace mantissa::trainer
