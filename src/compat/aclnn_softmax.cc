// aclnnSoftmax and aclnnLogSoftmax: CANN's C signatures over the generic two-phase entry
// (compat/aclnn_op.h), which stages non-contiguous tensors through the workspace.
#include "aclnnop/aclnn_softmax.h"

#include "aclnnop/aclnn_logsoftmax.h"
#include "compat/aclnn_op.h"
#include "ops/softmax/softmax_desc.h"

using mantissa::detail::LogSoftmaxOp;
using mantissa::detail::SoftmaxOp;

extern "C" {

aclnnStatus aclnnSoftmaxGetWorkspaceSize(const aclTensor* self, int64_t dim, aclTensor* out,
                                         uint64_t* workspaceSize, aclOpExecutor** executor) {
  // aclnn has no half_to_float: out always has self's dtype.
  return mantissa::compat::aclnn_prepare<SoftmaxOp>(
      MANTISSA_ACLNN_HANDLES(self, out), mantissa::detail::params_from<SoftmaxOp>(dim, false),
      workspaceSize, executor);
}

aclnnStatus aclnnSoftmax(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                         aclrtStream stream) {
  return mantissa::compat::aclnn_execute<SoftmaxOp>(workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnLogSoftmaxGetWorkspaceSize(const aclTensor* self, int64_t dim, aclTensor* out,
                                            uint64_t* workspaceSize, aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<LogSoftmaxOp>(
      MANTISSA_ACLNN_HANDLES(self, out), mantissa::detail::params_from<LogSoftmaxOp>(dim),
      workspaceSize, executor);
}

aclnnStatus aclnnLogSoftmax(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                            aclrtStream stream) {
  return mantissa::compat::aclnn_execute<LogSoftmaxOp>(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
