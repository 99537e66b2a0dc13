// aclnnForeachNonFiniteCheckAndUnscale: CANN's C signature over the generic two-phase entry
// (compat/aclnn_op.h).
#include "aclnnop/aclnn_foreach_non_finite_check_and_unscale.h"

#include "compat/aclnn_op.h"
#include "ops/foreach_non_finite_check_and_unscale/foreach_non_finite_check_and_unscale_desc.h"

using mantissa::detail::ForeachNonFiniteCheckAndUnscaleOp;

extern "C" {

aclnnStatus aclnnForeachNonFiniteCheckAndUnscaleGetWorkspaceSize(const aclTensorList* scaledGrads,
                                                                 const aclTensor* foundInf,
                                                                 const aclTensor* invScale,
                                                                 uint64_t* workspaceSize,
                                                                 aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<ForeachNonFiniteCheckAndUnscaleOp>(
      {scaledGrads, foundInf, invScale}, {}, workspaceSize, executor);
}

aclnnStatus aclnnForeachNonFiniteCheckAndUnscale(void* workspace, uint64_t workspaceSize,
                                                 aclOpExecutor* executor, aclrtStream stream) {
  return mantissa::compat::aclnn_execute<ForeachNonFiniteCheckAndUnscaleOp>(
      workspace, workspaceSize, executor, stream);
}

}  // extern "C"
