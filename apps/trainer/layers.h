// The layers the trainer's models are built from. Each reads and writes the dtypes its comment
// states; c is the precision's compute dtype (graph.h). docs/training_gpt.md maps them per mode.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/graph.h"
#include "trainer/lowp_gemm.h"

namespace mantissa::trainer {

// Token and position embedding: out[r] = wte[tokens[r]] + wpe[r mod context], fp32 [rows, d] (one
// fp32 addition of the two weights' fp32 values).
class Embedding final : public Layer {
 public:
  Embedding(std::string name, Parameter* wte, Parameter* wpe);
  Status forward(const Context& ctx, std::span<Value* const> in,
                 std::span<Value* const> out) override;
  Status backward(const Context& ctx, std::span<Value* const> in,
                  std::span<Value* const> out) override;
  void shadow(const Context& ctx, std::span<const Shadow* const> in,
              std::span<Shadow* const> out) const override;
  void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                       ShadowGrads* dparams) const override;

 private:
  Parameter *wte_, *wpe_;
  Tensor wte32_, wpe32_, dwte_, dwpe_;
};

// y = x @ W (W [in, out]), or x @ W^T (W [out, in], `transposed`: a tied output head). x: c
// [rows, in]; y: `out_dtype` (c, or fp32 where the result joins the residual stream or the loss).
// The gradient of x is c; W's is summed in fp32 and rounded once to its gradient's dtype.
// With a GEMM recipe (not transposed) the three products run in its format (lowp_gemm.h), and
// the gradient of y is quantized from the dtype it arrives in.
//
// With a bias (b [out], the MLP's form): y = b + x @ W in fp32 (the library's Addmm), rounded
// once to out_dtype; b's gradient is the column sums of dy (fp32), each summed in fp64 in row
// order and rounded once to fp32. A parameter without an fp32 gradient buffer (grad32) gets its
// gradient rounded straight into `grad` here, the underflows counted in ctx.underflow. No
// gradient of x is computed when x does not need one (Value::needs_grad).
class Linear final : public Layer {
 public:
  Linear(std::string name, Parameter* weight, DType out_dtype, bool transposed = false,
         const GemmRecipe* recipe = nullptr, uint64_t stream = 0);
  Linear(std::string name, Parameter* weight, Parameter* bias, DType out_dtype);
  LowpGemm* gemm() { return gemm_.get(); }
  Status forward(const Context& ctx, std::span<Value* const> in,
                 std::span<Value* const> out) override;
  Status backward(const Context& ctx, std::span<Value* const> in,
                  std::span<Value* const> out) override;
  void shadow(const Context& ctx, std::span<const Shadow* const> in,
              std::span<Shadow* const> out) const override;
  void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                       ShadowGrads* dparams) const override;

 private:
  Parameter* w_;
  Parameter* b_ = nullptr;
  DType out_dtype_;
  bool transposed_;
  std::unique_ptr<LowpGemm> gemm_;
  Tensor dy_, dx32_, dw32_, scratch_, b32_, y32_;
  std::vector<double> sums_;
};

// LayerNorm over the last dim, in one of two forms:
// - kResidual (the GPT's): x fp32 (the residual stream), the fp32 weights (var), statistics and y
//   in fp32 (the library's LayerNorm), y rounded once to c. Backward: LayerNormGrad in fp32, dx
//   fp32, the weights' gradients added in fp32 (Parameter::add_grad).
// - kCompute (the MLP's): x in c, the weights as the passes read them (the c working copy), y,
//   dx and the weights' gradients in c, each rounded once by the operator (the gradients written
//   straight into Parameter::grad: these parameters have no other user and no grad32).
enum class NormForm { kResidual, kCompute };
class LayerNormLayer final : public Layer {
 public:
  LayerNormLayer(std::string name, Parameter* weight, Parameter* bias, DType compute,
                 NormForm form = NormForm::kResidual);
  Status forward(const Context& ctx, std::span<Value* const> in,
                 std::span<Value* const> out) override;
  Status backward(const Context& ctx, std::span<Value* const> in,
                  std::span<Value* const> out) override;
  void shadow(const Context& ctx, std::span<const Shadow* const> in,
              std::span<Shadow* const> out) const override;
  void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                       ShadowGrads* dparams) const override;

 private:
  // The weights the passes read: fp32 var (kResidual) or the c working copy (kCompute).
  const Tensor& weights_read(const Parameter* p) const {
    return form_ == NormForm::kCompute ? p->weights() : p->var;
  }
  Status forward_compute(std::span<Value* const> in, std::span<Value* const> out);
  Status backward_compute(std::span<Value* const> in, std::span<Value* const> out);

  Parameter *w_, *b_;
  DType compute_;
  NormForm form_;
  Tensor y32_, mean_, rstd_, w32_, b32_, dy32_, dx_, dw_, db_;
};

// RmsNorm over the last dim (the library's RmsNorm, fp32), y rounded once to c. With two inputs
// it is AddRmsNorm: x = a + b (fp32, the residual stream's next value, the first output), then y.
class RmsNormLayer final : public Layer {
 public:
  RmsNormLayer(std::string name, Parameter* gamma, DType compute, bool add);
  Status forward(const Context& ctx, std::span<Value* const> in,
                 std::span<Value* const> out) override;
  Status backward(const Context& ctx, std::span<Value* const> in,
                  std::span<Value* const> out) override;
  void shadow(const Context& ctx, std::span<const Shadow* const> in,
              std::span<Shadow* const> out) const override;
  void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                       ShadowGrads* dparams) const override;

 private:
  Parameter* g_;
  DType compute_;
  bool add_;
  Tensor y32_, rstd_, g32_, dy32_, dx_, dg_;
};

// The residual add: fp32 a + b (one rounding).
class Add final : public Layer {
 public:
  explicit Add(std::string name) : Layer(std::move(name)) {}
  Status forward(const Context& ctx, std::span<Value* const> in,
                 std::span<Value* const> out) override;
  Status backward(const Context& ctx, std::span<Value* const> in,
                  std::span<Value* const> out) override;
  void shadow(const Context& ctx, std::span<const Shadow* const> in,
              std::span<Shadow* const> out) const override;
  void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                       ShadowGrads* dparams) const override;
};

// Causal multi-head self-attention over qkv (c [rows, 3d]: q, k, v, each head's dh columns
// contiguous) -> c [rows, d], and the attention probabilities (c [B, H, T, T]) as a second
// output. Scores q k^T in fp32 (the library's batched matmul on strided
// views of qkv), scaled by fp32(1/sqrt(dh)), masked to -inf above the diagonal, the library's
// Softmax in fp32; the probabilities rounded to c for the product with v. Backward through
// SoftmaxGrad in fp32.
class Attention final : public Layer {
 public:
  Attention(std::string name, int64_t heads, DType compute);
  Status forward(const Context& ctx, std::span<Value* const> in,
                 std::span<Value* const> out) override;
  Status backward(const Context& ctx, std::span<Value* const> in,
                  std::span<Value* const> out) override;
  void shadow(const Context& ctx, std::span<const Shadow* const> in,
              std::span<Shadow* const> out) const override;
  void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                       ShadowGrads* dparams) const override;

 private:
  int64_t heads_;
  DType compute_;
  Tensor p32_own_, o_, dp_, ds_, dsc_, part32_, partc_, dy_;
};

// GELU, the tanh form (the library's Gelu and GeluBackward), c -> c; the gradient rounded once to
// c by the operator (its underflows are not counted: the operator rounds inside), or, with
// fp32_grad (the MLP's), computed in fp32 and rounded once here, the underflows counted.
class Gelu final : public Layer {
 public:
  explicit Gelu(std::string name, bool fp32_grad = false)
      : Layer(std::move(name)), fp32_grad_(fp32_grad) {}
  Status forward(const Context& ctx, std::span<Value* const> in,
                 std::span<Value* const> out) override;
  Status backward(const Context& ctx, std::span<Value* const> in,
                  std::span<Value* const> out) override;
  void shadow(const Context& ctx, std::span<const Shadow* const> in,
              std::span<Shadow* const> out) const override;
  void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                       ShadowGrads* dparams) const override;

 private:
  bool fp32_grad_;
  Tensor scratch_, dx32_;
};

// ReLU on the stored bits, c -> c (it only selects: exact in every dtype): y = max(x, 0) with -0
// and negatives to +0 and NaN kept, as torch.relu; dx = dy where x > 0, else +0.
class Relu final : public Layer {
 public:
  explicit Relu(std::string name) : Layer(std::move(name)) {}
  Status forward(const Context& ctx, std::span<Value* const> in,
                 std::span<Value* const> out) override;
  Status backward(const Context& ctx, std::span<Value* const> in,
                  std::span<Value* const> out) override;
  void shadow(const Context& ctx, std::span<const Shadow* const> in,
              std::span<Shadow* const> out) const override;
  void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                       ShadowGrads* dparams) const override;

 private:
  Tensor scratch_;
};

// SwiGLU over the last dim (the library's SwiGlu and SwiGluGrad): c [rows, 2h] -> c [rows, h],
// swish of the first half times the second.
class SwiGluLayer final : public Layer {
 public:
  explicit SwiGluLayer(std::string name) : Layer(std::move(name)) {}
  Status forward(const Context& ctx, std::span<Value* const> in,
                 std::span<Value* const> out) override;
  Status backward(const Context& ctx, std::span<Value* const> in,
                  std::span<Value* const> out) override;
  void shadow(const Context& ctx, std::span<const Shadow* const> in,
              std::span<Shadow* const> out) const override;
  void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                       ShadowGrads* dparams) const override;

 private:
  Tensor scratch_;
};

// The mean cross-entropy of fp32 logits [rows, V] against ctx.targets (the library's
// CrossEntropyLoss; out: fp32 [1]). Backward: CrossEntropyLossGrad with the loss gradient
// ctx.loss_scale (times rows / grad_rows when the batch is a shard), fp32 [rows, V].
class CrossEntropy final : public Layer {
 public:
  explicit CrossEntropy(std::string name) : Layer(std::move(name)) {}
  Status forward(const Context& ctx, std::span<Value* const> in,
                 std::span<Value* const> out) override;
  Status backward(const Context& ctx, std::span<Value* const> in,
                  std::span<Value* const> out) override;
  void shadow(const Context& ctx, std::span<const Shadow* const> in,
              std::span<Shadow* const> out) const override;
  void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                       ShadowGrads* dparams) const override;
  const Tensor& log_prob() const { return log_prob_; }

 private:
  Tensor log_prob_, zloss_, lse_, targets_, dlogits_, scratch_;
};

// The classifier's loss (the library's SoftmaxCrossEntropyWithLogits on the logits widened
// exactly to fp32, against one-hot rows of ctx.targets): out is fp32 [rows], each row's loss.
// Backward: the operator's backprop times fp32(ctx.loss_scale / rows) (grad_rows when the batch
// is a shard; the factor computed in fp64 and rounded once), one fp32 product, rounded once to
// the logits' dtype (the underflows counted).
class SoftmaxCrossEntropy final : public Layer {
 public:
  explicit SoftmaxCrossEntropy(std::string name) : Layer(std::move(name)) {}
  Status forward(const Context& ctx, std::span<Value* const> in,
                 std::span<Value* const> out) override;
  Status backward(const Context& ctx, std::span<Value* const> in,
                  std::span<Value* const> out) override;
  void shadow(const Context& ctx, std::span<const Shadow* const> in,
              std::span<Shadow* const> out) const override;
  void shadow_backward(const Context& ctx, std::span<const Shadow* const> in,
                       std::span<const Shadow* const> dout, std::span<Shadow* const> din,
                       ShadowGrads* dparams) const override;

 private:
  Tensor logits32_, onehot_, backprop32_, scratch_;
};

}  // namespace mantissa::trainer
