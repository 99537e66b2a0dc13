// aclnnCrossEntropyLoss and aclnnCrossEntropyLossGrad: CANN's C signatures over the generic
// two-phase entry (compat/aclnn_op.h), which stages non-contiguous tensors through the workspace.
// reductionOptional's string is mapped here (null: "mean"); upstream's aclnn codes for shapes and
// attribute values out of range (561002) are the declarations' check_aclnn_early.
#include "aclnnop/aclnn_cross_entropy_loss.h"

#include <fmt/format.h>

#include <initializer_list>

#include "aclnnop/aclnn_cross_entropy_loss_grad.h"
#include "compat/aclnn_op.h"
#include "ops/cross_entropy_loss/cross_entropy_loss_desc.h"
#include "ops/cross_entropy_loss_grad/cross_entropy_loss_grad_desc.h"

using mantissa::detail::CrossEntropyLossGradOp;
using mantissa::detail::CrossEntropyLossOp;

namespace mantissa {
namespace {

// Whether every tensor is given (data, or nothing to hold) and of a dtype its rule accepts: only
// then are upstream's 561002 rules judged (a null or a dtype outside the rules is 161001 or
// 161002 first, from the common validation).
bool given(const TensorView& v) { return v.data != nullptr || v.numel().value_or(1) == 0; }
bool is_target_dtype(DType d) { return d == DType::kInt64 || d == DType::kInt32; }

// The rows and classes of an [N, C] tensor, the target [N] and the weight [C] as upstream's aclnn
// takes them: anything else is its tiling error (561002).
Status check_rows(std::string_view op, const char* name, const TensorView& x,
                  const TensorView& target, const std::optional<TensorView>& weight) {
  if (x.rank != 2) {
    return detail::fail(StatusCode::kTiling, op, "{} {} must be [N, C] (rank 2)", name,
                        x.shape_string());
  }
  if (x.shape[1] < 1) {
    return detail::fail(StatusCode::kTiling, op, "{} {} has no classes (C must be at least 1)",
                        name, x.shape_string());
  }
  if (target.rank != 1 || target.shape[0] != x.shape[0]) {
    return detail::fail(StatusCode::kTiling, op,
                        "target {} does not hold one class per row of {} {}", target.shape_string(),
                        name, x.shape_string());
  }
  if (weight && (weight->rank != 1 || weight->shape[0] != x.shape[1])) {
    return detail::fail(StatusCode::kTiling, op,
                        "weightOptional {} does not hold one value per class of {} {}",
                        weight->shape_string(), name, x.shape_string());
  }
  return {};
}

}  // namespace

Status detail::CrossEntropyLossOp::check_aclnn_early(const Tensors& t, const Params& p) {
  for (const TensorView* v :
       {&t.input, &t.target, &t.loss, &t.log_prob, &t.zloss, &t.lse_for_zloss}) {
    if (!given(*v)) return {};
  }
  if (t.weight && (!given(*t.weight) || t.weight->dtype != DType::kFloat32)) return {};
  if (!is_training_float(t.input.dtype) || !is_target_dtype(t.target.dtype)) return {};
  for (const TensorView* v : {&t.loss, &t.log_prob, &t.zloss, &t.lse_for_zloss}) {
    if (v->dtype != t.input.dtype) return {};
  }
  MANTISSA_RETURN_IF_ERROR(check_rows(kType, "input", t.input, t.target, t.weight));
  if (!(p.label_smoothing >= 0.0 && p.label_smoothing <= 1.0)) {
    return fail(StatusCode::kTiling, kType, "labelSmoothing {} is outside [0, 1]",
                p.label_smoothing);
  }
  return {};
}

Status detail::CrossEntropyLossGradOp::check_aclnn_early(const Tensors& t, const Params&) {
  for (const TensorView* v : {&t.grad_loss, &t.log_prob, &t.target, &t.out}) {
    if (!given(*v)) return {};
  }
  if (t.weight && (!given(*t.weight) || t.weight->dtype != DType::kFloat32)) return {};
  if (!is_training_float(t.grad_loss.dtype) || !is_target_dtype(t.target.dtype)) return {};
  for (const std::optional<TensorView>& v :
       {std::optional<TensorView>(t.log_prob), std::optional<TensorView>(t.out), t.grad_zloss,
        t.lse_for_zloss}) {
    if (v && (!given(*v) || v->dtype != t.grad_loss.dtype)) return {};
  }
  return check_rows(kType, "logProb", t.log_prob, t.target, t.weight);
}

}  // namespace mantissa

extern "C" {

aclnnStatus aclnnCrossEntropyLossGetWorkspaceSize(
    const aclTensor* input, const aclTensor* target, const aclTensor* weightOptional,
    const char* reductionOptional, int64_t ignoreIndex, double labelSmoothing,
    double lseSquareScaleForZloss, bool returnZloss, const aclTensor* lossOut,
    const aclTensor* logProbOut, const aclTensor* zlossOut, const aclTensor* lseForZlossOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  constexpr const char* fn = "aclnnCrossEntropyLossGetWorkspaceSize";
  mantissa::CrossEntropyLossParams p;
  // Upstream: a reduction out of range is its tiling error (561002).
  if (reductionOptional != nullptr &&
      !mantissa::loss_reduction_from_name(reductionOptional, p.reduction)) {
    mantissa::compat::set_recent_error(fmt::format(
        "{}: reductionOptional \"{}\" is not one of none, mean, sum", fn, reductionOptional));
    return ACLNN_ERR_INNER_TILING_ERROR;
  }
  p.ignore_index = ignoreIndex;
  p.label_smoothing = labelSmoothing;
  p.lse_square_scale_for_zloss = lseSquareScaleForZloss;
  p.return_zloss = returnZloss;
  return mantissa::compat::aclnn_prepare<CrossEntropyLossOp>(
      MANTISSA_ACLNN_HANDLES(input, target, weightOptional, lossOut, logProbOut, zlossOut,
                             lseForZlossOut),
      p, workspaceSize, executor);
}

aclnnStatus aclnnCrossEntropyLoss(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                  aclrtStream stream) {
  return mantissa::compat::aclnn_execute<CrossEntropyLossOp>(workspace, workspaceSize, executor,
                                                             stream);
}

aclnnStatus aclnnCrossEntropyLossGradGetWorkspaceSize(
    const aclTensor* gradLoss, const aclTensor* logProb, const aclTensor* target,
    const aclTensor* weightOptional, const aclTensor* gradZlossOptional,
    const aclTensor* lseForZlossOptional, const char* reductionOptional, int64_t ignoreIndex,
    double labelSmoothing, double lseSquareScaleForZloss, const aclTensor* out,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  constexpr const char* fn = "aclnnCrossEntropyLossGradGetWorkspaceSize";
  mantissa::CrossEntropyLossGradParams p;
  if (reductionOptional != nullptr &&
      !mantissa::loss_reduction_from_name(reductionOptional, p.reduction)) {
    mantissa::compat::set_recent_error(fmt::format(
        "{}: reductionOptional \"{}\" is not one of none, mean, sum", fn, reductionOptional));
    return ACLNN_ERR_PARAM_INVALID;
  }
  p.ignore_index = ignoreIndex;
  p.label_smoothing = labelSmoothing;
  p.lse_square_scale_for_zloss = lseSquareScaleForZloss;
  return mantissa::compat::aclnn_prepare<CrossEntropyLossGradOp>(
      MANTISSA_ACLNN_HANDLES(gradLoss, logProb, target, weightOptional, gradZlossOptional,
                             lseForZlossOptional, out),
      p, workspaceSize, executor);
}

aclnnStatus aclnnCrossEntropyLossGrad(void* workspace, uint64_t workspaceSize,
                                      aclOpExecutor* executor, aclrtStream stream) {
  return mantissa::compat::aclnn_execute<CrossEntropyLossGradOp>(workspace, workspaceSize, executor,
                                                                 stream);
}

}  // extern "C"
