// The SGD kernel's interface: validated pointers and scalars, no tensor views, no SIMD types.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

// Everything the kernel needs for one call. Pointers are contiguous buffers of `n` elements of
// `dtype`; `parameters_out` equals `parameters` for an in-place update, else it shares no byte
// with any input. Scalars are already widened to fp32 (learning_rate, momentum) or given as
// fp32 attributes (dampening, weight_decay).
struct SgdKernelArgs {
  DType dtype = DType::kFloat32;
  int64_t n = 0;
  const void* parameters = nullptr;
  void* parameters_out = nullptr;
  const void* gradient = nullptr;
  void* accum = nullptr;
  void* stat = nullptr;
  float learning_rate = 0.0f;
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

}  // namespace mantissa::detail
