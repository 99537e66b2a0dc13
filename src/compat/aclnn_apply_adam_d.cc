// aclnnApplyAdamD: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h),
// which stages non-contiguous tensors through the workspace.
#include "aclnnop/aclnn_apply_adam_d.h"

#include "compat/aclnn_op.h"
#include "ops/apply_adam_d/apply_adam_d_desc.h"

using mantissa::detail::ApplyAdamDOp;

extern "C" {

aclnnStatus aclnnApplyAdamDGetWorkspaceSize(const aclTensor* var, const aclTensor* m,
                                            const aclTensor* v, const aclTensor* beta1Power,
                                            const aclTensor* beta2Power, const aclTensor* lr,
                                            const aclTensor* beta1, const aclTensor* beta2,
                                            const aclTensor* epsilon, const aclTensor* grad,
                                            bool useLocking, bool useNesterov, aclTensor* varOut,
                                            aclTensor* mOut, aclTensor* vOut,
                                            uint64_t* workspaceSize, aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<ApplyAdamDOp>(
      MANTISSA_ACLNN_HANDLES(var, m, v, beta1Power, beta2Power, lr, beta1, beta2, epsilon, grad,
                             varOut, mOut, vOut),
      mantissa::detail::params_from<ApplyAdamDOp>(useLocking, useNesterov), workspaceSize,
      executor);
}

aclnnStatus aclnnApplyAdamD(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                            aclrtStream stream) {
  return mantissa::compat::aclnn_execute<ApplyAdamDOp>(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
