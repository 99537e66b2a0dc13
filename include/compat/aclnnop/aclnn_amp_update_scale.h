/* aclnnAmpUpdateScale: dynamic loss-scale update, two-phase call. Workspace size is always 0.
 * growthFactor and backoffFactor are applied in fp32 and not range-checked (as upstream). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_AMP_UPDATE_SCALE_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_AMP_UPDATE_SCALE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnAmpUpdateScaleGetWorkspaceSize(
    const aclTensor* currentScale, const aclTensor* growthTracker, const aclTensor* foundInf,
    double growthFactor, double backoffFactor, int64_t growthInterval,
    const aclTensor* updatedScale, const aclTensor* updatedGrowthTracker, uint64_t* workspaceSize,
    aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnAmpUpdateScale(void* workspace, uint64_t workspaceSize,
                                                    aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_AMP_UPDATE_SCALE_H_ */
