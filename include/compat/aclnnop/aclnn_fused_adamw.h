/* aclnnFusedAdamw: PyTorch's fused AdamW (torch._fused_adamw_) over tensor lists, one step
 * count per parameter (t = stateSteps[i] + 1, the tensor not advanced), gradScaleOptional
 * (g = grad * (1 / gradScale)) and foundInfOptional (== 1: nothing written); two-phase call.
 * Non-contiguous tensors are copied through the workspace: the reported workspace size covers
 * those copies (0 when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_FUSED_ADAMW_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_FUSED_ADAMW_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedAdamwGetWorkspaceSize(
    const aclTensorList* paramsRef, const aclTensorList* grads, const aclTensorList* expAvgsRef,
    const aclTensorList* expAvgSqsRef, const aclTensorList* maxExpAvgSqsRef,
    const aclTensorList* stateSteps, const aclTensor* gradScaleOptional,
    const aclTensor* foundInfOptional, double lr, double beta1, double beta2, double weightDecay,
    double eps, bool amsgrad, bool maximize, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedAdamw(void* workspace, uint64_t workspaceSize,
                                                aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_FUSED_ADAMW_H_ */
