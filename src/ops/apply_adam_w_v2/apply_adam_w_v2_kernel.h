// The validated, flattened arguments of one ApplyAdamWV2 call, handed from the operator entry to
// its SIMD kernel, and the per-call constants (shared with the multi-tensor step).
#pragma once

#include <cmath>
#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

// Per-call fp32 constants: computed in double from the fp32 attributes and the step, each
// rounded once (see the operator's spec).
struct AdamWConstants {
  float step_size = 0.0f;     // lr / (1 - beta1^t)
  float inv_bc2_sqrt = 0.0f;  // 1 / sqrt(1 - beta2^t)
  float decay = 0.0f;         // 1 - lr * weight_decay
  float one_minus_beta1 = 0.0f;
  float one_minus_beta2 = 0.0f;
  float beta2 = 0.0f;
  float eps = 0.0f;
};

// The constants of step t = steps_taken + 1 (steps_taken in double: an int64 step converted,
// exact up to 2^53, or an fp32 one widened), each computed in double from the fp32 attributes
// and rounded once to fp32: 1 - beta2^t cancels badly in fp32 for beta2 near 1 (PyTorch keeps
// these in double too).
inline AdamWConstants adam_w_constants(double steps_taken, float lr_f, float beta1_f, float beta2_f,
                                       float weight_decay_f, float eps) {
  const double steps = steps_taken + 1.0;
  const double lr = lr_f, beta1 = beta1_f, beta2 = beta2_f, weight_decay = weight_decay_f;
  AdamWConstants c;
  c.step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, steps)));
  c.inv_bc2_sqrt = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(beta2, steps)));
  c.decay = static_cast<float>(1.0 - lr * weight_decay);
  c.one_minus_beta1 = static_cast<float>(1.0 - beta1);
  c.one_minus_beta2 = static_cast<float>(1.0 - beta2);
  c.beta2 = beta2_f;
  c.eps = eps;
  return c;
}

struct ApplyAdamWV2KernelArgs {
  DType state_dtype = DType::kFloat32;  // var, m, v, max_grad_norm
  DType grad_dtype = DType::kFloat32;   // the state's, or fp16/bf16 with fp32 state
  bool amsgrad = false;
  bool maximize = false;
  int64_t n = 0;        // elements of every tensor but step
  void* var = nullptr;  // updated in place; the four written tensors are pairwise disjoint
  void* m = nullptr;
  void* v = nullptr;
  void* max_grad_norm = nullptr;  // read and written only with amsgrad
  const void* grad = nullptr;
  AdamWConstants c;
};

}  // namespace mantissa::detail
