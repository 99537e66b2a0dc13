/* aclnnSoftmax: softmax of self over dim into out (same shape and dtype; may be self), two-phase
 * call. Non-contiguous tensors are copied through the workspace: the reported workspace size
 * covers those copies (0 when all are contiguous). */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_SOFTMAX_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_SOFTMAX_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSoftmaxGetWorkspaceSize(const aclTensor* self, int64_t dim,
                                                             aclTensor* out,
                                                             uint64_t* workspaceSize,
                                                             aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnSoftmax(void* workspace, uint64_t workspaceSize,
                                             aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_SOFTMAX_H_ */
