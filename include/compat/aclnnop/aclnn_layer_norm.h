/* aclnnLayerNorm: out = (x - mean) * rstd * weight + bias over the trailing dims normalizedShape
 * names, with mean and rstd per row (optional outputs), two-phase call. aclnnLayerNormWithImplMode
 * takes implMode 0 (high precision), 1 (high performance) or 2 (keep FLOAT16; every tensor
 * FLOAT16): all three compute the high-precision result here. Non-contiguous tensors are copied
 * through the workspace: the reported workspace size covers those copies (0 when all are
 * contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_LAYER_NORM_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_LAYER_NORM_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnLayerNormGetWorkspaceSize(
    const aclTensor* input, const aclIntArray* normalizedShape, const aclTensor* weightOptional,
    const aclTensor* biasOptional, double eps, aclTensor* out, aclTensor* meanOutOptional,
    aclTensor* rstdOutOptional, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnLayerNorm(void* workspace, uint64_t workspaceSize,
                                               aclOpExecutor* executor, aclrtStream stream);

ACL_FUNC_VISIBILITY aclnnStatus aclnnLayerNormWithImplModeGetWorkspaceSize(
    const aclTensor* input, const aclIntArray* normalizedShape, const aclTensor* weightOptional,
    const aclTensor* biasOptional, double eps, aclTensor* out, aclTensor* meanOutOptional,
    aclTensor* rstdOutOptional, int32_t implMode, uint64_t* workspaceSize,
    aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnLayerNormWithImplMode(void* workspace, uint64_t workspaceSize,
                                                           aclOpExecutor* executor,
                                                           aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_LAYER_NORM_H_ */
