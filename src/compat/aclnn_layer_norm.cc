// aclnnLayerNorm and aclnnLayerNormWithImplMode: CANN's C signatures over the generic two-phase
// entry (compat/aclnn_op.h).
#include "aclnnop/aclnn_layer_norm.h"

#include <fmt/format.h>

#include "compat/aclnn_op.h"
#include "compat/tensor_internal.h"
#include "ops/layer_norm/layer_norm_desc.h"

using mantissa::detail::LayerNormOp;

namespace {

// implMode: 0, 1 or 2, and 2 only when every tensor given is FLOAT16 (upstream's rules). The
// result is the high-precision one for every mode.
aclnnStatus check_impl_mode(int32_t mode, std::initializer_list<const aclTensor*> tensors) {
  const char* fn = "aclnnLayerNormWithImplModeGetWorkspaceSize";
  if (mode < 0 || mode > 2) {
    mantissa::compat::set_recent_error(fmt::format("{}: implMode is {} (0, 1 or 2)", fn, mode));
    return ACLNN_ERR_PARAM_INVALID;
  }
  if (mode != 2) return ACLNN_SUCCESS;
  for (const aclTensor* t : tensors) {
    // Null and foreign handles are reported by the common checks that follow.
    if (t == nullptr || !mantissa::compat::tensor_is_live(t)) continue;
    const mantissa::DType d = mantissa::compat::to_view(*t).dtype;
    if (d != mantissa::DType::kFloat16) {
      mantissa::compat::set_recent_error(
          fmt::format("{}: implMode 2 keeps FLOAT16 and needs every tensor FLOAT16, got {}", fn,
                      mantissa::dtype_name(d)));
      return ACLNN_ERR_PARAM_INVALID;
    }
  }
  return ACLNN_SUCCESS;
}

}  // namespace

extern "C" {

aclnnStatus aclnnLayerNormGetWorkspaceSize(
    const aclTensor* input, const aclIntArray* normalizedShape, const aclTensor* weightOptional,
    const aclTensor* biasOptional, double eps, aclTensor* out, aclTensor* meanOutOptional,
    aclTensor* rstdOutOptional, uint64_t* workspaceSize, aclOpExecutor** executor) {
  mantissa::LayerNormParams p;
  p.eps = eps;
  return mantissa::compat::aclnn_prepare<LayerNormOp>(
      MANTISSA_ACLNN_HANDLES(input, weightOptional, biasOptional, out, meanOutOptional,
                             rstdOutOptional),
      p, workspaceSize, executor, {}, {normalizedShape});
}

aclnnStatus aclnnLayerNorm(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                           aclrtStream stream) {
  return mantissa::compat::aclnn_execute<LayerNormOp>(workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnLayerNormWithImplModeGetWorkspaceSize(
    const aclTensor* input, const aclIntArray* normalizedShape, const aclTensor* weightOptional,
    const aclTensor* biasOptional, double eps, aclTensor* out, aclTensor* meanOutOptional,
    aclTensor* rstdOutOptional, int32_t implMode, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  if (aclnnStatus s = check_impl_mode(
          implMode, {input, weightOptional, biasOptional, out, meanOutOptional, rstdOutOptional});
      s != ACLNN_SUCCESS) {
    return s;
  }
  return aclnnLayerNormGetWorkspaceSize(input, normalizedShape, weightOptional, biasOptional, eps,
                                        out, meanOutOptional, rstdOutOptional, workspaceSize,
                                        executor);
}

aclnnStatus aclnnLayerNormWithImplMode(void* workspace, uint64_t workspaceSize,
                                       aclOpExecutor* executor, aclrtStream stream) {
  return mantissa::compat::aclnn_execute<LayerNormOp>(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
