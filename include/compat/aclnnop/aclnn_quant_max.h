/* aclnnQuantMax: y = FP8(x * scale) per element (round to nearest even, saturated; dstType 35
 * FLOAT8_E5M2 or 36 FLOAT8_E4M3FN, roundMode "rint") and amax = max |x| (x's dtype, one element),
 * in one pass; two-phase call. dstType 34 (HIFLOAT8) is refused with 161002. Non-contiguous
 * tensors are copied through the workspace: the reported workspace size covers those copies (0
 * when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_QUANT_MAX_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_QUANT_MAX_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnQuantMaxGetWorkspaceSize(
    const aclTensor* x, const aclTensor* scale, char* roundMode, int64_t dstType,
    const aclTensor* y, const aclTensor* amax, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnQuantMax(void* workspace, uint64_t workspaceSize,
                                              aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_QUANT_MAX_H_ */
