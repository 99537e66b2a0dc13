// aclnnRmsNormGrad: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h). The
// workspace holds the staging copies, then dgamma's per-block partial sums.
#include "aclnnop/aclnn_rms_norm_grad.h"

#include "compat/aclnn_op.h"
#include "ops/rms_norm_grad/rms_norm_grad_desc.h"

using mantissa::detail::RmsNormGradOp;

extern "C" {

aclnnStatus aclnnRmsNormGradGetWorkspaceSize(const aclTensor* dy, const aclTensor* x,
                                             const aclTensor* rstd, const aclTensor* gamma,
                                             const aclTensor* dxOut, const aclTensor* dgammaOut,
                                             uint64_t* workspaceSize, aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<RmsNormGradOp>(
      MANTISSA_ACLNN_HANDLES(dy, x, rstd, gamma, dxOut, dgammaOut), {}, workspaceSize, executor);
}

aclnnStatus aclnnRmsNormGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                             aclrtStream stream) {
  return mantissa::compat::aclnn_execute<RmsNormGradOp>(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
