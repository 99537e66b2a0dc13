// The validated, flattened arguments of LayerNorm and LayerNormGrad, handed from the operator
// entries to their SIMD kernels.
#pragma once

#include <cstdint>

#include "core/rows.h"
#include "mantissa/dtype.h"

namespace mantissa::detail {

struct LayerNormKernelArgs {
  DType x_dtype = DType::kFloat32;      // input and out
  DType param_dtype = DType::kFloat32;  // weight and bias (x's dtype or fp32)
  DType stats_dtype = DType::kFloat32;  // mean and rstd (x's dtype or fp32)
  int64_t rows = 0;                     // rows of n elements, contiguous
  int64_t n = 0;
  const void* x = nullptr;
  const void* weight = nullptr;  // null: 1
  const void* bias = nullptr;    // null: 0
  void* out = nullptr;
  void* mean = nullptr;  // one per row; null: not written
  void* rstd = nullptr;
  double eps = 1e-5;
};

struct LayerNormGradKernelArgs {
  DType x_dtype = DType::kFloat32;      // dy, x and dx
  DType param_dtype = DType::kFloat32;  // weight, dweight and dbias
  DType stats_dtype = DType::kFloat32;  // mean and rstd
  int64_t rows = 0;
  int64_t n = 0;
  const void* dy = nullptr;
  const void* x = nullptr;
  const void* mean = nullptr;  // one per row
  const void* rstd = nullptr;
  const void* weight = nullptr;  // null: 1
  void* dx = nullptr;            // null: not computed
  void* dweight = nullptr;       // n; null: not computed
  void* dbias = nullptr;         // n; null: not computed
  ColumnSumPlan plan;            // the column sums' row blocks
  double* partials = nullptr;    // plan.blocks * n for each column sum computed
};

}  // namespace mantissa::detail
