// The validated, flattened arguments of one ApplyAdamD call, handed from the operator entry to
// its SIMD kernel.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

struct ApplyAdamDKernelArgs {
  DType dtype = DType::kFloat32;  // storage format of every tensor
  bool use_nesterov = false;
  int64_t n = 0;  // elements of var (and of m, v, grad and the outputs)
  const void* var = nullptr;
  const void* m = nullptr;
  const void* v = nullptr;
  const void* grad = nullptr;
  void* var_out = nullptr;  // may equal var (in place); otherwise disjoint from every input
  void* m_out = nullptr;
  void* v_out = nullptr;
  // Per-call fp32 constants, each computed once in scalar code.
  float lr_t = 0.0f;             // (lr * sqrt(1 - beta2_power)) / (1 - beta1_power)
  float beta1 = 0.0f;            // used by the Nesterov numerator
  float one_minus_beta1 = 0.0f;  // 1 - beta1
  float one_minus_beta2 = 0.0f;  // 1 - beta2
  float epsilon = 0.0f;
};

}  // namespace mantissa::detail
