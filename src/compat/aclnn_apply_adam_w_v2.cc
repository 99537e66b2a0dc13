// aclnnApplyAdamWV2: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h),
// which stages non-contiguous tensors through the workspace. A null maxGradNormOptionalRef is
// absent (161001 when amsgrad is set).
#include "aclnnop/aclnn_apply_adam_w_v2.h"

#include "compat/aclnn_op.h"
#include "ops/apply_adam_w_v2/apply_adam_w_v2_desc.h"

using mantissa::detail::ApplyAdamWV2Op;

extern "C" {

aclnnStatus aclnnApplyAdamWV2GetWorkspaceSize(aclTensor* varRef, aclTensor* mRef, aclTensor* vRef,
                                              aclTensor* maxGradNormOptionalRef,
                                              const aclTensor* grad, const aclTensor* step,
                                              float lr, float beta1, float beta2, float weightDecay,
                                              float eps, bool amsgrad, bool maximize,
                                              uint64_t* workspaceSize, aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<ApplyAdamWV2Op>(
      MANTISSA_ACLNN_HANDLES(varRef, mRef, vRef, maxGradNormOptionalRef, grad, step),
      mantissa::detail::params_from<ApplyAdamWV2Op>(lr, beta1, beta2, weightDecay, eps, amsgrad,
                                                    maximize),
      workspaceSize, executor);
}

aclnnStatus aclnnApplyAdamWV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                              aclrtStream stream) {
  return mantissa::compat::aclnn_execute<ApplyAdamWV2Op>(workspace, workspaceSize, executor,
                                                         stream);
}

}  // extern "C"
