// aclnnSoftmaxCrossEntropyWithLogits: CANN's C signature over the generic two-phase entry
// (compat/aclnn_op.h), which stages non-contiguous tensors through the workspace.
#include "aclnnop/aclnn_softmax_cross_entropy_with_logits.h"

#include "compat/aclnn_op.h"
#include "ops/softmax_cross_entropy_with_logits/softmax_cross_entropy_with_logits_desc.h"

using mantissa::detail::SoftmaxCrossEntropyWithLogitsOp;

extern "C" {

aclnnStatus aclnnSoftmaxCrossEntropyWithLogitsGetWorkspaceSize(const aclTensor* features,
                                                               const aclTensor* labels,
                                                               aclTensor* loss, aclTensor* backprop,
                                                               uint64_t* workspaceSize,
                                                               aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<SoftmaxCrossEntropyWithLogitsOp>(
      MANTISSA_ACLNN_HANDLES(features, labels, loss, backprop), {}, workspaceSize, executor);
}

aclnnStatus aclnnSoftmaxCrossEntropyWithLogits(void* workspace, uint64_t workspaceSize,
                                               aclOpExecutor* executor, aclrtStream stream) {
  return mantissa::compat::aclnn_execute<SoftmaxCrossEntropyWithLogitsOp>(workspace, workspaceSize,
                                                                          executor, stream);
}

}  // extern "C"
