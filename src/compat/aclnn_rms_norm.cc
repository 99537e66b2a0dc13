// aclnnRmsNorm: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h), which
// stages non-contiguous tensors through the workspace.
#include "aclnnop/aclnn_rms_norm.h"

#include "compat/aclnn_op.h"
#include "ops/rms_norm/rms_norm_desc.h"

using mantissa::detail::RmsNormOp;

extern "C" {

aclnnStatus aclnnRmsNormGetWorkspaceSize(const aclTensor* x, const aclTensor* gamma, double epsilon,
                                         const aclTensor* yOut, const aclTensor* rstdOut,
                                         uint64_t* workspaceSize, aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<RmsNormOp>(
      MANTISSA_ACLNN_HANDLES(x, gamma, yOut, rstdOut),
      mantissa::detail::params_from<RmsNormOp>(epsilon), workspaceSize, executor);
}

aclnnStatus aclnnRmsNorm(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                         aclrtStream stream) {
  return mantissa::compat::aclnn_execute<RmsNormOp>(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
