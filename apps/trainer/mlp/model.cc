// The MLP's forward pass, loss and backward pass (see model.h). Products (the bias added by
// Addmm), LayerNorm and the loss go through the library's operators; ReLU and the bias gradient's
// column sums are small loops here.
#include "trainer/mlp/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "mantissa/convert.h"
#include "mantissa/ops/gelu.h"
#include "mantissa/ops/layer_norm.h"
#include "mantissa/ops/layer_norm_grad.h"
#include "mantissa/ops/matmul.h"
#include "mantissa/ops/softmax_cross_entropy_with_logits.h"
#include "trainer/mlp/common.h"
#include "trainer/mlp/rng.h"
#include "trainer/tensor.h"

namespace mantissa::train::detail {

// ---- Buffer ---------------------------------------------------------------------------------

void Buffer::reset(DType dtype, std::vector<int64_t> shape) {
  dtype_ = dtype;
  shape_ = std::move(shape);
  numel_ = 1;
  for (int64_t s : shape_) numel_ *= s;
  words_.assign(static_cast<std::size_t>((bytes() + 3) / 4), 0u);
}

void Buffer::ensure(DType dtype, std::vector<int64_t> shape) {
  if (dtype == dtype_ && shape == shape_) return;
  int64_t count = 1;
  for (int64_t s : shape) count *= s;
  const int64_t need = (count * static_cast<int64_t>(dtype_size(dtype)) + 3) / 4;
  if (need > static_cast<int64_t>(words_.size())) {
    reset(dtype, std::move(shape));
    return;
  }
  // Scratch reused with another shape: no allocation, no clearing.
  dtype_ = dtype;
  shape_ = std::move(shape);
  numel_ = count;
}

TensorView Buffer::view() const {
  return TensorView(const_cast<uint32_t*>(words_.data()), dtype_,
                    std::span<const int64_t>(shape_.data(), shape_.size()));
}

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

namespace {

// The transpose of a row-major [rows, cols] buffer as a view of the same memory ([cols, rows],
// strides {1, cols}): the matrix products read it where it is.
TensorView transposed(const Buffer& b, int64_t rows, int64_t cols) {
  const int64_t shape[] = {cols, rows}, strides[] = {1, cols};
  return TensorView(const_cast<void*>(b.data()), b.dtype(), shape, strides);
}

}  // namespace

namespace {

// fp32 <-> compute dtype with the library's bulk conversions (RNE, the same bits as
// store_from_float and load_as_float on every target).
void narrow(const float* src, Buffer* dst) {
  const auto n = static_cast<std::size_t>(dst->numel());
  switch (dst->dtype()) {
    case DType::kFloat16: convert_fp32_to_fp16(src, static_cast<uint16_t*>(dst->data()), n); break;
    case DType::kBFloat16: convert_fp32_to_bf16(src, static_cast<uint16_t*>(dst->data()), n); break;
    default: std::memcpy(dst->data(), src, n * sizeof(float)); break;
  }
}
void widen(const Buffer& src, float* dst) {
  const auto n = static_cast<std::size_t>(src.numel());
  switch (src.dtype()) {
    case DType::kFloat16:
      convert_fp16_to_fp32(static_cast<const uint16_t*>(src.data()), dst, n);
      break;
    case DType::kBFloat16:
      convert_bf16_to_fp32(static_cast<const uint16_t*>(src.data()), dst, n);
      break;
    default: std::memcpy(dst, src.data(), n * sizeof(float)); break;
  }
}
// src into dst's dtype (dst shaped as src): exact when widening, else one RNE rounding.
void convert(const Buffer& src, Buffer* dst) {
  if (src.dtype() == dst->dtype()) {
    std::memcpy(dst->data(), src.data(), static_cast<std::size_t>(src.bytes()));
  } else if (src.dtype() == DType::kFloat32) {
    narrow(src.f32(), dst);
  } else if (dst->dtype() == DType::kFloat32) {
    widen(src, dst->f32());
  } else {
    std::vector<float> wide(static_cast<std::size_t>(src.numel()));
    widen(src, wide.data());
    narrow(wide.data(), dst);
  }
}

// ReLU on the stored bits (it only selects, so it is exact in every dtype): y = max(x, 0) with
// -0 and negatives to +0 and NaN kept (x <= 0 is false for NaN), as torch.relu; dx = dy where
// x > 0, else +0 (NaN x included). `inf` is the dtype's +inf bits: 0 < bits <= inf is x > 0.
template <class T>
void relu_bits(const T* x, T* y, int64_t n, T sign, T inf) {
  for (int64_t i = 0; i < n; ++i) {
    const T magnitude = static_cast<T>(x[i] & ~sign);
    // Branch-free (the sign of an activation is a coin flip for the branch predictor).
    const T zero_it = static_cast<T>(((x[i] & sign) != 0) & (magnitude <= inf));
    y[i] = static_cast<T>(x[i] & static_cast<T>(zero_it - 1));
  }
}
template <class T>
void relu_grad_bits(const T* x, const T* dy, T* dx, int64_t n, T inf) {
  for (int64_t i = 0; i < n; ++i) {
    const T keep = static_cast<T>((x[i] != 0) & (x[i] <= inf));
    dx[i] = static_cast<T>(dy[i] & static_cast<T>(T{0} - keep));
  }
}

void relu_forward(const Buffer& x, Buffer* y) {
  const int64_t n = x.numel();
  switch (x.dtype()) {
    case DType::kFloat16:
      relu_bits<uint16_t>(static_cast<const uint16_t*>(x.data()), static_cast<uint16_t*>(y->data()),
                          n, 0x8000, 0x7C00);
      break;
    case DType::kBFloat16:
      relu_bits<uint16_t>(static_cast<const uint16_t*>(x.data()), static_cast<uint16_t*>(y->data()),
                          n, 0x8000, 0x7F80);
      break;
    default:
      relu_bits<uint32_t>(static_cast<const uint32_t*>(x.data()), static_cast<uint32_t*>(y->data()),
                          n, 0x80000000u, 0x7F800000u);
      break;
  }
}

void relu_backward(const Buffer& x, const Buffer& dy, Buffer* dx) {
  const int64_t n = x.numel();
  switch (x.dtype()) {
    case DType::kFloat16:
    case DType::kBFloat16:
      relu_grad_bits<uint16_t>(
          static_cast<const uint16_t*>(x.data()), static_cast<const uint16_t*>(dy.data()),
          static_cast<uint16_t*>(dx->data()), n, x.dtype() == DType::kFloat16 ? 0x7C00 : 0x7F80);
      break;
    default:
      relu_grad_bits<uint32_t>(static_cast<const uint32_t*>(x.data()),
                               static_cast<const uint32_t*>(dy.data()),
                               static_cast<uint32_t*>(dx->data()), n, 0x7F800000u);
      break;
  }
}

}  // namespace

// ---- Mlp ------------------------------------------------------------------------------------

Mlp::Mlp(std::span<const int64_t> widths, Activation activation, Precision precision,
         Optimizer optimizer, uint64_t seed)
    : precision_(precision) {
  Rng rng(stream_seed(seed, 4));
  auto add_param = [&](std::string name, std::vector<int64_t> shape, float lo, float hi,
                       bool uniform) {
    const LayerPrecision lp = precision.layer(layers_.size());
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
      narrow(p.var.f32(), &p.working);
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
  auto place = [&](Layer* layer) {
    const LayerPrecision lp = precision.layer(layers_.size());
    layer->compute = lp.compute;
    layer->stored = lp.stored;
  };
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    const int64_t in = widths[l], out = widths[l + 1];
    const float bound = 1.0f / std::sqrt(static_cast<float>(in));
    Layer lin;
    lin.kind = LayerKind::kLinear;
    lin.name = "linear" + std::to_string(l);
    lin.in = in;
    lin.out = out;
    place(&lin);
    lin.weight = add_param(lin.name + ".weight", {in, out}, -bound, bound, true);
    lin.bias = add_param(lin.name + ".bias", {out}, -bound, bound, true);
    layers_.push_back(std::move(lin));
    if (l + 2 == widths.size()) break;  // the classifier has no norm or activation
    Layer norm;
    norm.kind = LayerKind::kLayerNorm;
    norm.name = "layernorm" + std::to_string(l);
    norm.in = norm.out = out;
    place(&norm);
    norm.weight = add_param(norm.name + ".weight", {out}, 1.0f, 1.0f, false);
    norm.bias = add_param(norm.name + ".bias", {out}, 0.0f, 0.0f, false);
    layers_.push_back(std::move(norm));
    Layer act;
    act.kind = LayerKind::kActivation;
    act.name = std::string(activation_name(activation)) + std::to_string(l);
    act.in = act.out = out;
    act.activation = activation;
    place(&act);
    layers_.push_back(std::move(act));
  }
}

const Buffer& Mlp::compute_input(std::size_t i) const {
  const Buffer& given = layer_input(i);
  const bool transformed = i < transforms_.size() && transforms_[i];
  return given.dtype() != layers_[i].compute || transformed ? layers_[i].cast_input : given;
}

const Buffer& Mlp::backward_input(std::size_t i) {
  const Layer& L = layers_[i];
  if (L.stored == L.compute) return compute_input(i);
  restored_.ensure(L.compute, L.saved.shape());
  convert(L.saved, &restored_);
  return restored_;
}

void Mlp::set_input_transform(std::size_t layer, InputTransform transform) {
  if (transforms_.size() <= layer) transforms_.resize(layer + 1);
  transforms_[layer] = std::move(transform);
}

Status Mlp::forward(const float* x, int64_t rows) {
  rows_ = rows;
  input_.ensure(layers_.front().compute, {rows, layers_.front().in});
  narrow(x, &input_);
  for (std::size_t li = 0; li < layers_.size(); ++li) {
    Layer& L = layers_[li];
    const DType cd = L.compute;
    const Buffer& given = layer_input(li);
    if (&compute_input(li) != &given) {
      L.cast_input.ensure(cd, given.shape());
      convert(given, &L.cast_input);
      if (li < transforms_.size() && transforms_[li]) {
        scratch32_.ensure(DType::kFloat32, given.shape());
        widen(L.cast_input, scratch32_.f32());
        transforms_[li](scratch32_.f32(), rows, L.in);
        narrow(scratch32_.f32(), &L.cast_input);
      }
    }
    const Buffer& in = compute_input(li);
    if (L.stored != cd) {
      L.saved.ensure(L.stored, in.shape());
      convert(in, &L.saved);
    }
    L.output.ensure(cd, {rows, L.out});
    switch (L.kind) {
      case LayerKind::kLinear: {
        scratch32_.ensure(DType::kFloat32, {rows, L.out});
        const Parameter& w = params_[L.weight];
        const Parameter& b = params_[L.bias];
        // y = b + product in fp32 (Addmm with beta = alpha = 1), rounded once to the compute
        // dtype.
        bias32_.ensure(DType::kFloat32, {L.out});
        widen(b.weights(), bias32_.f32());
        TRAINER_TRY(addmm({.self = bias32_.view(),
                           .mat1 = in.view(),
                           .mat2 = w.weights().view(),
                           .out = scratch32_.view()}));
        narrow(scratch32_.f32(), &L.output);
        break;
      }
      case LayerKind::kLayerNorm: {
        L.mean.ensure(DType::kFloat32, {rows, 1});
        L.rstd.ensure(DType::kFloat32, {rows, 1});
        // Statistics in fp64, output rounded once; mean and rstd kept (FLOAT) for backward.
        TRAINER_TRY(layer_norm({.input = in.view(),
                                .weight = params_[L.weight].weights().view(),
                                .bias = params_[L.bias].weights().view(),
                                .out = L.output.view(),
                                .mean = L.mean.view(),
                                .rstd = L.rstd.view()},
                               {.normalized_shape = Dims{L.out}, .eps = 1e-5}));
        break;
      }
      case LayerKind::kActivation: {
        if (L.activation == Activation::kRelu) {
          relu_forward(in, &L.output);
        } else {
          // The library's Gelu (tanh form): fp64 from the widened input, rounded once to fp32
          // and from there to the compute dtype.
          TRAINER_TRY(gelu({.self = in.view(), .out = L.output.view()}));
        }
        break;
      }
    }
  }
  return {};
}

Status Mlp::loss(const int32_t* labels, int64_t rows, float loss_scale, bool want_grad,
                 double* mean_loss, int64_t* correct) {
  const int64_t c = classes();
  const Buffer& logits = layers_.back().output;
  // The loss runs in fp32 on the exactly widened logits; its gradient is rounded once.
  logits32_.ensure(DType::kFloat32, {rows, c});
  onehot_.ensure(DType::kFloat32, {rows, c});
  loss32_.ensure(DType::kFloat32, {rows});
  backprop32_.ensure(DType::kFloat32, {rows, c});
  widen(logits, logits32_.f32());
  std::fill(onehot_.f32(), onehot_.f32() + rows * c, 0.0f);
  for (int64_t r = 0; r < rows; ++r) onehot_.f32()[r * c + labels[r]] = 1.0f;
  TRAINER_TRY(softmax_cross_entropy_with_logits({.features = logits32_.view(),
                                                 .labels = onehot_.view(),
                                                 .loss = loss32_.view(),
                                                 .backprop = backprop32_.view()}));
  double sum = 0.0;
  int64_t right = 0;
  for (int64_t r = 0; r < rows; ++r) {
    sum += loss32_.f32()[r];
    const float* z = logits32_.f32() + r * c;
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j) {
      if (z[j] > z[best]) best = j;
    }
    right += best == labels[r] ? 1 : 0;
  }
  *mean_loss = sum / static_cast<double>(rows);
  *correct = right;
  if (want_grad) {
    // d(mean loss * scale)/dz = (softmax - y) * (scale / rows): the factor in fp64, rounded to
    // fp32, one fp32 product, rounded once to the compute dtype. A shard of a larger batch
    // divides by the whole batch's rows (set_grad_rows).
    const int64_t denominator = grad_rows_ > 0 ? grad_rows_ : rows;
    const float factor = static_cast<float>(static_cast<double>(loss_scale) / denominator);
    dy_.ensure(layers_.back().compute, {rows, c});
    float* g = backprop32_.f32();
    for (int64_t i = 0; i < rows * c; ++i) g[i] = g[i] * factor;
    narrow_grad(g, &dy_);
    if (keep_trace_) loss_grad_ = dy_;
  }
  return {};
}

Status Mlp::backward() {
  const int64_t rows = rows_;
  for (std::size_t li = layers_.size(); li-- > 0;) {
    Layer& L = layers_[li];
    const DType cd = L.compute;
    if (dy_.dtype() != cd) {  // the gradient arrives in the next layer's dtype
      dx_.ensure(cd, dy_.shape());
      convert(dy_, &dx_);
      std::swap(dx_, dy_);
    }
    const Buffer& in = backward_input(li);
    switch (L.kind) {
      case LayerKind::kLinear: {
        Parameter& w = params_[L.weight];
        Parameter& b = params_[L.bias];
        // dW [in, out] = X^T [in, rows] * dY [rows, out].
        scratch32_.ensure(DType::kFloat32, {L.in, L.out});
        TRAINER_TRY(matmul(
            {.self = transposed(in, rows, L.in), .mat2 = dy_.view(), .out = scratch32_.view()}));
        narrow_grad(scratch32_.f32(), &w.grad);
        // db = column sums of dY, fp64 in row order, rounded once.
        scratch32_.ensure(DType::kFloat32, {rows, L.out});
        widen(dy_, scratch32_.f32());
        bias32_.ensure(DType::kFloat32, {L.out});
        // Each column summed over the rows in row order (row by row, so the sums of all
        // columns run side by side).
        column_sums_.assign(static_cast<std::size_t>(L.out), 0.0);
        for (int64_t r = 0; r < rows; ++r) {
          const float* g = scratch32_.f32() + r * L.out;
          for (int64_t j = 0; j < L.out; ++j) column_sums_[j] += g[j];
        }
        for (int64_t j = 0; j < L.out; ++j) bias32_.f32()[j] = static_cast<float>(column_sums_[j]);
        narrow_grad(bias32_.f32(), &b.grad);
        if (li == 0) break;  // no gradient for the data
        // dX [rows, in] = dY [rows, out] * W^T [out, in].
        scratch32_.ensure(DType::kFloat32, {rows, L.in});
        TRAINER_TRY(matmul({.self = dy_.view(),
                            .mat2 = transposed(w.weights(), L.in, L.out),
                            .out = scratch32_.view()}));
        dx_.ensure(cd, {rows, L.in});
        narrow_grad(scratch32_.f32(), &dx_);
        if (keep_trace_) L.grad_input = dx_;
        std::swap(dx_, dy_);
        break;
      }
      case LayerKind::kLayerNorm: {
        dx_.ensure(cd, {rows, L.in});
        TRAINER_TRY(layer_norm_grad({.dy = dy_.view(),
                                     .input = in.view(),
                                     .mean = L.mean.view(),
                                     .rstd = L.rstd.view(),
                                     .weight = params_[L.weight].weights().view(),
                                     .bias = std::nullopt,
                                     .dx = dx_.view(),
                                     .dweight = params_[L.weight].grad.view(),
                                     .dbias = params_[L.bias].grad.view()},
                                    {.normalized_shape = Dims{L.in}}));
        if (keep_trace_) L.grad_input = dx_;
        std::swap(dx_, dy_);
        break;
      }
      case LayerKind::kActivation: {
        dx_.ensure(cd, {rows, L.in});
        if (L.activation == Activation::kRelu) {
          relu_backward(in, dy_, &dx_);
        } else {
          // GeluBackward into fp32, then one rounding to the compute dtype (counted).
          scratch32b_.ensure(DType::kFloat32, {rows, L.in});
          TRAINER_TRY(gelu_backward(
              {.grad_output = dy_.view(), .self = in.view(), .grad_input = scratch32b_.view()}));
          narrow_grad(scratch32b_.f32(), &dx_);
        }
        if (keep_trace_) L.grad_input = dx_;
        std::swap(dx_, dy_);
        break;
      }
    }
  }
  return {};
}

void Mlp::narrow_grad(const float* src, Buffer* dst) {
  // A nonzero fp32 gradient whose 16-bit rounding is +-0 counts as an underflow.
  trainer::UnderflowCount count;
  trainer::narrow(src, dst->dtype(), dst->data(), dst->numel(), &count);
  grad_values_ += dst->numel();
  grad_underflows_ += count.underflows;
}

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
  for (const Layer& L : layers_) b += L.stored_bytes(rows);
  return b;
}

int64_t Mlp::state_bytes() const {
  int64_t b = 0;
  for (const Parameter& p : params_) b += p.state_bytes();
  return b;
}

std::string weights_digest(const Mlp& model) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a 64 offset basis
  for (const Parameter& p : model.params()) {
    const auto* bytes = static_cast<const unsigned char*>(p.var.data());
    for (int64_t i = 0; i < p.var.bytes(); ++i) {
      h ^= bytes[i];
      h *= 0x100000001B3ull;  // FNV prime
    }
  }
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace mantissa::train::detail
