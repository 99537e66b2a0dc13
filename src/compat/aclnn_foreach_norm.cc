// aclnnForeachNorm: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h).
#include "aclnnop/aclnn_foreach_norm.h"

#include "compat/aclnn_op.h"
#include "ops/foreach_norm/foreach_norm_desc.h"

using mantissa::detail::ForeachNormOp;

extern "C" {

aclnnStatus aclnnForeachNormGetWorkspaceSize(const aclTensorList* x, const aclScalar* scalar,
                                             const aclTensorList* out, uint64_t* workspaceSize,
                                             aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<ForeachNormOp>({x, out}, {}, workspaceSize, executor,
                                                        {scalar});
}

aclnnStatus aclnnForeachNorm(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                             aclrtStream stream) {
  return mantissa::compat::aclnn_execute<ForeachNormOp>(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
