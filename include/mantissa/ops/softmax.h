// Softmax and LogSoftmax over one dimension (CANN's SoftmaxV2 / LogSoftmaxV2, aclnnSoftmax /
// aclnnLogSoftmax): y = exp(x - max) / sum(exp(x - max)); log: (x - max) - log(sum).
#pragma once

#include <cstdint>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

struct SoftmaxTensors {
  TensorView self;  // FLOAT, FLOAT16 or BFLOAT16; rank 0..8 (log-softmax 1..8); empty allowed
  TensorView out;   // self's shape and dtype; may be self itself (in place)
};

struct SoftmaxParams {
  int64_t dim = -1;            // in [-rank, rank) (rank 0: 0 or -1); negative counts from the end
  bool half_to_float = false;  // op-by-name's SoftmaxV2 attribute; only false is supported
};

struct LogSoftmaxParams {
  int64_t dim = -1;
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones).
MANTISSA_API Status softmax(const SoftmaxTensors& t, const SoftmaxParams& p);
MANTISSA_API Status softmax_validate(const SoftmaxTensors& t, const SoftmaxParams& p);
MANTISSA_API Status log_softmax(const SoftmaxTensors& t, const LogSoftmaxParams& p);
MANTISSA_API Status log_softmax_validate(const SoftmaxTensors& t, const LogSoftmaxParams& p);

}  // namespace mantissa
