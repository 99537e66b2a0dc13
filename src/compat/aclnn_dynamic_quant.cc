// aclnnDynamicQuant: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h),
// which stages non-contiguous tensors through the workspace. The output dtype is yOut's.
#include "aclnnop/aclnn_dynamic_quant.h"

#include "compat/aclnn_op.h"
#include "compat/tensor_internal.h"
#include "ops/dynamic_quant/dynamic_quant_desc.h"

using mantissa::detail::DynamicQuantOp;

extern "C" {

aclnnStatus aclnnDynamicQuantGetWorkspaceSize(const aclTensor* x,
                                              const aclTensor* smoothScalesOptional,
                                              const aclTensor* yOut, const aclTensor* scaleOut,
                                              uint64_t* workspaceSize, aclOpExecutor** executor) {
  mantissa::DynamicQuantParams p;
  // Null and foreign handles are reported by the common checks.
  if (yOut != nullptr && mantissa::compat::tensor_is_live(yOut)) {
    p.dst_type = mantissa::compat::to_view(*yOut).dtype;
  }
  return mantissa::compat::aclnn_prepare<DynamicQuantOp>(
      MANTISSA_ACLNN_HANDLES(x, smoothScalesOptional, yOut, scaleOut), p, workspaceSize, executor);
}

aclnnStatus aclnnDynamicQuant(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                              aclrtStream stream) {
  return mantissa::compat::aclnn_execute<DynamicQuantOp>(workspace, workspaceSize, executor,
                                                         stream);
}

}  // extern "C"
