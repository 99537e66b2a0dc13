/* aclnnDynamicQuant: per-row symmetric quantization over the last dim: scaleOut = max|x * smooth|
 * / dtype_max per row, yOut = round(x * smooth / scaleOut) to yOut's dtype (INT8, INT4, INT32
 * holding eight int4, FLOAT8_E4M3FN, FLOAT8_E5M2); two-phase call. smoothScalesOptional may be
 * null. Non-contiguous tensors are copied through the workspace: the reported workspace size
 * covers those copies (0 when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_DYNAMIC_QUANT_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_DYNAMIC_QUANT_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicQuantGetWorkspaceSize(
    const aclTensor* x, const aclTensor* smoothScalesOptional, const aclTensor* yOut,
    const aclTensor* scaleOut, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicQuant(void* workspace, uint64_t workspaceSize,
                                                  aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_DYNAMIC_QUANT_H_ */
