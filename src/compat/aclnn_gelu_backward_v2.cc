// aclnnGeluBackwardV2: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h),
// which stages non-contiguous tensors through the workspace. approximate's string is mapped here.
#include "aclnnop/aclnn_gelu_backward_v2.h"

#include <fmt/format.h>

#include <cstring>

#include "compat/aclnn_op.h"
#include "ops/gelu/gelu_backward_desc.h"

using mantissa::detail::GeluBackwardV2Op;

extern "C" {

aclnnStatus aclnnGeluBackwardV2GetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self,
                                                char* approximate, aclTensor* gradInput,
                                                uint64_t* workspaceSize, aclOpExecutor** executor) {
  constexpr const char* fn = "aclnnGeluBackwardV2GetWorkspaceSize";
  mantissa::GeluBackwardV2Params p;
  if (approximate == nullptr) {
    mantissa::compat::set_recent_error(fmt::format("{}: approximate is null", fn));
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  if (std::strcmp(approximate, "none") == 0) {
    p.approximate = mantissa::GeluApproximate::kNone;
  } else if (std::strcmp(approximate, "tanh") == 0) {
    p.approximate = mantissa::GeluApproximate::kTanh;
  } else {
    mantissa::compat::set_recent_error(
        fmt::format("{}: approximate \"{}\" is not \"none\" or \"tanh\"", fn, approximate));
    return ACLNN_ERR_PARAM_INVALID;
  }
  return mantissa::compat::aclnn_prepare<GeluBackwardV2Op>(
      MANTISSA_ACLNN_HANDLES(gradOutput, self, gradInput), p, workspaceSize, executor);
}

aclnnStatus aclnnGeluBackwardV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                aclrtStream stream) {
  return mantissa::compat::aclnn_execute<GeluBackwardV2Op>(workspace, workspaceSize, executor,
                                                           stream);
}

}  // extern "C"
