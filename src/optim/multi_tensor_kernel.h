// The validated, flattened arguments of one multi-tensor optimizer step and of the list norm,
// handed from the entry points (optim/multi_tensor.cc, HWY_ONCE part) to the per-target kernels.
#pragma once

#include <cstdint>
#include <span>

#include "mantissa/dtype.h"
#include "mantissa/optim.h"
#include "mantissa/tensor.h"
#include "ops/apply_adam_d/apply_adam_d_kernel.h"
#include "ops/apply_adam_w_quant/quant_coder.h"
#include "ops/apply_adam_w_v2/apply_adam_w_v2_kernel.h"

namespace mantissa::detail {

// lowbias32 (C. Wellons): the 32-bit mixing function of stochastic rounding (the SIMD kernel's
// Mix32 computes the same on u32 lanes).
constexpr uint32_t mix32(uint32_t x) noexcept {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

// The per-tensor key of stochastic rounding: the seed and step words, then the tensor index,
// each folded in by one mix.
constexpr uint32_t sr_tensor_key(uint64_t seed, uint64_t step, uint32_t tensor) noexcept {
  uint32_t h = mix32(static_cast<uint32_t>(seed));
  h = mix32(h ^ static_cast<uint32_t>(seed >> 32));
  h = mix32(h ^ static_cast<uint32_t>(step));
  h = mix32(h ^ static_cast<uint32_t>(step >> 32));
  return mix32(h ^ tensor);
}

// The key of a moment's stream (0: m, 1: v): the tensor's key mixed with a constant of its own,
// so that the moments' bits are independent of the weights' and of each other.
constexpr uint32_t sr_moment_key(uint32_t tensor_key, uint32_t moment) noexcept {
  return mix32(tensor_key ^ (0x6D6F6D30u + moment));  // "mom0", "mom1"
}

// The largest block of the compact moments (kAdamWCompact); chunks of kDefaultGrain elements
// hold whole blocks of every format.
inline constexpr int64_t kQuantBlock = 256;

// kAdamWCompact: AdamW with moments in a MomentFormat (s0, s1 hold them), run block by block.
// kTorchSgd: PyTorch's SGD as CANN's FusedSgd computes it (s0 the momentum buffer).
enum class MtAlgo : int32_t { kSgd, kAdamD, kAdamW, kAdamWCompact, kTorchSgd };
// How the new weights are written: RNE to var's dtype; that plus a 16-bit working copy (fp32
// var); Kahan-compensated bf16; stochastically rounded bf16.
enum class MtWriter : int32_t { kPlain, kWorkingCopy, kKahan, kStochastic };

// One parameter. Pointers are contiguous buffers of `n` elements, validated pairwise disjoint
// (except the read-only grads of different parameters, which may overlap).
struct MtTensor {
  int64_t n = 0;
  DType state = DType::kFloat32;  // var (parameters) and its state
  DType grad_dtype = DType::kFloat32;
  DType working_dtype = DType::kFloat16;  // kWorkingCopy only
  MtWriter writer = MtWriter::kPlain;
  void* var = nullptr;
  void* s0 = nullptr;  // SGD accum; Adam m
  void* s1 = nullptr;  // SGD stat; Adam v
  void* s2 = nullptr;  // AdamW max_grad_norm (amsgrad)
  const void* grad = nullptr;
  void* grad_out = nullptr;  // kTorchSgd with a grad scale: the unscaled gradient written back
  void* working = nullptr;
  void* compensation = nullptr;
  uint32_t sr_key = 0;  // stochastic rounding: the (seed, step, tensor index) key
  // Stochastically rounded bf16 moments: the keys of m's and v's streams (sr_moment_key).
  uint32_t moment_key_m = 0, moment_key_v = 0;
  // Per-tensor scalars: SGD's lr and momentum and ApplyAdamD's constants depend on the dtype the
  // scalars are read in (var's).
  float sgd_lr = 0.0f;
  float sgd_m = 0.0f;
  bool sgd_write_state = false;  // momentum != 0 in var's dtype
  AdamDConstants adam_d;
  // AdamW's per-step constants (kAdamW, kAdamWCompact): one step count per tensor in FusedAdamw.
  AdamWConstants adam_w;
  // kAdamWCompact, quantized formats: one scale per block, each.
  float* scale_m = nullptr;
  float* scale_v = nullptr;
};

struct MtArgs {
  MtAlgo algo = MtAlgo::kSgd;
  std::span<const MtTensor> tensors;
  std::span<const int64_t> offsets;  // offsets[i] = elements before tensor i; back() = total
  bool unscale = false;              // g = (g / scale) * clip (a missing one is 1: exact)
  float scale = 1.0f;
  float clip = 1.0f;
  // SGD
  float sgd_dampening = 0.0f;
  float sgd_weight_decay = 0.0f;
  bool sgd_nesterov = false;
  // ApplyAdamD
  bool adam_d_nesterov = false;
  // kTorchSgd (every value used as given, in fp32)
  float torch_sgd_lr = 0.0f;
  float torch_sgd_momentum = 0.0f;
  float torch_sgd_one_minus_dampening = 1.0f;
  float torch_sgd_weight_decay = 0.0f;
  bool torch_sgd_nesterov = false;
  bool torch_sgd_momentum_buffer = false;  // momentum buffers given
  bool torch_sgd_first_step = false;       // the buffers are set to the gradient
  bool torch_sgd_write_grad = false;       // the unscaled gradient written back
  // kAdamWCompact: the format and its block; kInt8 the dynamic maps' coders, kInt4 the 4-bit
  // coders.
  MomentFormat format = MomentFormat::kFp32;
  int64_t block = kQuantBlock;
  const QuantCoder* coder_m = nullptr;
  const QuantCoder* coder_v = nullptr;
  const Int4Coder* int4_m = nullptr;
  const Int4Coder* int4_v = nullptr;
  bool amsgrad = false;
  bool maximize = false;
  bool stochastic_moments = false;  // kAdamWCompact with kBf16
};

// The list norm: per-tensor fp64 partials (sum of squares, sum of |x|, or max |x|).
struct ListNormArgs {
  std::span<const TensorView> grads;
  int norm_type = 2;             // 2, 1, or 0 for inf
  std::span<double> per_tensor;  // out: one value per tensor
};

}  // namespace mantissa::detail
