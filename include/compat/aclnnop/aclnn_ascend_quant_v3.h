/* aclnnAscendQuantV3: y = round((x * scale) + offset), or (x * scale * scale) + offset with
 * sqrtMode, scale and offset along x's dim `axis` (one of the last two) or one value for all;
 * roundMode "round" (ties to even), "floor", "ceil" or "trunc" (FP8: "round" only); dstType 2
 * INT8, 29 INT4, 3 INT32 (eight int4 per int32), 36 FLOAT8_E4M3FN, 35 FLOAT8_E5M2; integer
 * results saturate. offset may be null. Two-phase call; non-contiguous tensors are copied through
 * the workspace: the reported workspace size covers those copies (0 when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_ASCEND_QUANT_V3_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_ASCEND_QUANT_V3_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnAscendQuantV3GetWorkspaceSize(
    const aclTensor* x, const aclTensor* scale, const aclTensor* offset, bool sqrtMode,
    const char* roundMode, int32_t dstType, int32_t axis, const aclTensor* y,
    uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnAscendQuantV3(void* workspace, uint64_t workspaceSize,
                                                   aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_ASCEND_QUANT_V3_H_ */
