// The validated, flattened arguments of RmsNorm and RmsNormGrad, handed from the operator entries
// to their SIMD kernels.
#pragma once

#include <cstdint>

#include "core/rows.h"
#include "mantissa/dtype.h"

namespace mantissa::detail {

struct RmsNormKernelArgs {
  DType x_dtype = DType::kFloat32;      // x and y
  DType gamma_dtype = DType::kFloat32;  // x's dtype or fp32
  int64_t rows = 0;                     // rows of n elements, contiguous
  int64_t n = 0;
  const void* x = nullptr;
  const void* gamma = nullptr;
  void* y = nullptr;
  float* rstd = nullptr;  // one per row
  double epsilon = 1e-6;
};

struct RmsNormGradKernelArgs {
  DType x_dtype = DType::kFloat32;  // dy, x and dx
  DType gamma_dtype = DType::kFloat32;
  int64_t rows = 0;
  int64_t n = 0;
  const void* dy = nullptr;
  const void* x = nullptr;
  const float* rstd = nullptr;  // one per row
  const void* gamma = nullptr;
  void* dx = nullptr;
  float* dgamma = nullptr;     // n
  ColumnSumPlan plan;          // dgamma's row blocks
  double* partials = nullptr;  // plan.blocks * n
};

}  // namespace mantissa::detail
