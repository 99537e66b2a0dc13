/* aclnnCrossEntropyLoss: PyTorch's cross_entropy over class indices fused with its log-softmax:
 * input [N, C] (FLOAT, FLOAT16, BFLOAT16), target [N] (INT64 or INT32; each in [0, C) or
 * ignoreIndex), weightOptional [C] (FLOAT, or null), reductionOptional "none", "mean" (also when
 * null) or "sum", labelSmoothing in [0, 1], lseSquareScaleForZloss in [0, 1) (the z-loss
 * s * lse^2, added to the loss when s != 0), returnZloss (accepted; zlossOut is written either
 * way). lossOut [N] for "none", else one element; logProbOut [N, C]; zlossOut lossOut's shape;
 * lseForZlossOut [N]; all of input's dtype. Upstream declares reductionOptional as char*; const
 * char* takes the same calls and string literals too. Two-phase call; non-contiguous tensors are
 * copied through the workspace, whose reported size also covers the per-row values of the
 * reduction. docs/ops/cross_entropy_loss.md. */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_CROSS_ENTROPY_LOSS_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_CROSS_ENTROPY_LOSS_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnCrossEntropyLossGetWorkspaceSize(
    const aclTensor* input, const aclTensor* target, const aclTensor* weightOptional,
    const char* reductionOptional, int64_t ignoreIndex, double labelSmoothing,
    double lseSquareScaleForZloss, bool returnZloss, const aclTensor* lossOut,
    const aclTensor* logProbOut, const aclTensor* zlossOut, const aclTensor* lseForZlossOut,
    uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnCrossEntropyLoss(void* workspace, uint64_t workspaceSize,
                                                      aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_CROSS_ENTROPY_LOSS_H_ */
