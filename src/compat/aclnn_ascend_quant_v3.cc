// aclnnAscendQuantV3: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h),
// which stages non-contiguous tensors through the workspace. roundMode's string is mapped here.
#include "aclnnop/aclnn_ascend_quant_v3.h"

#include <fmt/format.h>

#include "compat/aclnn_op.h"
#include "ops/ascend_quant_v3/ascend_quant_v3_desc.h"

using mantissa::detail::AscendQuantV3Op;

extern "C" {

aclnnStatus aclnnAscendQuantV3GetWorkspaceSize(const aclTensor* x, const aclTensor* scale,
                                               const aclTensor* offset, bool sqrtMode,
                                               const char* roundMode, int32_t dstType, int32_t axis,
                                               const aclTensor* y, uint64_t* workspaceSize,
                                               aclOpExecutor** executor) {
  constexpr const char* fn = "aclnnAscendQuantV3GetWorkspaceSize";
  mantissa::AscendQuantV3Params p;
  if (roundMode == nullptr) {
    mantissa::compat::set_recent_error(fmt::format("{}: roundMode is null", fn));
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  if (!mantissa::quant_round_mode_from_name(roundMode, p.round_mode)) {
    mantissa::compat::set_recent_error(fmt::format(
        "{}: roundMode \"{}\" is not one of round, floor, ceil, trunc (hybrid is HIFLOAT8's)", fn,
        roundMode));
    return ACLNN_ERR_PARAM_INVALID;
  }
  p.sqrt_mode = sqrtMode;
  p.dst_type = static_cast<mantissa::DType>(dstType);  // aclDataType values are DType's
  p.axis = axis;
  return mantissa::compat::aclnn_prepare<AscendQuantV3Op>(
      MANTISSA_ACLNN_HANDLES(x, scale, offset, y), p, workspaceSize, executor);
}

aclnnStatus aclnnAscendQuantV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                               aclrtStream stream) {
  return mantissa::compat::aclnn_execute<AscendQuantV3Op>(workspace, workspaceSize, executor,
                                                          stream);
}

}  // extern "C"
