// What the softmax kernels receive: validated, contiguous tensors seen as rows (core/rows.h).
#pragma once

#include "core/rows.h"
#include "mantissa/dtype.h"

namespace mantissa::detail {

struct SoftmaxKernelArgs {
  DType dtype = DType::kFloat32;  // of x and y
  Rows rows;                      // outer x axis x inner over dim
  const void* x = nullptr;
  void* y = nullptr;  // x itself (in place) or disjoint
  bool log = false;   // log-softmax
};

}  // namespace mantissa::detail
