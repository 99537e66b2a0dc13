// The trainer's model as a small layer graph: values (activations and their gradients), layers
// (forward, backward, the parameters they use) and a graph that runs them in order and back.
//
// A layer reads its input values and writes its output values; backward reads the outputs'
// gradients and adds its contribution to the inputs' gradients (the first contribution is
// written, later ones added in fp32 in the graph's reverse order, so a value read by several
// layers, the residual stream, gets the same bits every run). A layer that uses a parameter adds
// its gradient the same way (Parameter::add_grad): a tied embedding sums the head's and the
// lookup's contributions in fp32 before the one rounding to the gradient's dtype.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mantissa/optim.h"
#include "trainer/tensor.h"

namespace mantissa::trainer {

// What a precision mode stores where (docs/training_gpt.md has the full map).
struct Precision {
  DType compute = DType::kFloat32;                     // c: GEMM operands, activations, gradients
  bool master = false;                                 // fp32 master weights with a c working copy
  WeightRounding rounding = WeightRounding::kNearest;  // bf16 weights without master
  bool loss_scaling = false;
  // The dtype of the optimizer's var: fp32 with master weights (and in fp32 mode), else c.
  DType var_dtype() const { return master ? DType::kFloat32 : compute; }
};

struct Parameter {
  std::string name;
  bool decay = false;   // AdamW's weight decay applies (matrices; not embeddings nor norms)
  Tensor var;           // what the optimizer updates: fp32, or c without master weights
  Tensor working;       // master weights only: the c copy the passes read
  Tensor grad;          // c
  Tensor m, v;          // optimizer state, var's dtype (or in `moments`)
  Tensor compensation;  // Kahan rounding only: bf16
  // Compact optimizer state (train --optimizer-state): m and v in this format
  // (multi_tensor_adam_w_compact), with one FLOAT scale per block in scale_m and scale_v for the
  // quantized formats. Unset: m and v in var's dtype.
  std::optional<MomentFormat> moments;
  Tensor scale_m, scale_v;
  WeightRounding rounding = WeightRounding::kNearest;
  // The fp32 gradient of the current backward pass (var's element count), owned by the model:
  // every layer that uses the parameter adds to it (the first one writes), in the graph's
  // reverse order. The model rounds it once into `grad` after the pass (or after summing the
  // passes of several micro-batches). Null: the parameter has one user, which rounds its
  // gradient straight into `grad` (add_grad), or has its operator write it there.
  float* grad32 = nullptr;

  // The c weights the passes read.
  const Tensor& weights() const { return working.empty() ? var : working; }
  // The weights in fp32: var itself when it is fp32, else widened into `scratch`.
  const float* weights_f32(Tensor* scratch) const;
  // Adds one layer's gradient (fp32, var's shape) to grad32; without grad32, rounds it once into
  // `grad` (the underflows counted in `count`).
  void add_grad(const float* g, UnderflowCount* count = nullptr);
  // grad32 itself when no layer has added to it in this pass (the caller then writes the first
  // contribution there directly, and it counts as added); null otherwise, and without grad32.
  float* first_grad() {
    if (grad32 == nullptr) return nullptr;
    return seen_++ == 0 ? grad32 : (--seen_, nullptr);
  }
  void begin_backward() { seen_ = 0; }
  int64_t state_bytes() const {
    return var.bytes() + working.bytes() + m.bytes() + v.bytes() + compensation.bytes() +
           scale_m.bytes() + scale_v.bytes();
  }

 private:
  int seen_ = 0;
};

// An activation and its gradient. The gradient's dtype is the producing layer's choice (fp32 for
// the residual stream, c elsewhere); has_grad says whether any layer has written it in this
// backward pass (none: the gradient is zero).
struct Value {
  std::string name;
  Tensor data;
  Tensor grad;
  bool has_grad = false;
  bool needs_grad = true;  // false for data no gradient is wanted of (a model's input features)
  // The precision analysis: the fp64 shadow of `data` (the shadow pass from the shadow's own
  // inputs), and the fp64 result of this value's layer on the mode's own inputs (`local`); the
  // same for `grad` (the backward shadow; empty: no gradient reached the value).
  std::vector<double> shadow, local;
  std::vector<double> grad_shadow, grad_local;
};

// An fp64 tensor for the shadow passes: row-major values of a known shape.
using Shadow = std::vector<double>;
// Parameters' fp64 gradients from the backward shadows, each of the parameter's element count.
using ShadowGrads = std::map<const Parameter*, Shadow>;

// What a pass needs besides the values: the batch, the targets, the loss scale, the counters.
struct Context {
  int64_t batch = 0, context = 0;    // sequences and tokens per sequence: rows = batch * context
  const int32_t* tokens = nullptr;   // [rows]
  const int32_t* targets = nullptr;  // [rows]: next tokens, or class labels
  float loss_scale = 1.0f;           // the gradient computed is that of loss * loss_scale
  int64_t grad_rows = 0;             // the rows the loss's mean divides by; 0: this batch's
  UnderflowCount* underflow = nullptr;
  // For the FP8 and MX products (lowp_gemm.h): a training pass records amaxes (a validation
  // pass does not); `pass` keys stochastic rounding (the micro-batch's index in the run);
  // collect_stats keeps each quantization's statistics (the precision analysis).
  bool training = true;
  bool collect_stats = false;
  uint64_t pass = 0;
  int64_t rows() const { return batch * context; }
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;
  const std::string& name() const { return name_; }
  virtual Status forward(const Context& ctx, std::span<Value* const> in,
                         std::span<Value* const> out) = 0;
  virtual Status backward(const Context& ctx, std::span<Value* const> in,
                          std::span<Value* const> out) = 0;
  // The layer in fp64 (plain loops sharing nothing with the operators) from fp64 inputs, with the
  // weights the forward pass reads (widened exactly): the shadow of forward(). `in` and `out` hold
  // one vector per input and output value, of their data's shapes.
  virtual void shadow(const Context& ctx, std::span<const Shadow* const> in,
                      std::span<Shadow* const> out) const = 0;
  // The shadow of backward(): from the fp64 inputs (as for shadow()) and the gradients of the
  // outputs (`dout`; an empty vector is a zero gradient), adds the inputs' gradients to `din`
  // (each sized as its input) and the parameters' gradients to `dparams` (created zero, the
  // parameter's element count, when absent). The gradient of loss * ctx.loss_scale.
  virtual void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                               std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                               ShadowGrads* dparams) const = 0;

 protected:
  // Hands the gradient `g` of value `v` back: written when v has none yet, otherwise added
  // (fp32 addition, rounded once to v's gradient dtype).
  static void give_grad(Value& v, const Tensor& g);
  // Where a layer may write v's gradient directly (of `dtype` and `shape`): v.grad itself when
  // nothing has been written yet, else `scratch`; give_grad_from() then finishes.
  static Tensor* grad_target(Value& v, Tensor* scratch, DType dtype, std::vector<int64_t> shape);
  static void give_grad_from(Value& v, Tensor* target);

 private:
  std::string name_;
};

class Graph {
 public:
  // A value no layer produces (filled by the caller), and its id.
  int add_input(std::string name);
  // Adds a layer reading `inputs` and producing one value per output name; returns their ids.
  std::vector<int> add(std::unique_ptr<Layer> layer, std::vector<int> inputs,
                       std::vector<std::string> outputs);
  Value& value(int id) { return *values_[static_cast<std::size_t>(id)]; }
  const Value& value(int id) const { return *values_[static_cast<std::size_t>(id)]; }
  int find(const std::string& name) const;  // -1 when absent
  std::size_t layers() const { return nodes_.size(); }
  const Layer& layer(std::size_t i) const { return *nodes_[i].layer; }

  Status forward(const Context& ctx);
  // Layers [first, last) only (a model that runs its loss apart from the layers before it).
  Status forward(const Context& ctx, std::size_t first, std::size_t last);
  // Every layer's backward, last to first (the last layer, the loss, starts the pass).
  Status backward(const Context& ctx);
  // After forward(): every value's fp64 shadow (Value::shadow, each layer's shadow() on its
  // inputs' shadows) and every layer output's fp64 result on the mode's own inputs
  // (Value::local, its inputs' data widened).
  void shadow(const Context& ctx);
  // After shadow() and backward(): every value's fp64 gradient (Value::grad_shadow, each
  // layer's shadow_backward() from the shadows, the last value's gradient ctx.loss_scale) and
  // its fp64 gradient on the mode's own inputs and output gradients (Value::grad_local, summed
  // over the value's readers); the parameters' gradients both ways.
  void shadow_backward(const Context& ctx, ShadowGrads* params, ShadowGrads* params_local);
  // The layer that produces each value (-1 for an input), and a layer's output value ids.
  int producer(int value) const;
  std::vector<int> outputs(std::size_t layer) const;
  std::size_t values() const { return values_.size(); }

 private:
  struct Node {
    std::unique_ptr<Layer> layer;
    std::vector<Value*> in, out;
  };
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<Node> nodes_;
};

}  // namespace mantissa::trainer
