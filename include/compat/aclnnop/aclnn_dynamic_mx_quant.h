/* aclnnDynamicMxQuant: aclnnDynamicMxQuantV3 without dstTypeMax and maxLowBound (both 0); see
 * aclnn_dynamic_mx_quant_v3.h. */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_DYNAMIC_MX_QUANT_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_DYNAMIC_MX_QUANT_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicMxQuantGetWorkspaceSize(
    const aclTensor* x, int64_t axis, char* roundModeOptional, int64_t dstType, int64_t blocksize,
    int64_t scaleAlg, const aclTensor* yOut, const aclTensor* mxscaleOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicMxQuant(void* workspace, uint64_t workspaceSize,
                                                    aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_DYNAMIC_MX_QUANT_H_ */
