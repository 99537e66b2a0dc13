// aclnnQuantize: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h), which
// stages non-contiguous tensors through the workspace.
#include "aclnnop/aclnn_quantize.h"

#include "compat/aclnn_op.h"
#include "ops/quantize/quantize_desc.h"

using mantissa::detail::QuantizeOp;

extern "C" {

aclnnStatus aclnnQuantizeGetWorkspaceSize(const aclTensor* x, const aclTensor* scales,
                                          const aclTensor* zeroPoints, aclDataType dtype,
                                          int32_t axis, aclTensor* out, uint64_t* workspaceSize,
                                          aclOpExecutor** executor) {
  mantissa::QuantizeParams p;
  p.dtype = static_cast<mantissa::DType>(dtype);  // aclDataType values are DType's
  p.axis = axis;
  return mantissa::compat::aclnn_prepare<QuantizeOp>(
      MANTISSA_ACLNN_HANDLES(x, scales, zeroPoints, out), p, workspaceSize, executor);
}

aclnnStatus aclnnQuantize(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                          aclrtStream stream) {
  return mantissa::compat::aclnn_execute<QuantizeOp>(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
