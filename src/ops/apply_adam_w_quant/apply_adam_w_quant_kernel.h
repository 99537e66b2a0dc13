// The validated, flattened arguments of one ApplyAdamWQuant call, handed from the operator entry
// to its SIMD kernel, with the per-call fp32 constants.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

struct ApplyAdamWQuantKernelArgs {
  DType dtype = DType::kFloat32;  // var and grad
  int64_t n = 0;                  // elements of var, grad, m, v
  int64_t block = 256;            // elements per absmax
  void* var = nullptr;            // the written tensors are pairwise disjoint
  const void* grad = nullptr;
  uint8_t* m = nullptr;
  uint8_t* v = nullptr;
  const float* qmap_m = nullptr;  // 256 entries each
  const float* qmap_v = nullptr;
  float* absmax_m = nullptr;  // one per block
  float* absmax_v = nullptr;
  // Per-call constants, each computed in double from the fp32 attributes and rounded once.
  float gnorm_scale = 1.0f;
  float beta1 = 0.0f, one_minus_beta1 = 0.0f;
  float beta2 = 0.0f, one_minus_beta2 = 0.0f;
  float eps_c2 = 0.0f;     // eps * sqrt(1 - beta2^t)
  float step_size = 0.0f;  // -lr * sqrt(1 - beta2^t) / (1 - beta1^t)
  float decay = 1.0f;      // 1 - lr * weight_decay
  bool decay_on = false;   // weight_decay > 0
};

}  // namespace mantissa::detail
