/* aclnnLayerNormBackward: the gradients of LayerNorm with respect to its input, weight and bias,
 * from the forward's input, mean and rstd; outputMask (3 bools) says which are computed,
 * two-phase call. Deterministic. Non-contiguous tensors are copied through the workspace: the
 * reported workspace size covers those copies and the partial sums of gradWeight and gradBias. */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_LAYER_NORM_BACKWARD_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_LAYER_NORM_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnLayerNormBackwardGetWorkspaceSize(
    const aclTensor* gradOut, const aclTensor* input, const aclIntArray* normalizedShape,
    const aclTensor* mean, const aclTensor* rstd, const aclTensor* weightOptional,
    const aclTensor* biasOptional, const aclBoolArray* outputMask, aclTensor* gradInputOut,
    aclTensor* gradWeightOut, aclTensor* gradBiasOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnLayerNormBackward(void* workspace, uint64_t workspaceSize,
                                                       aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_LAYER_NORM_BACKWARD_H_ */
