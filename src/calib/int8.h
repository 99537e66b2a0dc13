// The INT8 quantize/dequantize kernels (int8.cc), called by calibrate.cc after validation.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

struct Int8KernelArgs {
  DType dtype = DType::kFloat32;               // of the float side
  const void* x = nullptr;                     // quantize: input
  void* q = nullptr;                           // int8
  void* y = nullptr;                           // dequantize: output
  const float* scales = nullptr;               // one per channel (or one)
  int64_t outer = 1, channels = 1, inner = 1;  // x = [outer, channels, inner]
  int8_t lo = -127;
};

void quantize_int8_kernel(const Int8KernelArgs& a);
void dequantize_int8_kernel(const Int8KernelArgs& a);

}  // namespace mantissa::detail
