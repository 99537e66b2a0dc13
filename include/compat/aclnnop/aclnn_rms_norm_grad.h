/* aclnnRmsNormGrad: the backward pass of RmsNorm (dx and dgamma), two-phase call. The workspace
 * holds dgamma's per-block partial sums and copies of non-contiguous tensors. */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_RMS_NORM_GRAD_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_RMS_NORM_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnRmsNormGradGetWorkspaceSize(
    const aclTensor* dy, const aclTensor* x, const aclTensor* rstd, const aclTensor* gamma,
    const aclTensor* dxOut, const aclTensor* dgammaOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnRmsNormGrad(void* workspace, uint64_t workspaceSize,
                                                 aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_RMS_NORM_GRAD_H_ */
