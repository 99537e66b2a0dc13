// The MLP as a layer graph (see model.h): the trainer's shared layers (trainer/layers.h), each
// wrapped in its precision by PolicyStep, and the loss.
#include "trainer/mlp/model.h"

#include <cmath>
#include <cstdio>
#include <utility>

#include "mantissa/convert.h"
#include "trainer/layers.h"
#include "trainer/mlp/common.h"
#include "trainer/mlp/rng.h"

namespace mantissa::train::detail {

Precision precision_of(Mode mode) {
  constexpr DType kF16 = DType::kFloat16, kBf16 = DType::kBFloat16;
  Precision p;
  switch (mode) {
    case Mode::kFp32: break;
    case Mode::kFp16Amp: p.compute = kF16, p.master = true, p.loss_scaling = true; break;
    case Mode::kBf16Amp: p.compute = kBf16, p.master = true; break;
    case Mode::kBf16Pure: p.compute = kBf16; break;
    case Mode::kBf16Kahan: p.compute = kBf16, p.rounding = WeightRounding::kKahan; break;
    case Mode::kBf16Sr: p.compute = kBf16, p.rounding = WeightRounding::kStochastic; break;
    case Mode::kFp16NoScale: p.compute = kF16, p.master = true; break;
  }
  return p;
}

// ---- One layer under its precision ----------------------------------------------------------

// Wraps one of the trainer's layers in a per-layer precision:
// - its input is cast to the layer's compute dtype when it arrives in another (exactly when
//   widening, else rounded once), or passed through an input transform (inference sensitivity:
//   widened to fp32, transformed, rounded back);
// - the input its backward pass reads is kept in the stored dtype when that differs (rounded
//   once, restored to the compute dtype for backward);
// - the gradient of its output is cast to the compute dtype when it arrives in the next layer's.
// None of these casts is counted as a gradient rounding. With the precision modes (every layer
// alike, stored = compute) the wrapper passes everything through.
class PolicyStep final : public trainer::Layer {
 public:
  PolicyStep(std::unique_ptr<trainer::Layer> inner, DType compute, DType stored)
      : trainer::Layer(inner->name()),
        inner_(std::move(inner)),
        compute_(compute),
        stored_(stored) {}

  Mlp::InputTransform transform;
  bool keep_trace = false;
  Buffer grad_input;  // with keep_trace: the gradient of the layer's input (compute dtype)

  Status forward(const trainer::Context& ctx, std::span<trainer::Value* const> in,
                 std::span<trainer::Value* const> out) override {
    trainer::Value* x = in[0];
    cast_in_ = x->data.dtype() != compute_ || static_cast<bool>(transform);
    if (cast_in_) {
      trainer::cast(x->data, compute_, &proxy_.data);
      if (transform) {
        const int64_t rows = x->data.shape()[0], cols = x->data.shape()[1];
        trainer::cast(proxy_.data, DType::kFloat32, &wide_);
        transform(wide_.f32(), rows, cols);
        trainer::narrow(wide_.f32(), compute_, proxy_.data.data(), rows * cols);
      }
      proxy_.needs_grad = x->needs_grad;
      x = &proxy_;
    }
    if (stored_ != compute_) trainer::cast(x->data, stored_, &saved_);
    trainer::Value* const ins[] = {x};
    return inner_->forward(ctx, ins, out);
  }

  Status backward(const trainer::Context& ctx, std::span<trainer::Value* const> in,
                  std::span<trainer::Value* const> out) override {
    trainer::Value& y = *out[0];
    if (y.has_grad && y.grad.dtype() != compute_) {
      trainer::cast(y.grad, compute_, &dy_);
      std::swap(y.grad, dy_);
    }
    trainer::Value* x = cast_in_ ? &proxy_ : in[0];
    if (cast_in_) proxy_.has_grad = false;
    if (stored_ != compute_) {
      trainer::cast(saved_, compute_, &restored_);
      std::swap(x->data, restored_);
    }
    trainer::Value* const ins[] = {x};
    const Status st = inner_->backward(ctx, ins, out);
    if (stored_ != compute_) std::swap(x->data, restored_);
    TRAINER_TRY(st);
    if (keep_trace && x->has_grad) grad_input = x->grad;
    if (cast_in_ && proxy_.has_grad) give_grad(*in[0], proxy_.grad);
    return {};
  }

  void shadow(const trainer::Context& ctx, std::span<const trainer::Shadow* const> in,
              std::span<trainer::Shadow* const> out) const override {
    inner_->shadow(ctx, in, out);
  }
  void shadow_backward(const trainer::Context& ctx, std::span<const trainer::Shadow* const> in,
                       std::span<const trainer::Shadow* const> dout,
                       std::span<trainer::Shadow* const> din,
                       trainer::ShadowGrads* dparams) const override {
    inner_->shadow_backward(ctx, in, dout, din, dparams);
  }

 private:
  std::unique_ptr<trainer::Layer> inner_;
  DType compute_, stored_;
  bool cast_in_ = false;
  trainer::Value proxy_;  // the cast input, when the layer reads one
  Buffer wide_, saved_, restored_, dy_;
};

// ---- Mlp ------------------------------------------------------------------------------------

Mlp::Mlp(std::span<const int64_t> widths, Activation activation, Precision precision,
         Optimizer optimizer, uint64_t seed)
    : precision_(std::move(precision)) {
  Rng rng(stream_seed(seed, 4));
  auto add_param = [&](std::string name, std::vector<int64_t> shape, float lo, float hi,
                       bool uniform) {
    const LayerPrecision lp = precision_.layer(specs_.size());
    const DType var_dtype = lp.master ? DType::kFloat32 : lp.compute;
    Parameter p;
    p.rounding = lp.rounding;
    p.name = std::move(name);
    p.var.reset(var_dtype, shape);
    for (int64_t i = 0; i < p.var.numel(); ++i) {
      const float f = uniform ? static_cast<float>(lo + (hi - lo) * rng.uniform()) : lo;
      store_from_float(var_dtype, p.var.data(), i, f);
    }
    if (lp.master && lp.compute != DType::kFloat32) {
      p.working.reset(lp.compute, shape);
      trainer::narrow(p.var.f32(), lp.compute, p.working.data(), p.var.numel());
    }
    p.grad.reset(lp.compute, shape);
    p.m.reset(var_dtype, shape);
    p.v.reset(var_dtype, shape);
    if (optimizer == Optimizer::kSgd) {  // stat = 1: every element's first step
      for (int64_t i = 0; i < p.v.numel(); ++i) store_from_float(var_dtype, p.v.data(), i, 1.0f);
    }
    if (!lp.master && lp.rounding == WeightRounding::kKahan && var_dtype == DType::kBFloat16) {
      p.compensation.reset(DType::kBFloat16, shape);
    }
    params_.push_back(std::move(p));
    return static_cast<int>(params_.size()) - 1;
  };
  auto add_layer = [&](LayerSpec spec) {
    const LayerPrecision lp = precision_.layer(specs_.size());
    spec.compute = lp.compute;
    spec.stored = lp.stored;
    specs_.push_back(std::move(spec));
  };
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    const int64_t in = widths[l], out = widths[l + 1];
    const float bound = 1.0f / std::sqrt(static_cast<float>(in));
    LayerSpec lin{.kind = LayerKind::kLinear, .name = "linear" + std::to_string(l)};
    lin.in = in;
    lin.out = out;
    lin.weight = add_param(lin.name + ".weight", {in, out}, -bound, bound, true);
    lin.bias = add_param(lin.name + ".bias", {out}, -bound, bound, true);
    add_layer(std::move(lin));
    if (l + 2 == widths.size()) break;  // the classifier has no norm or activation
    LayerSpec norm{.kind = LayerKind::kLayerNorm, .name = "layernorm" + std::to_string(l)};
    norm.in = norm.out = out;
    norm.weight = add_param(norm.name + ".weight", {out}, 1.0f, 1.0f, false);
    norm.bias = add_param(norm.name + ".bias", {out}, 0.0f, 0.0f, false);
    add_layer(std::move(norm));
    LayerSpec act{.kind = LayerKind::kActivation,
                  .name = std::string(activation_name(activation)) + std::to_string(l)};
    act.in = act.out = out;
    act.activation = activation;
    add_layer(std::move(act));
  }
  build();
}

Mlp::Mlp(const Mlp& other)
    : precision_(other.precision_), specs_(other.specs_), params_(other.params_) {
  build();
  for (std::size_t l = 0; l < steps_.size(); ++l) steps_[l]->transform = other.steps_[l]->transform;
}

Mlp::~Mlp() = default;

void Mlp::build() {
  input_ = graph_.add_input("input");
  graph_.value(input_).needs_grad = false;  // no gradient for the data
  int x = input_;
  for (const LayerSpec& L : specs_) {
    std::unique_ptr<trainer::Layer> layer;
    switch (L.kind) {
      case LayerKind::kLinear:
        layer = std::make_unique<trainer::Linear>(L.name, &params_[L.weight], &params_[L.bias],
                                                  L.compute);
        break;
      case LayerKind::kLayerNorm:
        layer = std::make_unique<trainer::LayerNormLayer>(
            L.name, &params_[L.weight], &params_[L.bias], L.compute, trainer::NormForm::kCompute);
        break;
      case LayerKind::kActivation:
        if (L.activation == Activation::kRelu) {
          layer = std::make_unique<trainer::Relu>(L.name);
        } else {
          layer = std::make_unique<trainer::Gelu>(L.name, /*fp32_grad=*/true);
        }
        break;
    }
    auto step = std::make_unique<PolicyStep>(std::move(layer), L.compute, L.stored);
    steps_.push_back(step.get());
    x = graph_.add(std::move(step), {x}, {L.name})[0];
    outputs_.push_back(x);
  }
  loss_ = graph_.add(std::make_unique<trainer::SoftmaxCrossEntropy>("loss"), {x}, {"loss"})[0];
  ctx_.context = 1;
  ctx_.underflow = &underflow_;
}

void Mlp::keep_trace(bool keep) {
  for (PolicyStep* s : steps_) s->keep_trace = keep;
}

const Buffer& Mlp::input() const { return graph_.value(input_).data; }
const Buffer& Mlp::output(std::size_t l) const { return graph_.value(outputs_[l]).data; }
const Buffer& Mlp::loss_grad() const { return graph_.value(outputs_.back()).grad; }
const Buffer& Mlp::grad_input(std::size_t l) const { return steps_[l]->grad_input; }

void Mlp::set_input_transform(std::size_t layer, InputTransform transform) {
  steps_[layer]->transform = std::move(transform);
}

Status Mlp::forward(const float* x, int64_t rows) {
  ctx_.batch = rows;
  Buffer& in = graph_.value(input_).data;
  in.ensure(specs_.front().compute, {rows, specs_.front().in});
  trainer::narrow(x, in.dtype(), in.data(), in.numel());
  return graph_.forward(ctx_, 0, steps_.size());
}

Status Mlp::loss(const int32_t* labels, int64_t rows, float loss_scale, double* mean_loss,
                 int64_t* correct) {
  if (rows != ctx_.batch) {
    return invalid("train: loss over " + std::to_string(rows) + " rows after a forward pass of " +
                   std::to_string(ctx_.batch));
  }
  ctx_.targets = labels;
  ctx_.loss_scale = loss_scale;
  TRAINER_TRY(graph_.forward(ctx_, steps_.size(), steps_.size() + 1));
  const Buffer& losses = graph_.value(loss_).data;
  trainer::cast(output(steps_.size() - 1), DType::kFloat32, &logits32_);  // exact
  const int64_t c = classes();
  double sum = 0.0;
  int64_t right = 0;
  for (int64_t r = 0; r < rows; ++r) {
    sum += losses.f32()[r];
    const float* z = logits32_.f32() + r * c;
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j) {
      if (z[j] > z[best]) best = j;
    }
    right += best == labels[r] ? 1 : 0;
  }
  *mean_loss = sum / static_cast<double>(rows);
  *correct = right;
  return {};
}

Status Mlp::backward() { return graph_.backward(ctx_); }

std::vector<TensorView> Mlp::grad_views() const {
  std::vector<TensorView> v;
  for (const Parameter& p : params_) v.push_back(p.grad.view());
  return v;
}

std::vector<std::string> Mlp::param_names() const {
  std::vector<std::string> v;
  for (const Parameter& p : params_) v.push_back(p.name);
  return v;
}

int64_t Mlp::stored_activation_bytes(int64_t rows) const {
  int64_t b = 0;
  for (const LayerSpec& L : specs_) b += L.stored_bytes(rows);
  return b;
}

int64_t Mlp::state_bytes() const {
  int64_t b = 0;
  for (const Parameter& p : params_) b += p.state_bytes();
  return b;
}

std::string weights_digest(const Mlp& model) {
  uint64_t h = trainer::fnv1a(nullptr, 0);
  for (const Parameter& p : model.params()) {
    h = trainer::fnv1a(p.var.data(), static_cast<std::size_t>(p.var.bytes()), h);
  }
  return trainer::hex16(h);
}

}  // namespace mantissa::train::detail
