// The validated, flattened arguments of Quantize, handed from the operator entry to its SIMD
// kernel.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

// Elements per parallel piece (a function of nothing but this constant: the bits do not depend
// on the thread count in any case, each element being computed on its own).
inline constexpr int64_t kQuantizeChunk = 32768;

struct QuantizeKernelArgs {
  DType x_dtype = DType::kFloat32;
  DType y_dtype = DType::kInt8;
  int64_t numel = 0;
  int64_t channels = 1;  // scales' element count: 1 (per tensor) or x.shape[axis]
  int64_t inner = 1;     // the elements of one channel run (see quantize.cc)
  const void* x = nullptr;
  void* y = nullptr;
  const float* scales = nullptr;       // channels values, fp32
  const float* zero_points = nullptr;  // channels values, fp32; null: none
};

}  // namespace mantissa::detail
