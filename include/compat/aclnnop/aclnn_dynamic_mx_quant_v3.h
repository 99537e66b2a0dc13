/* aclnnDynamicMxQuantV3: microscaling quantization of x along `axis` in blocks of `blocksize`
 * (a multiple of 32 up to 1024): one E8M0 scale per block into mxscaleOut (the pairs layout of
 * docs/ops/dynamic_mx_quant.md) and FP8 elements into yOut (dstType 35 FLOAT8_E5M2 or 36
 * FLOAT8_E4M3FN; roundModeOptional "rint" or null); scaleAlg 0 (OCP) or 1 (cuBLAS, with
 * maxLowBound); dstTypeMax 0. The FLOAT4 destinations (40, 41) are refused with 161002. Two-phase
 * call; non-contiguous tensors are copied through the workspace. */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_DYNAMIC_MX_QUANT_V3_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_DYNAMIC_MX_QUANT_V3_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicMxQuantV3GetWorkspaceSize(
    const aclTensor* x, int64_t axis, char* roundModeOptional, int64_t dstType, int64_t blocksize,
    int64_t scaleAlg, double dstTypeMax, double maxLowBound, const aclTensor* yOut,
    const aclTensor* mxscaleOut, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnDynamicMxQuantV3(void* workspace, uint64_t workspaceSize,
                                                      aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_DYNAMIC_MX_QUANT_V3_H_ */
