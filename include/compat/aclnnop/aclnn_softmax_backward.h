/* aclnnSoftmaxBackward: the gradient of softmax over dim, from gradOutput (dy) and output (the
 * forward's output y), into out (same shape and dtype; may be gradOutput), two-phase call.
 * Non-contiguous tensors are copied through the workspace: the reported workspace size covers those
 * copies (0 when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_SOFTMAX_BACKWARD_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_SOFTMAX_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSoftmaxBackwardGetWorkspaceSize(const aclTensor* gradOutput,
                                                                     const aclTensor* output,
                                                                     int64_t dim, aclTensor* out,
                                                                     uint64_t* workspaceSize,
                                                                     aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnSoftmaxBackward(void* workspace, uint64_t workspaceSize,
                                                     aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_SOFTMAX_BACKWARD_H_ */
