/* aclnnQuantize: out = round(x / scales + zeroPoints) per element, scales and zeroPoints along
 * x's dim `axis` (or one value for all), rounded to nearest even and saturated to dtype (INT8,
 * UINT8, INT32), or converted to FLOAT8_E4M3FN / FLOAT8_E5M2 with saturation; two-phase call.
 * zeroPoints may be null. Non-contiguous tensors are copied through the workspace: the reported
 * workspace size covers those copies (0 when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_QUANTIZE_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_QUANTIZE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnQuantizeGetWorkspaceSize(
    const aclTensor* x, const aclTensor* scales, const aclTensor* zeroPoints, aclDataType dtype,
    int32_t axis, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnQuantize(void* workspace, uint64_t workspaceSize,
                                              aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_QUANTIZE_H_ */
