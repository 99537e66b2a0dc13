// aclnnLayerNormBackward: CANN's C signature over the generic two-phase entry
// (compat/aclnn_op.h). The workspace holds the staging copies, then the partial sums of
// gradWeight and gradBias.
#include "aclnnop/aclnn_layer_norm_backward.h"

#include "compat/aclnn_op.h"
#include "ops/layer_norm_grad/layer_norm_grad_desc.h"

using mantissa::detail::LayerNormGradOp;

extern "C" {

aclnnStatus aclnnLayerNormBackwardGetWorkspaceSize(
    const aclTensor* gradOut, const aclTensor* input, const aclIntArray* normalizedShape,
    const aclTensor* mean, const aclTensor* rstd, const aclTensor* weightOptional,
    const aclTensor* biasOptional, const aclBoolArray* outputMask, aclTensor* gradInputOut,
    aclTensor* gradWeightOut, aclTensor* gradBiasOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  return mantissa::compat::aclnn_prepare<LayerNormGradOp>(
      MANTISSA_ACLNN_HANDLES(gradOut, input, mean, rstd, weightOptional, biasOptional, gradInputOut,
                             gradWeightOut, gradBiasOut),
      {}, workspaceSize, executor, {}, {normalizedShape, outputMask});
}

aclnnStatus aclnnLayerNormBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                   aclrtStream stream) {
  return mantissa::compat::aclnn_execute<LayerNormGradOp>(workspace, workspaceSize, executor,
                                                          stream);
}

}  // extern "C"
