/* aclnnApplyAdamWQuant: one AdamW step with 8-bit block-wise moments, in place. mRef and vRef are
 * UINT8 codes into the 256-entry FLOAT maps qmapM and qmapV, scaled per block of blockSize
 * elements by absmaxMRef and absmaxVRef; the step dequantizes them, applies AdamW to varRef
 * (FLOAT, FLOAT16 or BFLOAT16; grad the same), and stores each block's new absmax and each
 * moment's nearest code. step (INT64, one element) counts the steps already taken.
 * quantModeOptional is reserved (any string, or null). Two-phase call; non-contiguous tensors
 * are copied through the workspace. */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_APPLY_ADAM_W_QUANT_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_APPLY_ADAM_W_QUANT_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnApplyAdamWQuantGetWorkspaceSize(
    aclTensor* varRef, const aclTensor* grad, aclTensor* mRef, aclTensor* vRef,
    const aclTensor* qmapM, const aclTensor* qmapV, aclTensor* absmaxMRef, aclTensor* absmaxVRef,
    const aclTensor* step, double lr, double beta1, double beta2, double weightDecay, double eps,
    double gnormScale, char* quantModeOptional, int64_t blockSize, uint64_t* workspaceSize,
    aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnApplyAdamWQuant(void* workspace, uint64_t workspaceSize,
                                                     aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_APPLY_ADAM_W_QUANT_H_ */
