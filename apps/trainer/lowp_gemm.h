// A Linear layer's three products in FP8 or a microscaling format (docs/training_gpt.md, "FP8 and
// MX modes"): y = x W (forward), dx = dy W^T and dW = x^T dy (backward), each operand quantized by
// the recipe and the product emulated exactly by the library (mantissa/amp/fp8_scaling.h): the
// quantized operands are fp32 values, multiplied by MatMul in its one order, so every mode gives
// the same bits on every CPU, target and thread count.
//
//   fp8-delayed  tensor-wise scales from each tensor's amax history (Transformer Engine's
//                DelayedScaling, HYBRID: x and W E4M3, dy E5M2); QuantMax casts and returns the
//                amax in one pass. x and W are cast once and reused by the backward products.
//   fp8-current  tensor-wise scales from the tensor's own amax (two passes), HYBRID.
//   mxfp8        32-element E8M0 blocks along each product's reduction dim, E4M3 for every
//                tensor, the scale rule chosen (amp::mx_quantize_blocks: floor, rceil, even).
//                Each product quantizes its own operands (x along d_in for y, along the rows
//                for dW).
//   mxfp4        the same with FP4 E2M1 elements.
//   nvfp4        16-element blocks with E4M3 scales and an fp32 tensor scale (amp::nvfp4_*),
//                gradients rounded stochastically from the library's keyed bits.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/amp/fp8_scaling.h"
#include "trainer/graph.h"

namespace mantissa::trainer {

enum class GemmFormat : int32_t { kNone, kFp8Delayed, kFp8Current, kMxfp8, kMxfp4, kNvfp4 };
using amp::MxScaleRule;
const char* gemm_format_name(GemmFormat f);  // "fp8-delayed", ... ("none")
inline const char* mx_scale_rule_name(MxScaleRule r) { return amp::mx_scale_rule_name(r); }

struct GemmRecipe {
  GemmFormat format = GemmFormat::kNone;
  amp::DelayedScalingRecipe delayed;  // fp8-delayed (Transformer Engine's defaults: HYBRID)
  MxScaleRule mx_rule = MxScaleRule::kFloor;
  bool stochastic_gradients = true;  // nvfp4: dy rounded stochastically
  uint64_t seed = 0;
};

// What one operand's quantization did in the last pass that collected statistics.
struct OperandStats {
  std::string operand;  // "x", "w", "dy" (forward and dgrad), "x^T", "dy^T" (wgrad)
  std::string dtype;    // the element format: "e4m3", "e5m2", "e2m1"
  int64_t count = 0, nonzero = 0;
  int64_t underflow = 0;  // nonzero values that became zero
  int64_t saturated = 0;  // values beyond the format's largest code after scaling, clamped to it
  float amax = 0.0f;
  float scale = 0.0f;  // the tensor-wise scale (fp8-delayed, fp8-current, nvfp4's S); 0: blocks
  double error = 0.0;  // ||dequantized - x|| / ||x||
};

class LowpGemm {
 public:
  // `stream` keys the layer's stochastic-rounding streams.
  LowpGemm(std::string name, const GemmRecipe& recipe, uint64_t stream);
  const std::string& name() const { return name_; }
  const GemmRecipe& recipe() const { return recipe_; }

  // y [m, n] (fp32, fp16 or bf16) = x [m, k] @ w [k, n].
  Status forward(const Context& ctx, const Tensor& x, const Tensor& w, const TensorView& y);
  // After forward() on the same x and w: dx [m, k] and dw [k, n] (fp32) from dy [m, n] (fp32,
  // fp16 or bf16).
  Status backward(const Context& ctx, const Tensor& x, const Tensor& w, const Tensor& dy,
                  const TensorView& dx, const TensorView& dw);

  // fp8-delayed: the amaxes (x, w, dy) recorded in this optimizer step; record() merges another
  // rank's (the max, NaN propagating); end_step() ends the step (every scaling's update()).
  std::array<float, 3> pending_amax() const;
  void record(const std::array<float, 3>& amax);
  void end_step();
  // The delayed scalings' state (x, w, dy), each amp::DelayedScaling::state(); empty for the
  // other formats.
  std::vector<std::string> state() const;
  Status load_state(const std::vector<std::string>& state);

  const std::vector<OperandStats>& stats() const { return stats_; }

 private:
  struct Operand {  // one quantized operand: codes, block scales, the tensor scale
    std::vector<uint8_t> codes, scales;
    std::vector<int64_t> shape;
    DType dtype = DType::kFloat8E4M3FN;
    float scale = 1.0f, scale_inv = 1.0f;  // tensor-wise: cast with scale, read back times inv
  };
  Status tensorwise(const Context& ctx, const TensorView& src, int which, Operand* out,
                    const char* label);
  Status blocks(const Context& ctx, const TensorView& src, bool gradient, uint64_t salt,
                Operand* out, const char* label);
  Status product(const Operand& a, const Operand& b, bool transpose_b, const TensorView& out) const;
  void note(const Context& ctx, const char* label, const TensorView& src, const Operand& q);

  std::string name_;
  GemmRecipe recipe_;
  uint64_t stream_;
  std::array<amp::DelayedScaling, 3> delayed_;  // x, w, dy
  Operand xq_, wq_, dyq_, aq_, bq_;             // cast x, W (tensor-wise, reused), scratch
  std::vector<uint8_t> t_src_;                  // a transposed source
  std::vector<OperandStats> stats_;
};

}  // namespace mantissa::trainer
