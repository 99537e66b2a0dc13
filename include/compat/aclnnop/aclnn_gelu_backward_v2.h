/* aclnnGeluBackwardV2: gradInput = gradOutput * gelu'(self), approximate "none" (the erf form's
 * derivative) or "tanh" (the tanh form's); gradOutput and self broadcast against each other and
 * promote (FLOAT16 with BFLOAT16: FLOAT), gradInput has the broadcast shape and the promoted
 * dtype. approximate null: 161001; another string: 161002. Two-phase call; non-contiguous tensors
 * are copied through the workspace: the reported size covers those copies and the scratch of a
 * call that broadcasts or converts. */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_GELU_BACKWARD_V2_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_GELU_BACKWARD_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGeluBackwardV2GetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* self, char* approximate, aclTensor* gradInput,
    uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGeluBackwardV2(void* workspace, uint64_t workspaceSize,
                                                    aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_GELU_BACKWARD_V2_H_ */
