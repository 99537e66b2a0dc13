// What the softmax backward kernels receive: validated, contiguous tensors seen as rows
// (core/rows.h).
#pragma once

#include "core/rows.h"
#include "mantissa/dtype.h"

namespace mantissa::detail {

struct SoftmaxGradKernelArgs {
  DType dtype = DType::kFloat32;  // of dy, y and out
  Rows rows;                      // outer x axis x inner over dim
  const void* dy = nullptr;       // grad_output
  const void* y = nullptr;        // the forward's output
  void* out = nullptr;            // dy itself (in place) or disjoint from dy and y
  bool log = false;               // log-softmax
};

}  // namespace mantissa::detail
