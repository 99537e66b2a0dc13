// aclnnAmpUpdateScale: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h).
#include "aclnnop/aclnn_amp_update_scale.h"

#include "compat/aclnn_op.h"
#include "ops/amp_update_scale/amp_update_scale_desc.h"

using mantissa::detail::AmpUpdateScaleOp;

extern "C" {

aclnnStatus aclnnAmpUpdateScaleGetWorkspaceSize(const aclTensor* currentScale,
                                                const aclTensor* growthTracker,
                                                const aclTensor* foundInf, double growthFactor,
                                                double backoffFactor, int64_t growthInterval,
                                                const aclTensor* updatedScale,
                                                const aclTensor* updatedGrowthTracker,
                                                uint64_t* workspaceSize, aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<AmpUpdateScaleOp>(
      MANTISSA_ACLNN_HANDLES(currentScale, growthTracker, foundInf, updatedScale,
                             updatedGrowthTracker),
      mantissa::detail::params_from<AmpUpdateScaleOp>(growthFactor, backoffFactor, growthInterval),
      workspaceSize, executor);
}

aclnnStatus aclnnAmpUpdateScale(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                aclrtStream stream) {
  return mantissa::compat::aclnn_execute<AmpUpdateScaleOp>(workspace, workspaceSize, executor,
                                                           stream);
}

}  // extern "C"
