// aclnnQuantMax: CANN's C signature over the generic two-phase entry (compat/aclnn_op.h), which
// stages non-contiguous tensors through the workspace. roundMode's string is mapped here.
#include "aclnnop/aclnn_quant_max.h"

#include <fmt/format.h>

#include "compat/aclnn_op.h"
#include "ops/quant_max/quant_max_desc.h"

using mantissa::detail::QuantMaxOp;

extern "C" {

aclnnStatus aclnnQuantMaxGetWorkspaceSize(const aclTensor* x, const aclTensor* scale,
                                          char* roundMode, int64_t dstType, const aclTensor* y,
                                          const aclTensor* amax, uint64_t* workspaceSize,
                                          aclOpExecutor** executor) {
  constexpr const char* fn = "aclnnQuantMaxGetWorkspaceSize";
  mantissa::QuantMaxParams p;
  if (roundMode == nullptr) {
    mantissa::compat::set_recent_error(fmt::format("{}: roundMode is null", fn));
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  if (!mantissa::quant_max_round_mode_from_name(roundMode, p.round_mode)) {
    mantissa::compat::set_recent_error(
        fmt::format("{}: roundMode \"{}\" is not one of rint (FLOAT8), round, hybrid (HIFLOAT8)",
                    fn, roundMode));
    return ACLNN_ERR_PARAM_INVALID;
  }
  // aclDataType values are DType's; one outside int32 can be no dtype at all.
  p.dst_type = static_cast<mantissa::DType>(
      dstType < INT32_MIN || dstType > INT32_MAX ? -1 : static_cast<int32_t>(dstType));
  return mantissa::compat::aclnn_prepare<QuantMaxOp>(MANTISSA_ACLNN_HANDLES(x, scale, y, amax), p,
                                                     workspaceSize, executor);
}

aclnnStatus aclnnQuantMax(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                          aclrtStream stream) {
  return mantissa::compat::aclnn_execute<QuantMaxOp>(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
