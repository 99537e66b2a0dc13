// The validated, flattened arguments of AntiMxQuant, handed from the operator entry to its SIMD
// kernel.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

// x viewed as [outer, length, inner] around the axis; blocks of 32 along `length`; mxscale as
// [outer, pairs, inner, 2].
struct AntiMxQuantKernelArgs {
  DType x_dtype = DType::kFloat8E4M3FN;
  DType y_dtype = DType::kBFloat16;
  int64_t outer = 1, length = 1, inner = 1, pairs = 1;
  const uint8_t* x = nullptr;
  const uint8_t* mxscale = nullptr;
  void* y = nullptr;
};

}  // namespace mantissa::detail
