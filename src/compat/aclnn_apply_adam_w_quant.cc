// aclnnApplyAdamWQuant: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h),
// which stages non-contiguous tensors through the workspace. The double attributes are rounded
// to fp32, as CANN's kernel holds them; quantModeOptional is reserved and not read.
#include "aclnnop/aclnn_apply_adam_w_quant.h"

#include "compat/aclnn_op.h"
#include "ops/apply_adam_w_quant/apply_adam_w_quant_desc.h"

using mantissa::detail::ApplyAdamWQuantOp;

extern "C" {

aclnnStatus aclnnApplyAdamWQuantGetWorkspaceSize(
    aclTensor* varRef, const aclTensor* grad, aclTensor* mRef, aclTensor* vRef,
    const aclTensor* qmapM, const aclTensor* qmapV, aclTensor* absmaxMRef, aclTensor* absmaxVRef,
    const aclTensor* step, double lr, double beta1, double beta2, double weightDecay, double eps,
    double gnormScale, char* /*quantModeOptional*/, int64_t blockSize, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  mantissa::ApplyAdamWQuantParams p;
  p.lr = static_cast<float>(lr);
  p.beta1 = static_cast<float>(beta1);
  p.beta2 = static_cast<float>(beta2);
  p.weight_decay = static_cast<float>(weightDecay);
  p.eps = static_cast<float>(eps);
  p.gnorm_scale = static_cast<float>(gnormScale);
  p.block_size = blockSize;
  return mantissa::compat::aclnn_prepare<ApplyAdamWQuantOp>(
      MANTISSA_ACLNN_HANDLES(varRef, grad, mRef, vRef, qmapM, qmapV, absmaxMRef, absmaxVRef, step),
      p, workspaceSize, executor);
}

aclnnStatus aclnnApplyAdamWQuant(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 aclrtStream stream) {
  return mantissa::compat::aclnn_execute<ApplyAdamWQuantOp>(workspace, workspaceSize, executor,
                                                            stream);
}

}  // extern "C"
