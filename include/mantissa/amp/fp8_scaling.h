// FP8 scaling recipes on the QuantMax operator (docs/fp8_training.md):
//   - tensor-wise delayed scaling, Transformer Engine's DelayedScaling: each tensor keeps a
//     history of its amax; the scale it is cast with comes from the history of earlier steps;
//   - tensor-wise current scaling: the scale comes from this step's own amax, optionally rounded
//     down to a power of two.
// The state (scale, history, step count) is a versioned JSON text that load_state() restores
// bit for bit, so a resumed run casts exactly as an uninterrupted one.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/dtype.h"
#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa::amp {

// E4M3: every tensor FLOAT8_E4M3FN. Hybrid: forward tensors (weights, activations) E4M3FN,
// gradients FLOAT8_E5M2 (Transformer Engine's HYBRID).
enum class Fp8Format : int32_t { kE4M3 = 0, kHybrid = 1 };
enum class Fp8Role : int32_t { kForward = 0, kGradient = 1 };
enum class AmaxComputeAlgo : int32_t { kMax = 0, kMostRecent = 1 };

// The FP8 dtype of a tensor of this role under this format.
MANTISSA_API DType fp8_dtype(Fp8Format format, Fp8Role role) noexcept;
// The largest finite value of an FP8 dtype: 448 (E4M3FN), 57344 (E5M2); 0 for any other dtype.
MANTISSA_API float fp8_max(DType fp8) noexcept;

// Transformer Engine's DelayedScaling defaults.
struct DelayedScalingRecipe {
  Fp8Format fp8_format = Fp8Format::kHybrid;
  int64_t amax_history_len = 1024;  // [1, 65536]
  AmaxComputeAlgo amax_compute_algo = AmaxComputeAlgo::kMax;
  int32_t margin = 0;  // [-126, 127]: the scale is divided by 2^margin
};

// One tensor's delayed scaling. A training step records the amax of every cast of the tensor
// (record(), or quantize(), which casts and records), then calls update() once:
//   amax      = max of the history (NaN if any entry is NaN), or its entry 0 (most_recent)
//   scale     = (fp8_max * 2^-margin) / amax in fp32 (the product exact, one rounding), when
//               amax is finite and > 0; otherwise the scale is kept. An infinite result (a tiny
//               amax) becomes FLT_MAX.
//   history   rolled by one (entry 0 becomes the last, the others move down one), then entry 0
//             set to 0 for the next step's amax: the history holds the last amax_history_len
//             steps' amaxes.
// The first step casts with scale 1 (no history yet). Several casts in one step (gradient
// accumulation's micro-batches) keep the largest amax: record() takes the max into entry 0.
class MANTISSA_API DelayedScaling {
 public:
  DelayedScaling();  // the default recipe, a forward tensor

  // Validates the recipe (161002 naming the field and its value); *out unchanged on error.
  static Status create(const DelayedScalingRecipe& recipe, Fp8Role role, DelayedScaling* out);

  const DelayedScalingRecipe& recipe() const { return recipe_; }
  Fp8Role role() const { return role_; }
  DType dtype() const { return dtype_; }
  float scale() const { return scale_; }
  float scale_inv() const { return 1.0f / scale_; }  // what a cast value is multiplied back by
  std::span<const float> amax_history() const { return history_; }
  int64_t steps() const { return steps_; }  // update() calls

  // history[0] = max(history[0], amax); a NaN on either side gives NaN.
  void record(float amax);
  // The end of a step (the rule above).
  void update();
  // QuantMax(x, scale()) into y (dtype(); x FLOAT, FLOAT16 or BFLOAT16), then record(amax of x).
  Status quantize(const TensorView& x, const TensorView& y);

  // Format "mantissa.fp8_delayed_scaling" version 1: the recipe, the role, the scale and the
  // history as fp32 bit patterns (NaN included), the step count. load_state() restores it
  // exactly; malformed text, another format or version, or invalid values give 161002 and leave
  // the state unchanged.
  std::string state() const;
  Status load_state(std::string_view text);

 private:
  DelayedScalingRecipe recipe_;
  Fp8Role role_ = Fp8Role::kForward;
  DType dtype_ = DType::kFloat8E4M3FN;
  float scale_ = 1.0f;
  std::vector<float> history_;
  int64_t steps_ = 0;
};

struct CurrentScalingOptions {
  bool power_of_two_scales = false;  // round the scale down to a power of two
  float amax_epsilon = 0.0f;         // amax below it is taken as it (>= 0)
};

// Transformer Engine's rule: amax = max(amax, epsilon); scale 1 when amax is 0, infinite or NaN;
// otherwise fp8_max / amax in fp32, FLT_MAX where that overflows, rounded down to a power of two
// when asked (its exponent kept, its mantissa cleared).
MANTISSA_API float current_scale(float amax, DType fp8,
                                 const CurrentScalingOptions& o = {}) noexcept;

// Casts x (FLOAT, FLOAT16 or BFLOAT16) to y (FLOAT8_E4M3FN or FLOAT8_E5M2) with the scale of its
// own amax: max |x| (exact; one pass), current_scale(), then QuantMax (a second pass). Writes
// the scale and the amax used; nothing is written on error.
MANTISSA_API Status current_scaling_quantize(const TensorView& x, const TensorView& y,
                                             const CurrentScalingOptions& o, float* scale,
                                             float* amax);

// ---- Emulated FP8 matrix products ------------------------------------------------------------
//
// Every FP8 value is exactly an fp32 value, and so is its product with a power-of-two MX scale, so
// the products below decode their operands exactly and multiply them with MatMul: the library's
// one fused-multiply-add order, the same bits on every CPU, target and thread count. They claim
// exactness and diagnosis, not speed.

// A tensor-wise FP8 operand: codes [rows, cols] (FLOAT8_E4M3FN or FLOAT8_E5M2, row-major,
// contiguous), each standing for its value times scale_inv (DelayedScaling::scale_inv(), or
// 1 / current_scale).
struct Fp8Matrix {
  TensorView codes;
  float scale_inv = 1.0f;
};

// out [m, n] = (A @ B) * fp32(a.scale_inv * b.scale_inv), Transformer Engine's FP8 GEMM: the
// codes decoded to fp32, the product of the decoded matrices by MatMul in fp32, then each
// element multiplied once by the combined factor (one fp32 product) and rounded once to out's
// dtype (FLOAT, FLOAT16 or BFLOAT16). A is [m, k]; B is [k, n], or [n, k] with transpose_b (a
// weight as Linear stores it). Validation first (161002 naming the operand); nothing written on
// error.
MANTISSA_API Status fp8_matmul(const Fp8Matrix& a, const Fp8Matrix& b, const TensorView& out,
                               bool transpose_b = false);

// An MX operand quantized along k: codes [rows, k] (FLOAT8_E4M3FN or FLOAT8_E5M2; or, for MXFP4,
// FLOAT4_E2M1 / FLOAT4_E1M2, packed, k even) and E8M0
// scales of blocks of 32 along k in DynamicMxQuant's last-axis layout ([rows, ceil(ceil(k / 32)
// / 2), 2]).
struct MxMatrix {
  TensorView codes;
  TensorView scales;
};

// MX quantization along k with the block scale rule chosen (torchao's FLOOR, RCEIL and EVEN;
// docs/fp8_training.md#mx-scale-rules):
//   kFloor  the OCP rule: code = E(amax) - emax (DynamicMxQuant scale_alg 0)
//   kRceil  amax / max rounded up to a power of two: DynamicMxQuant scale_alg 1 for FP8; for
//           FLOAT4_E2M1 its scale_alg 2 (the exponent up when amax's significand, rounded to
//           bf16, exceeds 1.5)
//   kEven   torchao's EVEN: amax's significand rounded half up to the element's mantissa bits
//           (3 E4M3, 2 E5M2, 1 E2M1), then the OCP rule on the result; code clamped to
//           [0, 254]
// Elements: x * 2^(127 - code) in fp32, rounded to nearest even and saturated. A block holding
// an infinity or a NaN gets code 0xFF and NaN elements (E2M1, which has no NaN: +0).
enum class MxScaleRule : int32_t { kFloor = 0, kRceil = 1, kEven = 2 };
MANTISSA_API const char* mx_scale_rule_name(MxScaleRule rule) noexcept;

// x [rows, k] (FLOAT, FLOAT16 or BFLOAT16, contiguous) into m: codes [rows, k]
// (FLOAT8_E4M3FN, FLOAT8_E5M2 or FLOAT4_E2M1, k even) and scales in DynamicMxQuant's last-axis
// layout [rows, ceil(ceil(k / 32) / 2), 2]. Validation first (161002 naming the argument);
// nothing is written on error.
MANTISSA_API Status mx_quantize_blocks(const TensorView& x, const MxMatrix& m, MxScaleRule rule);

// out [m, n] = A @ B^T for A [m, k] and B [n, k], both quantized along k (MXFP8 training's
// layout): each operand dequantized exactly as AntiMxQuant does (FP8 value times 2^(code - 127)
// in fp32), then MatMul in fp32, rounded once to out's dtype.
MANTISSA_API Status mx_matmul(const MxMatrix& a, const MxMatrix& b, const TensorView& out);

// ---- NVFP4: FP4 E2M1 elements, an FP8 E4M3 scale per 16 elements, an fp32 tensor scale -------
//
// NVIDIA's two-level FP4 format (docs/fp8_training.md#nvfp4), quantized along the last dim:
//   S      = fp32(2688 / amax)                 the tensor's encode scale (2688 = 448 * 6); 1 when
//                                              amax is 0, infinite or NaN; FLT_MAX if it overflows
//   s      = E4M3(fp32(bmax / 6) * S)          each 16-element block's scale (bmax its max |x|),
//                                              rounded to nearest even, saturated at 448
//   q      = E2M1(fp32(x) * fp32(S / s))       each element (0 when s is 0), rounded to nearest
//                                              even (or stochastically) and saturated at 6
//   x'     = (q * s) * fp32(1 / S)             the value it stands for (q * s exact)
// A block holding an infinity or a NaN gets the E4M3 NaN code (0x7F) and zero elements, so it
// decodes to NaN.
struct Nvfp4Matrix {
  TensorView codes;               // FLOAT4_E2M1 [rows, k], packed; k a multiple of 16
  TensorView scales;              // FLOAT8_E4M3FN [rows, k / 16]
  float tensor_scale_inv = 1.0f;  // fp32(1 / S)
};

struct Nvfp4Options {
  // The amax S comes from; unset: max |x| of x itself (one pass).
  std::optional<float> amax;
  // Stochastic rounding of the elements (for gradients): between the two FP4 values around
  // |x * S / s|, up with probability (|v| - lower) / (upper - lower), decided by the library's
  // keyed bits sr_bits(seed, step, 0, element index) (mantissa/optim.h): the same bits on every
  // target and thread count.
  bool stochastic = false;
  uint64_t seed = 0;
  uint64_t step = 0;
};

// Quantizes x [rows, k] (FLOAT, FLOAT16 or BFLOAT16, contiguous) into m.codes and m.scales and
// sets m.tensor_scale_inv. Validation first (161002 naming the argument); nothing is written on
// error.
MANTISSA_API Status nvfp4_quantize(const TensorView& x, Nvfp4Matrix& m, const Nvfp4Options& o = {});
// out [rows, k] (FLOAT, FLOAT16 or BFLOAT16) = the values m stands for, rounded once to out's
// dtype.
MANTISSA_API Status nvfp4_dequantize(const Nvfp4Matrix& m, const TensorView& out);
// out [m, n] = (A @ B^T) * fp32(a.tensor_scale_inv * b.tensor_scale_inv) for A [m, k] and B
// [n, k]: each operand decoded exactly to q * s in fp32, MatMul in fp32 (the library's one
// order), then the tensor scales applied once and the result rounded once to out's dtype (a
// block-scaled FP4 GEMM's math).
MANTISSA_API Status nvfp4_matmul(const Nvfp4Matrix& a, const Nvfp4Matrix& b, const TensorView& out);

}  // namespace mantissa::amp
