/* aclnnFusedSgd: PyTorch's fused SGD (torch._fused_sgd_) over tensor lists, as CANN computes it:
 * gradScaleOptional (g = grad * (1 / gradScale), the unscaled gradient written back to
 * gradsRef), weight decay, momentum with dampening and Nesterov, maximize, isFirstStep; two-phase
 * call. An empty paramsRef list is a no-op. Not the graph operator Sgd. Non-contiguous tensors
 * are copied through the workspace: the reported workspace size covers those copies (0 when all
 * are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_FUSED_SGD_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_FUSED_SGD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedSgdGetWorkspaceSize(
    const aclTensorList* paramsRef, const aclTensorList* gradsRef,
    const aclTensorList* momentumBufferListOptionalRef, const aclTensor* gradScaleOptional,
    float weightDecay, float momentum, float lr, float dampening, bool nesterov, bool maximize,
    bool isFirstStep, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedSgd(void* workspace, uint64_t workspaceSize,
                                              aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_FUSED_SGD_H_ */
