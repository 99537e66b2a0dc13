/* aclnnForeachNorm: out[i] = the p-norm of x[i] for every tensor of x (p = 2, 1 or +inf, given
 * by scalar as FLOAT, DOUBLE or INT64), one element in x[i]'s dtype; an empty x[i] gives 0.
 * x: FLOAT, FLOAT16 or BFLOAT16, one dtype for the whole list, rank 0..8, contiguous; out: as
 * many tensors as x, each of x's dtype with one element. */
#ifndef MANTISSA_COMPAT_ACLNNOP_ACLNN_FOREACH_NORM_H_
#define MANTISSA_COMPAT_ACLNNOP_ACLNN_FOREACH_NORM_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnForeachNormGetWorkspaceSize(const aclTensorList* x,
                                                                 const aclScalar* scalar,
                                                                 const aclTensorList* out,
                                                                 uint64_t* workspaceSize,
                                                                 aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnForeachNorm(void* workspace, uint64_t workspaceSize,
                                                 aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACLNNOP_ACLNN_FOREACH_NORM_H_ */
