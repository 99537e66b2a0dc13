/* aclnnForeachNonFiniteCheckAndUnscale: multiplies every tensor of scaledGrads by invScale in
 * place and sets foundInf to 1.0 when any input element is +-Inf or NaN (it is never cleared).
 * Upstream's limits: at most 256 tensors of one dtype (FLOAT, FLOAT16 or BFLOAT16), none empty,
 * contiguous; foundInf and invScale FLOAT with one element. */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_FOREACH_NON_FINITE_CHECK_AND_UNSCALE_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_FOREACH_NON_FINITE_CHECK_AND_UNSCALE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnForeachNonFiniteCheckAndUnscaleGetWorkspaceSize(
    const aclTensorList* scaledGrads, const aclTensor* foundInf, const aclTensor* invScale,
    uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnForeachNonFiniteCheckAndUnscale(void* workspace,
                                                                     uint64_t workspaceSize,
                                                                     aclOpExecutor* executor,
                                                                     aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_FOREACH_NON_FINITE_CHECK_AND_UNSCALE_H_ */
