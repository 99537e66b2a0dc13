/* aclnnSoftmaxCrossEntropyWithLogits: per row of features [N, C], loss[n] = -sum(labels *
 * log_softmax(features)) and backprop = softmax(features) - labels (labels, loss, backprop in
 * features' dtype; loss [N]), two-phase call. Non-contiguous tensors are copied through the
 * workspace: the reported workspace size covers those copies (0 when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_SOFTMAX_CROSS_ENTROPY_WITH_LOGITS_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_SOFTMAX_CROSS_ENTROPY_WITH_LOGITS_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSoftmaxCrossEntropyWithLogitsGetWorkspaceSize(
    const aclTensor* features, const aclTensor* labels, aclTensor* loss, aclTensor* backprop,
    uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnSoftmaxCrossEntropyWithLogits(void* workspace,
                                                                   uint64_t workspaceSize,
                                                                   aclOpExecutor* executor,
                                                                   aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_SOFTMAX_CROSS_ENTROPY_WITH_LOGITS_H_ */
