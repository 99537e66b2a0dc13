// What the SoftmaxCrossEntropyWithLogits kernel receives: validated, contiguous [rows, classes]
// tensors.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

struct CrossEntropyKernelArgs {
  DType dtype = DType::kFloat32;  // of every tensor
  int64_t rows = 0, classes = 0;  // classes > 0
  const void* features = nullptr;
  const void* labels = nullptr;
  void* loss = nullptr;  // rows elements
  void* backprop = nullptr;
};

}  // namespace mantissa::detail
