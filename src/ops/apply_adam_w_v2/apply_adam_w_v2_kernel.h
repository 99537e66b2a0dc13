// The validated, flattened arguments of one ApplyAdamWV2 call, handed from the operator entry to
// its SIMD kernel.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

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
  // Per-call fp32 constants: computed in double from the fp32 attributes and the step, each
  // rounded once (see the operator's spec).
  float step_size = 0.0f;     // lr / (1 - beta1^t)
  float inv_bc2_sqrt = 0.0f;  // 1 / sqrt(1 - beta2^t)
  float decay = 0.0f;         // 1 - lr * weight_decay
  float one_minus_beta1 = 0.0f;
  float one_minus_beta2 = 0.0f;
  float beta2 = 0.0f;
  float eps = 0.0f;
};

}  // namespace mantissa::detail
