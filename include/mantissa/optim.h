// Fused multi-tensor optimizer steps (the library's own C++ API; no aclnn entry): SGD,
// ApplyAdamD and AdamW (ApplyAdamWV2's math; its moments in fp32/fp16/bf16, 8 or 4 bits or FP8)
// over a list of parameters in one parallel region, with optional loss-scale unscaling, found_inf
// skipping and a clip coefficient in the same pass, fp32 master weights with a 16-bit working copy,
// and Kahan-compensated or stochastically rounded bf16 weights. Plus the global gradient norm and
// clipping over a list.
//
// Each element gets exactly the bits the single-tensor operator gives (docs/optim.md says when
// and how): the element-wise math is the same code.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "mantissa/export.h"
#include "mantissa/ops/apply_adam_w_v2.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

// How new bf16 weights are rounded when there is no fp32 master (var bf16). kNearest is the
// single-tensor operators' rounding; the other two are opt-in (docs/optim.md has the formulas).
enum class WeightRounding : int32_t {
  kNearest = 0,     // round to nearest even (RNE)
  kKahan = 1,       // RNE with a bf16 compensation buffer per weight (`compensation`)
  kStochastic = 2,  // stochastic rounding, counter-based bits keyed by (seed, step, tensor, i)
};

// What every fused step takes besides its parameters and hyper-parameters.
struct FusedStepOptions {
  // PyTorch's fused-optimizer contract. grad_scale: FLOAT, one element; each gradient element is
  // read as g = fp32(grad) / grad_scale (one fp32 division). found_inf: FLOAT, one element; when
  // it is not 0 the call writes nothing at all. Both read only.
  std::optional<TensorView> grad_scale;
  std::optional<TensorView> found_inf;
  // Gradient clipping inside the pass: g = g * clip_coef, after the division above (see
  // clip_coefficient()). Unset: no multiplication.
  std::optional<float> clip_coef;
  // bf16 weights without fp32 master (every parameter whose var is BFLOAT16).
  WeightRounding rounding = WeightRounding::kNearest;
  uint64_t seed = 0;      // stochastic rounding: the stream
  uint64_t rng_step = 0;  // stochastic rounding: the step counter (advance it every call)
  // multi_tensor_adam_w_compact with MomentFormat::kBf16 only (161002 elsewhere): the new m and
  // v are stochastically rounded to bf16 instead of to nearest, with the bits of
  // sr_moment_bits(seed, rng_step, tensor index, element, 0 for m / 1 for v): streams of their
  // own, apart from the weights'.
  bool stochastic_moments = false;
};

// One parameter of multi_tensor_sgd: SGD's tensors (docs/ops/sgd.md), updated in place.
// parameters, accum, stat: FLOAT, FLOAT16 or BFLOAT16, one dtype; gradient: that dtype, or
// FLOAT16/BFLOAT16 with FLOAT parameters (master weights). All of one shape, rank 0..8, empty
// allowed, contiguous.
struct SgdParamTensors {
  TensorView parameters;
  TensorView gradient;
  TensorView accum;
  TensorView stat;
  // Master weights only (FLOAT parameters): a FLOAT16 or BFLOAT16 tensor of the parameters'
  // shape that receives RNE(new parameters) in the same pass.
  std::optional<TensorView> working;
  // WeightRounding::kKahan with BFLOAT16 parameters: BFLOAT16, the parameters' shape (required).
  std::optional<TensorView> compensation;
};

// SGD's hyper-parameters for the whole list. learning_rate and momentum are the values of the
// single-tensor operator's one-element tensors: each parameter reads them rounded (RNE) to its
// own parameters' dtype, as that operator reads a one-element tensor of that dtype holding them.
struct MultiSgdParams {
  float learning_rate = 0.0f;
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;  // >= 0, not NaN
  bool nesterov = false;      // requires dampening == 0
};

// One parameter of multi_tensor_apply_adam_d: ApplyAdamD's tensors, updated in place (var, m, v
// one dtype; grad that dtype or FLOAT16/BFLOAT16 with FLOAT state).
struct AdamDParamTensors {
  TensorView var, m, v, grad;
  std::optional<TensorView> working;
  std::optional<TensorView> compensation;
};

// ApplyAdamD's six scalars as values; each parameter reads them rounded (RNE) to its var's dtype
// (see MultiSgdParams).
struct MultiAdamDParams {
  float beta1_power = 0.0f;
  float beta2_power = 0.0f;
  float lr = 0.0f;
  float beta1 = 0.0f;
  float beta2 = 0.0f;
  float epsilon = 0.0f;
  bool use_nesterov = false;
};

// One parameter of multi_tensor_adam_w: ApplyAdamWV2's tensors, updated in place.
struct AdamWParamTensors {
  TensorView var, m, v;
  std::optional<TensorView> max_grad_norm;  // required with amsgrad
  TensorView grad;
  std::optional<TensorView> working;
  std::optional<TensorView> compensation;
};

// ApplyAdamWV2's attributes (fp32 values, used as given) and the number of steps already taken
// (the step computed is step + 1, as ApplyAdamWV2's step tensor). The constants are computed
// once per call in double, as that operator computes them.
struct MultiAdamWParams {
  ApplyAdamWV2Params hyper;
  int64_t step = 0;
};

// AdamW with Adam's moments in 8 bits (bitsandbytes' block-wise dynamic quantization): m and v
// are UINT8 codes into dynamic_quant_map(true) and dynamic_quant_map(false), scaled per block of
// kAdamW8bitBlock elements by an FLOAT absmax. Each step dequantizes them, runs AdamW's math (the
// bits of ApplyAdamWV2 on the dequantized moments), and codes the new moments as ApplyAdamWQuant
// does (block absmax, CANN's search, m's sign rule). 2 bytes of moments per parameter instead of
// 8. Fresh state: codes 0 and absmax 0 (every moment decodes to 0).
inline constexpr int64_t kAdamW8bitBlock = 256;

// One parameter of multi_tensor_adam_w_8bit, updated in place. var: FLOAT, FLOAT16 or BFLOAT16
// (with working / compensation as in AdamWParamTensors); grad: var's dtype, or FLOAT16/BFLOAT16
// with FLOAT var; m, v: UINT8, var's shape; absmax_m, absmax_v: FLOAT, rank 1,
// ceil(var elements / kAdamW8bitBlock) elements.
struct AdamW8bitParamTensors {
  TensorView var, m, v, absmax_m, absmax_v, grad;
  std::optional<TensorView> working;
  std::optional<TensorView> compensation;
};

// AdamW with Adam's moments in a compact format (docs/optim.md#compact-moments has each format's
// rule). The quantized formats keep one FLOAT scale per block of moment_block(format) elements.
enum class MomentFormat : int32_t {
  kFp32 = 0,  // FLOAT moments (with any var dtype)
  kBf16 = 1,  // BFLOAT16 moments, each rounded to nearest even
  // UINT8 codes into dynamic_quant_map(true) (m) and (false) (v), blocks of 256, scale = the
  // block's absmax: multi_tensor_adam_w_8bit's format.
  kInt8 = 2,
  // Two 4-bit codes per UINT8 byte (element 2i in the high nibble, 2i + 1 in the low), codes
  // into int4_moment_map(true) (m) and (false) (v), blocks of 128, scale = max(absmax, 1e-12),
  // each value coded as torchao's 4-bit optimizer state codes it (nearest, the upper on a tie).
  kInt4 = 3,
  // FLOAT8_E4M3FN (or UINT8) codes of moment / scale, rounded to nearest even and saturated,
  // blocks of 256, scale = max(absmax, 1e-12) / 448 (torchao's FP8 optimizer state).
  kFp8E4M3 = 4,
};

// The block of a format (256, or 128 for kInt4; 0 for the unscaled kFp32 and kBf16), and the
// elements of each moment's tensor for n parameters (n, or ceil(n / 2) bytes for kInt4).
MANTISSA_API int64_t moment_block(MomentFormat f) noexcept;
MANTISSA_API int64_t moment_elements(MomentFormat f, int64_t n) noexcept;

// The 16-entry maps of kInt4: signed (m), bitsandbytes' dynamic rule with 3 exponent bits
// (10^-2..10^0, each entry computed in double and rounded once, then 0 and 1), as torchao's
// create_dynamic_map(True, 3, 4); unsigned (v), k / 16 for k = 1..16 (no zero), torchao's.
MANTISSA_API std::array<float, 16> int4_moment_map(bool is_signed);

// One parameter of multi_tensor_adam_w_compact, updated in place. var, grad, working,
// compensation: as in AdamWParamTensors. m, v: the format's dtype (kFp32 FLOAT, kBf16 BFLOAT16,
// kInt8 UINT8, kFp8E4M3 FLOAT8_E4M3FN or UINT8: var's shape; kInt4: UINT8, rank 1,
// ceil(n / 2) elements). scale_m, scale_v: FLOAT, rank 1, ceil(n / moment_block) elements, for
// the quantized formats only (absent otherwise). Fresh state: every code and scale 0 (the
// moments decode to 0).
struct CompactAdamWParamTensors {
  TensorView var, m, v, grad;
  std::optional<TensorView> scale_m, scale_v;
  std::optional<TensorView> working;
  std::optional<TensorView> compensation;
};

// Updates every parameter of the list in one parallel region. Everything is validated before
// anything is written (a bad argument anywhere writes nothing anywhere); messages name the
// parameter ("params[3]").
MANTISSA_API Status multi_tensor_sgd(std::span<const SgdParamTensors> params,
                                     const MultiSgdParams& p, const FusedStepOptions& o = {});
MANTISSA_API Status multi_tensor_sgd_validate(std::span<const SgdParamTensors> params,
                                              const MultiSgdParams& p,
                                              const FusedStepOptions& o = {});
MANTISSA_API Status multi_tensor_apply_adam_d(std::span<const AdamDParamTensors> params,
                                              const MultiAdamDParams& p,
                                              const FusedStepOptions& o = {});
MANTISSA_API Status multi_tensor_apply_adam_d_validate(std::span<const AdamDParamTensors> params,
                                                       const MultiAdamDParams& p,
                                                       const FusedStepOptions& o = {});
MANTISSA_API Status multi_tensor_adam_w(std::span<const AdamWParamTensors> params,
                                        const MultiAdamWParams& p, const FusedStepOptions& o = {});
MANTISSA_API Status multi_tensor_adam_w_validate(std::span<const AdamWParamTensors> params,
                                                 const MultiAdamWParams& p,
                                                 const FusedStepOptions& o = {});
// amsgrad is not available with 8-bit moments (bitsandbytes has none either): 161002.
MANTISSA_API Status multi_tensor_adam_w_8bit(std::span<const AdamW8bitParamTensors> params,
                                             const MultiAdamWParams& p,
                                             const FusedStepOptions& o = {});
MANTISSA_API Status multi_tensor_adam_w_8bit_validate(std::span<const AdamW8bitParamTensors> params,
                                                      const MultiAdamWParams& p,
                                                      const FusedStepOptions& o = {});
// Each block: the moments decoded, AdamW's math (the bits of ApplyAdamWV2 on the decoded
// moments), the new moments coded in the format. amsgrad is refused (161002), as for 8 bits.
MANTISSA_API Status multi_tensor_adam_w_compact(std::span<const CompactAdamWParamTensors> params,
                                                const MultiAdamWParams& p, MomentFormat format,
                                                const FusedStepOptions& o = {});
MANTISSA_API Status multi_tensor_adam_w_compact_validate(
    std::span<const CompactAdamWParamTensors> params, const MultiAdamWParams& p,
    MomentFormat format, const FusedStepOptions& o = {});

// ---- Global gradient norm and clipping ------------------------------------------------------

enum class NormType : int32_t { kL2 = 0, kL1 = 1, kInf = 2 };

struct GradNormOptions {
  NormType norm_type = NormType::kL2;
  // When given (FLOAT, one element), the grads are taken as scaled by it and the norm reported
  // is that of the unscaled grads: norm(grads) / |grad_scale|, the division in double.
  std::optional<TensorView> grad_scale;
};

// The total norm of every element of every tensor of `grads` (FLOAT, FLOAT16, BFLOAT16, mixed,
// any shapes, empty allowed), accumulated in fp64 with the deterministic reduction primitive:
// the same bits for every thread count and SIMD target. Non-finite elements give a non-finite
// norm (NaN or inf).
MANTISSA_API Status grad_norm(std::span<const TensorView> grads, double* norm,
                              const GradNormOptions& o = {});

// torch.nn.utils.clip_grad_norm_'s rule: coef = max_norm / (norm + 1e-6) in double; returns
// fp32(coef) when coef < 1, and nothing otherwise (no scaling). A NaN norm gives nothing too
// (the comparison is false); check the norm first (clip_grad_norm's error_if_nonfinite).
MANTISSA_API std::optional<float> clip_coefficient(double norm, double max_norm) noexcept;

struct ClipGradNormOptions {
  GradNormOptions norm;
  // A non-finite norm: return 161002 (and scale nothing) instead of scaling by a NaN or zero
  // coefficient.
  bool error_if_nonfinite = false;
};

// The clipping as its own pass: computes the norm (reported in *total_norm, may be null), and
// when clip_coefficient(norm, max_norm) gives a coefficient, multiplies every gradient element
// by it in place (fp32 product, rounded once to the gradient's dtype; one parallel region over
// the list). To clip inside a fused step instead, pass clip_coefficient(norm, max_norm) as
// FusedStepOptions::clip_coef and leave the grads alone.
MANTISSA_API Status clip_grad_norm(std::span<const TensorView> grads, double max_norm,
                                   double* total_norm, const ClipGradNormOptions& o = {});

// The 32-bit mixing function of stochastic rounding and its per-element bits (docs/optim.md),
// exposed so that callers and tests can reproduce them.
MANTISSA_API uint32_t sr_mix32(uint32_t x) noexcept;
MANTISSA_API uint32_t sr_bits(uint64_t seed, uint64_t step, uint32_t tensor_index,
                              uint64_t element_index) noexcept;
// The 32 random bits of the stochastically rounded bf16 moments (FusedStepOptions::
// stochastic_moments), as sr_bits() gives the weights': moment 0 (m) or 1 (v) of element
// `element_index` of tensor `tensor_index`; the new moment is float_to_bf16_stochastic(f,
// bits >> 16).
MANTISSA_API uint32_t sr_moment_bits(uint64_t seed, uint64_t step, uint32_t tensor_index,
                                     uint64_t element_index, uint32_t moment) noexcept;
// fp32 -> bf16 bits by stochastic rounding with 16 random bits r (the low 16 bits of r are
// used): NaN becomes 0x7FC0, everything else (bits + r) >> 16 on the sign-magnitude encoding.
MANTISSA_API uint16_t float_to_bf16_stochastic(float f, uint32_t r) noexcept;

}  // namespace mantissa
