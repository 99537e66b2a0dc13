// SoftmaxCrossEntropyWithLogits: the training loss of a classifier and its gradient in one pass
// per row (CANN's SoftmaxCrossEntropyWithLogits, aclnnSoftmaxCrossEntropyWithLogits; TensorFlow's
// op of the same name): loss = -sum(labels * log_softmax(features)), backprop =
// softmax(features) - labels, log-softmax computed stably (never log(softmax)).
#pragma once

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

struct SoftmaxCrossEntropyWithLogitsTensors {
  TensorView features;  // FLOAT, FLOAT16 or BFLOAT16; [N, C]; empty allowed
  TensorView labels;    // features' dtype and shape: a distribution per row (one-hot, smoothed)
  TensorView loss;      // features' dtype; [N] (or [N, 1])
  TensorView backprop;  // features' dtype and shape
};

struct SoftmaxCrossEntropyWithLogitsParams {};

// Per row of C classes, in this order (normative; docs/ops/softmax_cross_entropy_with_logits.md):
// m = max(x); s = sum exp(x - m) (fp32 Kahan, Softmax's order); l = log(s);
// backprop_i = (exp(x_i - m) / s) - y_i; loss = sum y_i * (l - (x_i - m)) in fp64, rounded once.
// The C++ API requires contiguous tensors (the aclnn layer copies strided ones). Validates
// everything first; on error nothing is written.
MANTISSA_API Status
softmax_cross_entropy_with_logits(const SoftmaxCrossEntropyWithLogitsTensors& t,
                                  const SoftmaxCrossEntropyWithLogitsParams& p = {});
MANTISSA_API Status
softmax_cross_entropy_with_logits_validate(const SoftmaxCrossEntropyWithLogitsTensors& t,
                                           const SoftmaxCrossEntropyWithLogitsParams& p = {});

}  // namespace mantissa
