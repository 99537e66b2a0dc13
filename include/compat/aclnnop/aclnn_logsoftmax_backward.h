/* aclnnLogSoftmaxBackward: the gradient of log-softmax over dim, from gradOutput (dy) and output
 * (the forward's output y), into out (same shape and dtype; may be gradOutput), two-phase call.
 * Non-contiguous tensors are copied through the workspace: the reported workspace size covers those
 * copies (0 when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_LOGSOFTMAX_BACKWARD_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_LOGSOFTMAX_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnLogSoftmaxBackwardGetWorkspaceSize(const aclTensor* gradOutput,
                                                                        const aclTensor* output,
                                                                        int64_t dim, aclTensor* out,
                                                                        uint64_t* workspaceSize,
                                                                        aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnLogSoftmaxBackward(void* workspace, uint64_t workspaceSize,
                                                        aclOpExecutor* executor,
                                                        aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_LOGSOFTMAX_BACKWARD_H_ */
