// The validated, flattened arguments of DynamicQuant, handed from the operator entry to its SIMD
// kernel.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

struct DynamicQuantKernelArgs {
  DType x_dtype = DType::kFloat16;  // x and the smooth scales
  DType y_dtype = DType::kInt8;     // INT4 and INT32 share the packed int4 layout
  int64_t rows = 0;                 // rows of n elements, contiguous
  int64_t n = 0;
  float dtype_max = 127.0f;
  const void* x = nullptr;
  const void* smooth = nullptr;  // n values; null: none
  void* y = nullptr;
  float* scale = nullptr;  // one per row
};

}  // namespace mantissa::detail
