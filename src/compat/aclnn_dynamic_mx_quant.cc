// aclnnDynamicMxQuantV3 and aclnnDynamicMxQuant: CANN's C signatures over the generic two-phase
// entry (compat/aclnn_op.h), which stages non-contiguous tensors through the workspace. The
// optional roundMode string is mapped here (null: "rint"); the double attributes are rounded to
// fp32, as CANN's kernels hold them.
#include "aclnnop/aclnn_dynamic_mx_quant.h"

#include <fmt/format.h>

#include "aclnnop/aclnn_dynamic_mx_quant_v3.h"
#include "compat/aclnn_op.h"
#include "ops/dynamic_mx_quant/dynamic_mx_quant_desc.h"

using mantissa::detail::DynamicMxQuantOp;

namespace {

aclnnStatus prepare(const char* fn, const aclTensor* x, int64_t axis, const char* roundMode,
                    int64_t dstType, int64_t blocksize, int64_t scaleAlg, double dstTypeMax,
                    double maxLowBound, const aclTensor* yOut, const aclTensor* mxscaleOut,
                    uint64_t* workspaceSize, aclOpExecutor** executor) {
  mantissa::DynamicMxQuantParams p;
  if (roundMode != nullptr && !mantissa::mx_round_mode_from_name(roundMode, p.round_mode)) {
    mantissa::compat::set_recent_error(
        fmt::format("{}: roundMode \"{}\" is not one of rint, floor, round", fn, roundMode));
    return ACLNN_ERR_PARAM_INVALID;
  }
  p.axis = axis;
  // aclDataType values are DType's; one outside int32 can be no dtype at all.
  p.dst_type = static_cast<mantissa::DType>(
      dstType < INT32_MIN || dstType > INT32_MAX ? -1 : static_cast<int32_t>(dstType));
  p.blocksize = blocksize;
  p.scale_alg = scaleAlg;
  p.dst_type_max = static_cast<float>(dstTypeMax);
  p.max_low_bound = static_cast<float>(maxLowBound);
  return mantissa::compat::aclnn_prepare<DynamicMxQuantOp>(
      MANTISSA_ACLNN_HANDLES(x, yOut, mxscaleOut), p, workspaceSize, executor);
}

}  // namespace

extern "C" {

aclnnStatus aclnnDynamicMxQuantV3GetWorkspaceSize(
    const aclTensor* x, int64_t axis, char* roundModeOptional, int64_t dstType, int64_t blocksize,
    int64_t scaleAlg, double dstTypeMax, double maxLowBound, const aclTensor* yOut,
    const aclTensor* mxscaleOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepare("aclnnDynamicMxQuantV3GetWorkspaceSize", x, axis, roundModeOptional, dstType,
                 blocksize, scaleAlg, dstTypeMax, maxLowBound, yOut, mxscaleOut, workspaceSize,
                 executor);
}

aclnnStatus aclnnDynamicMxQuantV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                  aclrtStream stream) {
  return mantissa::compat::aclnn_execute<DynamicMxQuantOp>(workspace, workspaceSize, executor,
                                                           stream);
}

aclnnStatus aclnnDynamicMxQuantGetWorkspaceSize(const aclTensor* x, int64_t axis,
                                                char* roundModeOptional, int64_t dstType,
                                                int64_t blocksize, int64_t scaleAlg,
                                                const aclTensor* yOut, const aclTensor* mxscaleOut,
                                                uint64_t* workspaceSize, aclOpExecutor** executor) {
  return prepare("aclnnDynamicMxQuantGetWorkspaceSize", x, axis, roundModeOptional, dstType,
                 blocksize, scaleAlg, 0.0, 0.0, yOut, mxscaleOut, workspaceSize, executor);
}

aclnnStatus aclnnDynamicMxQuant(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                aclrtStream stream) {
  return mantissa::compat::aclnn_execute<DynamicMxQuantOp>(workspace, workspaceSize, executor,
                                                           stream);
}

}  // extern "C"
