/* aclnnApplyAdamD: one Adam step (TensorFlow form), two-phase call. varOut/mOut/vOut may be the
 * input tensors (in place) or separate ones. Non-contiguous tensors are copied through the
 * workspace: the reported workspace size covers those copies (0 when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_APPLY_ADAM_D_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_APPLY_ADAM_D_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnApplyAdamDGetWorkspaceSize(
    const aclTensor* var, const aclTensor* m, const aclTensor* v, const aclTensor* beta1Power,
    const aclTensor* beta2Power, const aclTensor* lr, const aclTensor* beta1,
    const aclTensor* beta2, const aclTensor* epsilon, const aclTensor* grad, bool useLocking,
    bool useNesterov, aclTensor* varOut, aclTensor* mOut, aclTensor* vOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnApplyAdamD(void* workspace, uint64_t workspaceSize,
                                                aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_APPLY_ADAM_D_H_ */
