/* aclnnRmsNorm: y = x * rstd * gamma over the trailing dims gamma spans, rstd = 1 / sqrt(mean(x^2)
 * + epsilon) per row, two-phase call. Non-contiguous tensors are copied through the workspace:
 * the reported workspace size covers those copies (0 when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_RMS_NORM_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_RMS_NORM_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnRmsNormGetWorkspaceSize(
    const aclTensor* x, const aclTensor* gamma, double epsilon, const aclTensor* yOut,
    const aclTensor* rstdOut, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnRmsNorm(void* workspace, uint64_t workspaceSize,
                                             aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_RMS_NORM_H_ */
