/* aclnnApplyAdamWV2: one AdamW step (PyTorch's AdamW), two-phase call. varRef, mRef, vRef and
 * maxGradNormOptionalRef are updated in place; maxGradNormOptionalRef may be null unless amsgrad
 * is set. Non-contiguous tensors are copied through the workspace: the reported workspace size
 * covers those copies (0 when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_APPLY_ADAM_W_V2_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_APPLY_ADAM_W_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnApplyAdamWV2GetWorkspaceSize(
    aclTensor* varRef, aclTensor* mRef, aclTensor* vRef, aclTensor* maxGradNormOptionalRef,
    const aclTensor* grad, const aclTensor* step, float lr, float beta1, float beta2,
    float weightDecay, float eps, bool amsgrad, bool maximize, uint64_t* workspaceSize,
    aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnApplyAdamWV2(void* workspace, uint64_t workspaceSize,
                                                  aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_APPLY_ADAM_W_V2_H_ */
