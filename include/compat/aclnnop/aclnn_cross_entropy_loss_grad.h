/* aclnnCrossEntropyLossGrad: the gradient of aclnnCrossEntropyLoss's loss with respect to its
 * input, from the logProb it wrote: gradLoss [N] for "none", else one element (FLOAT, FLOAT16,
 * BFLOAT16), logProb [N, C] and out [N, C] of gradLoss's dtype, target [N] (INT64 or INT32),
 * weightOptional [C] (FLOAT, or null), gradZlossOptional (gradLoss's dtype and shape, or null),
 * lseForZlossOptional [N] (required when lseSquareScaleForZloss != 0), reductionOptional "none",
 * "mean" (also when null) or "sum", labelSmoothing in [0, 1], lseSquareScaleForZloss in [0, 1).
 * Upstream declares reductionOptional as char*; const char* takes the same calls and string
 * literals too. Two-phase call; non-contiguous tensors are copied through the workspace, whose
 * reported size also covers the per-row coefficients. docs/ops/cross_entropy_loss.md. */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_CROSS_ENTROPY_LOSS_GRAD_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_CROSS_ENTROPY_LOSS_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnCrossEntropyLossGradGetWorkspaceSize(
    const aclTensor* gradLoss, const aclTensor* logProb, const aclTensor* target,
    const aclTensor* weightOptional, const aclTensor* gradZlossOptional,
    const aclTensor* lseForZlossOptional, const char* reductionOptional, int64_t ignoreIndex,
    double labelSmoothing, double lseSquareScaleForZloss, const aclTensor* out,
    uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnCrossEntropyLossGrad(void* workspace, uint64_t workspaceSize,
                                                          aclOpExecutor* executor,
                                                          aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_CROSS_ENTROPY_LOSS_GRAD_H_ */
