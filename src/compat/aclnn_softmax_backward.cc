// aclnnSoftmaxBackward and aclnnLogSoftmaxBackward: CANN's C signatures over the generic
// two-phase entry (compat/aclnn_op.h), which stages non-contiguous tensors through the
// workspace.
#include "aclnnop/aclnn_softmax_backward.h"

#include "aclnnop/aclnn_logsoftmax_backward.h"
#include "compat/aclnn_op.h"
#include "ops/softmax_grad/softmax_grad_desc.h"

using mantissa::detail::LogSoftmaxGradOp;
using mantissa::detail::SoftmaxGradOp;

extern "C" {

aclnnStatus aclnnSoftmaxBackwardGetWorkspaceSize(const aclTensor* gradOutput,
                                                 const aclTensor* output, int64_t dim,
                                                 aclTensor* out, uint64_t* workspaceSize,
                                                 aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<SoftmaxGradOp>(
      MANTISSA_ACLNN_HANDLES(gradOutput, output, out),
      mantissa::detail::params_from<SoftmaxGradOp>(dim), workspaceSize, executor);
}

aclnnStatus aclnnSoftmaxBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 aclrtStream stream) {
  return mantissa::compat::aclnn_execute<SoftmaxGradOp>(workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnLogSoftmaxBackwardGetWorkspaceSize(const aclTensor* gradOutput,
                                                    const aclTensor* output, int64_t dim,
                                                    aclTensor* out, uint64_t* workspaceSize,
                                                    aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<LogSoftmaxGradOp>(
      MANTISSA_ACLNN_HANDLES(gradOutput, output, out),
      mantissa::detail::params_from<LogSoftmaxGradOp>(dim), workspaceSize, executor);
}

aclnnStatus aclnnLogSoftmaxBackward(void* workspace, uint64_t workspaceSize,
                                    aclOpExecutor* executor, aclrtStream stream) {
  return mantissa::compat::aclnn_execute<LogSoftmaxGradOp>(workspace, workspaceSize, executor,
                                                           stream);
}

}  // extern "C"
