// The MLP `mantissa train` trains: a layer graph (trainer/graph.h) of the trainer's layers
// (Linear with bias, LayerNorm, ReLU or GELU, ..., Linear, SoftmaxCrossEntropy), the same layers
// the GPT is built from, parameterised by a Precision (the dtype activations, gradients and the
// weights the products read are stored in; master weights; rounding of bf16 weights; per layer
// under a policy). Forward, the loss and backward.
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
#include "trainer/graph.h"
#include "trainer/tensor.h"
#include "trainer/train.h"

namespace mantissa::train::detail {

// An owned tensor of the trainer (trainer/tensor.h).
using Buffer = trainer::Tensor;

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

// The graph's parameters (trainer/graph.h): var, the working copy, the gradient, the optimizer
// state (SGD: accum and stat in m and v) and the Kahan compensation. The MLP's parameters have
// one user each and no fp32 gradient buffer: their layers round the gradient straight into grad.
using Parameter = trainer::Parameter;

// What the precision analysis and the policies know of a layer: its kind and sizes, the
// parameters it uses and its precision. The layer itself is one of the trainer's layers
// (trainer/layers.h) in the model's graph.
enum class LayerKind { kLinear, kLayerNorm, kActivation };

struct LayerSpec {
  LayerKind kind = LayerKind::kLinear;
  std::string name;
  int64_t in = 0, out = 0;
  Activation activation = Activation::kRelu;
  int weight = -1, bias = -1;  // indices into Mlp::params() (Linear: [in, out] and [out])
  DType compute = DType::kFloat32, stored = DType::kFloat32;  // Precision::layer()
  // Bytes this layer keeps for its backward pass at `rows` rows: its input in the stored dtype
  // (LayerNorm: and its fp32 mean and rstd).
  int64_t stored_bytes(int64_t rows) const {
    return rows * in * static_cast<int64_t>(dtype_size(stored)) +
           (kind == LayerKind::kLayerNorm ? 2 * rows * 4 : 0);
  }
};

class PolicyStep;

// The MLP as a layer graph: input -> Linear -> LayerNorm -> activation -> ... -> Linear ->
// SoftmaxCrossEntropy, every layer wrapped in its precision (the input cast to its compute
// dtype, kept for backward in its stored dtype; model.cc).
class Mlp {
 public:
  // widths: inputs, hidden..., classes. Initial weights as PyTorch's Linear (uniform in
  // +-1/sqrt(fan_in), weights and biases), LayerNorm weight 1 and bias 0; drawn in fp32 from the
  // seed, then rounded to the var's dtype. The optimizer state is zero (SGD's stat is 1).
  Mlp(std::span<const int64_t> widths, Activation activation, Precision precision,
      Optimizer optimizer, uint64_t seed);
  // The same graph over copies of other's parameters (and its input transforms).
  Mlp(const Mlp& other);
  Mlp& operator=(const Mlp&) = delete;
  ~Mlp();

  const Precision& precision() const { return precision_; }
  const std::vector<LayerSpec>& layers() const { return specs_; }
  // The parameters in order (a span: the graph's layers point into them).
  std::span<Parameter> params() { return params_; }
  std::span<const Parameter> params() const { return params_; }
  int64_t classes() const { return specs_.back().out; }
  // The precision analysis (analyze.h) reads what each pass produced: with keep_trace(true),
  // backward() also keeps every layer's input gradient (grad_input(); none for the first
  // Linear). Off by default: training copies nothing.
  void keep_trace(bool keep);
  // The first layer's input (the features rounded to its compute dtype), layer l's output, the
  // logits' gradient (after backward()) and, with keep_trace, layer l's input gradient.
  const Buffer& input() const;
  const Buffer& output(std::size_t l) const;
  const Buffer& loss_grad() const;
  const Buffer& grad_input(std::size_t l) const;

  // The graph and the context of the last passes (the layers' fp64 shadows run on them; the
  // input value's shadow is the caller's).
  trainer::Graph& graph() { return graph_; }
  const trainer::Context& context() const { return ctx_; }

  // x: [rows, inputs] fp32, rounded once to the compute dtype as the first layer's input; the
  // layers' forward passes up to the logits.
  Status forward(const float* x, int64_t rows);
  // After forward(): the loss layer's forward, the mean loss over the rows (fp64 sum of the
  // per-row fp32 losses) and the number of rows whose largest logit is the label's. The
  // gradient backward() computes is that of loss * loss_scale.
  Status loss(const int32_t* labels, int64_t rows, float loss_scale, double* mean_loss,
              int64_t* correct);
  // The rows the loss gradient divides by: 0 (the default) the batch's own rows; the global
  // batch's rows when the batch is one shard of it (data-parallel training).
  void set_grad_rows(int64_t rows) { ctx_.grad_rows = rows; }
  // After loss(): every parameter's gradient (of loss * loss_scale), rounded once into grad.
  Status backward();

  std::vector<TensorView> grad_views() const;
  // Gradient values the backward passes rounded to the compute dtype (the loss gradient,
  // products, bias sums, GELU's gradient; not LayerNorm's, which rounds inside its operator,
  // nor ReLU's, which only selects; fp32 ones count too), and how many of them were nonzero in
  // fp32 but became zero: underflow.
  int64_t grad_values() const { return underflow_.values; }
  int64_t grad_underflows() const { return underflow_.underflows; }
  std::vector<std::string> param_names() const;
  int64_t state_bytes() const;
  // The activations every layer keeps for backward, at `rows` rows (LayerSpec::stored_bytes).
  int64_t stored_activation_bytes(int64_t rows) const;
  // Inference only: a transform of layer i's fp32 input (in place, [rows, cols]) before the
  // layer reads it, e.g. a quantize-dequantize round trip. Empty: none.
  using InputTransform = std::function<void(float* x, int64_t rows, int64_t cols)>;
  void set_input_transform(std::size_t layer, InputTransform transform);

 private:
  void build();  // the graph over specs_ and params_

  Precision precision_;
  std::vector<LayerSpec> specs_;
  std::vector<Parameter> params_;
  trainer::Graph graph_;
  std::vector<PolicyStep*> steps_;  // the graph's layers but the loss, in order
  std::vector<int> outputs_;        // each layer's output value
  int input_ = -1, loss_ = -1;
  trainer::Context ctx_;
  trainer::UnderflowCount underflow_{.fp32_values = true};
  Buffer logits32_;  // the logits widened, for the count of correct rows
};

// FNV-1a 64 over the bytes of every parameter's var, in parameter order: 16 hex digits.
std::string weights_digest(const Mlp& model);

}  // namespace mantissa::train::detail
