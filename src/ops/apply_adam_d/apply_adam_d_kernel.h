// The validated, flattened arguments of one ApplyAdamD call, handed from the operator entry to
// its SIMD kernel, and the per-call constants (shared with the multi-tensor step).
#pragma once

#include <cmath>
#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

// Per-call fp32 constants, each computed once in scalar code.
struct AdamDConstants {
  float lr_t = 0.0f;             // (lr * sqrt(1 - beta2_power)) / (1 - beta1_power)
  float beta1 = 0.0f;            // used by the Nesterov numerator
  float one_minus_beta1 = 0.0f;  // 1 - beta1
  float one_minus_beta2 = 0.0f;  // 1 - beta2
  float epsilon = 0.0f;
};

// The constants from the six scalars as the operator reads them (already widened from var's
// dtype), in the normative grouping; std::sqrt(float) is correctly rounded.
inline AdamDConstants adam_d_constants(float beta1_power, float beta2_power, float lr, float beta1,
                                       float beta2, float epsilon) {
  AdamDConstants c;
  c.lr_t = (lr * std::sqrt(1.0f - beta2_power)) / (1.0f - beta1_power);
  c.beta1 = beta1;
  c.one_minus_beta1 = 1.0f - beta1;
  c.one_minus_beta2 = 1.0f - beta2;
  c.epsilon = epsilon;
  return c;
}

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
  AdamDConstants c;
};

}  // namespace mantissa::detail
