// The MLP `mantissa train` trains: layers as a list (Linear, LayerNorm, activation, ...,
// Linear), each keeping what its backward pass needs, parameterised by a Precision (the dtype
// activations, gradients and the weights the products read are stored in; master weights;
// rounding of bf16 weights). Forward, the loss (SoftmaxCrossEntropyWithLogits) and backward.
//
// Glossary: "compute dtype" is the precision's 16-bit (or fp32) storage type; every value stored
// in it is computed in fp32 and rounded once (RNE). "var" is what the optimizer updates: fp32
// master weights, or the compute-dtype weights themselves when there is no master.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "mantissa/optim.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "trainer/train.h"

namespace mantissa::train::detail {

// An owned, zero-initialised, row-major buffer of fp32, fp16 or bf16 elements.
class Buffer {
 public:
  Buffer() = default;
  Buffer(DType dtype, std::vector<int64_t> shape) { reset(dtype, std::move(shape)); }
  void reset(DType dtype, std::vector<int64_t> shape);
  // Keeps the storage when it is large enough (contents then unspecified).
  void ensure(DType dtype, std::vector<int64_t> shape);
  bool empty() const { return shape_.empty(); }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  int64_t bytes() const { return numel_ * static_cast<int64_t>(dtype_size(dtype_)); }
  void* data() { return words_.data(); }
  const void* data() const { return words_.data(); }
  float* f32() { return reinterpret_cast<float*>(words_.data()); }
  const float* f32() const { return reinterpret_cast<const float*>(words_.data()); }
  TensorView view() const;

 private:
  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::vector<uint32_t> words_;  // 4-byte words: aligned for fp32, two 16-bit elements each
};

// One layer's precision (a per-layer policy, train/policy.h): the dtype its forward and
// backward compute in (input, weights, output and gradients stored in it), the dtype of the
// input it keeps for its backward pass ("stored"), and its parameters' update form.
struct LayerPrecision {
  DType compute = DType::kFloat32;
  DType stored = DType::kFloat32;
  bool master = false;
  WeightRounding rounding = WeightRounding::kNearest;
};

struct Precision {
  DType compute = DType::kFloat32;
  bool master = false;  // fp32 master weights and a compute-dtype working copy
  WeightRounding rounding = WeightRounding::kNearest;  // bf16 weights without master
  bool loss_scaling = false;
  // Per layer (index as Mlp::layers()); empty: every layer as the four fields above, stored in
  // the compute dtype (the precision modes).
  std::vector<LayerPrecision> layers;
  LayerPrecision layer(std::size_t i) const {
    if (i < layers.size()) return layers[i];
    return {.compute = compute, .stored = compute, .master = master, .rounding = rounding};
  }
};
Precision precision_of(Mode mode);

struct Parameter {
  std::string name;
  Buffer var;           // FLOAT (fp32 mode, master weights) or the compute dtype
  Buffer working;       // master weights only: the compute-dtype copy the passes read
  Buffer grad;          // compute dtype
  Buffer m, v;          // optimizer state, var's dtype (SGD: accum and stat)
  Buffer compensation;  // Kahan rounding only: bf16
  WeightRounding rounding = WeightRounding::kNearest;  // bf16 var without master
  const Buffer& weights() const { return working.empty() ? var : working; }
  int64_t state_bytes() const {
    return var.bytes() + working.bytes() + m.bytes() + v.bytes() + compensation.bytes();
  }
};

enum class LayerKind { kLinear, kLayerNorm, kActivation };

struct Layer {
  LayerKind kind = LayerKind::kLinear;
  std::string name;
  int64_t in = 0, out = 0;
  Activation activation = Activation::kRelu;
  int weight = -1, bias = -1;  // indices into Mlp::params() (Linear: [in, out] and [out])
  Buffer output;               // [rows, out], compute dtype
  Buffer mean, rstd;           // LayerNorm: [rows, 1], FLOAT
  Buffer grad_input;           // with keep_trace(true): the gradient of the layer's input
  DType compute = DType::kFloat32, stored = DType::kFloat32;  // Precision::layer()
  Buffer cast_input;  // the input rounded to `compute` when it arrives in another dtype
  Buffer saved;       // the input kept for backward when `stored` differs from `compute`
  // Bytes this layer keeps for its backward pass at `rows` rows: its input in the stored dtype
  // (LayerNorm: and its fp32 mean and rstd).
  int64_t stored_bytes(int64_t rows) const {
    return rows * in * static_cast<int64_t>(dtype_size(stored)) +
           (kind == LayerKind::kLayerNorm ? 2 * rows * 4 : 0);
  }
};

class Mlp {
 public:
  // widths: inputs, hidden..., classes. Initial weights as PyTorch's Linear (uniform in
  // +-1/sqrt(fan_in), weights and biases), LayerNorm weight 1 and bias 0; drawn in fp32 from the
  // seed, then rounded to the var's dtype. The optimizer state is zero (SGD's stat is 1).
  Mlp(std::span<const int64_t> widths, Activation activation, Precision precision,
      Optimizer optimizer, uint64_t seed);

  const Precision& precision() const { return precision_; }
  std::vector<Layer>& layers() { return layers_; }
  const std::vector<Layer>& layers() const { return layers_; }
  std::vector<Parameter>& params() { return params_; }
  const std::vector<Parameter>& params() const { return params_; }
  int64_t classes() const { return layers_.back().out; }
  // The precision analysis (analyze.h) reads what each pass produced: with keep_trace(true),
  // backward() also keeps every layer's input gradient (Layer::grad_input; none for the first
  // Linear) and loss() the logits' gradient. Off by default: training copies nothing.
  void keep_trace(bool keep) { keep_trace_ = keep; }
  const Buffer& input() const { return input_; }
  const Buffer& loss_grad() const { return loss_grad_; }

  // x: [rows, inputs] fp32, rounded once to the compute dtype as the first layer's input.
  Status forward(const float* x, int64_t rows);
  // After forward(): the mean loss over the rows (fp64 sum of the per-row fp32 losses), the
  // number of rows whose largest logit is the label's, and, when want_grad, the gradient of
  // loss * loss_scale with respect to the logits (fp32, rounded once to the compute dtype).
  Status loss(const int32_t* labels, int64_t rows, float loss_scale, bool want_grad,
              double* mean_loss, int64_t* correct);
  // The rows loss() divides the gradient by: 0 (the default) the batch's own rows; the global
  // batch's rows when the batch is one shard of it (data-parallel training).
  void set_grad_rows(int64_t rows) { grad_rows_ = rows; }
  // After loss(..., want_grad = true): every parameter's gradient (of loss * loss_scale).
  Status backward();

  std::vector<TensorView> grad_views() const;
  // Gradient values the backward passes rounded to the compute dtype (the loss gradient,
  // products, bias sums, GELU's gradient; not LayerNorm's, which rounds inside its operator,
  // nor ReLU's, which only selects), and how many of them were nonzero in fp32 but became
  // zero: underflow.
  int64_t grad_values() const { return grad_values_; }
  int64_t grad_underflows() const { return grad_underflows_; }
  std::vector<std::string> param_names() const;
  int64_t state_bytes() const;
  // The activations every layer keeps for backward, at `rows` rows (Layer::stored_bytes).
  int64_t stored_activation_bytes(int64_t rows) const;
  // Inference only: a transform of layer i's fp32 input (in place, [rows, cols]) before the
  // layer reads it, e.g. a quantize-dequantize round trip. Empty: none.
  using InputTransform = std::function<void(float* x, int64_t rows, int64_t cols)>;
  void set_input_transform(std::size_t layer, InputTransform transform);

 private:
  const Buffer& layer_input(std::size_t i) const { return i == 0 ? input_ : layers_[i - 1].output; }
  // The input layer i computes on (its own dtype), and the one its backward reads (compute
  // dtype, restored from the stored copy when that differs).
  const Buffer& compute_input(std::size_t i) const;
  const Buffer& backward_input(std::size_t i);
  void narrow_grad(const float* src, Buffer* dst);  // narrow() and the underflow count

  Precision precision_;
  std::vector<Layer> layers_;
  std::vector<Parameter> params_;
  int64_t rows_ = 0;
  int64_t grad_values_ = 0, grad_underflows_ = 0;
  bool keep_trace_ = false;
  int64_t grad_rows_ = 0;
  Buffer loss_grad_;
  std::vector<double> column_sums_;
  Buffer input_;
  Buffer onehot_, logits32_, loss32_, backprop32_;  // the loss, in fp32
  Buffer dy_, dx_;                                  // gradients flowing back, compute dtype
  Buffer scratch32_, scratch32b_, bias32_;          // products and fp32 staging
  Buffer restored_;                                 // a stored input, back in compute dtype
  std::vector<InputTransform> transforms_;
};

// FNV-1a 64 over the bytes of every parameter's var, in parameter order: 16 hex digits.
std::string weights_digest(const Mlp& model);

}  // namespace mantissa::train::detail
