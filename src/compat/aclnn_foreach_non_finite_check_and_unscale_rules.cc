// aclnnForeachNonFiniteCheckAndUnscale's own rules (its entry points are generated from the
// declaration).
#include "compat/aclnn_op.h"
#include "ops/foreach_non_finite_check_and_unscale/foreach_non_finite_check_and_unscale_desc.h"

// The aclnn call's own limits (AclHooks::check_aclnn), before the kernel is reached.
namespace mantissa {

Status detail::ForeachNonFiniteCheckAndUnscaleOp::check_aclnn(const Tensors& t, const Params&) {
  constexpr std::size_t kMaxTensors = 256;
  if (t.scaled_grads.size() > kMaxTensors) {
    return fail(StatusCode::kTiling, kType, "scaled_grads holds {} tensors (at most {})",
                t.scaled_grads.size(), kMaxTensors);
  }
  for (std::size_t i = 0; i < t.scaled_grads.size(); ++i) {
    const TensorView& g = t.scaled_grads[i];
    if (g.dtype != t.scaled_grads[0].dtype) {
      return fail(StatusCode::kTiling, kType,
                  "scaled_grads[{}] dtype {} differs from scaled_grads[0] dtype {} (the aclnn "
                  "call takes one dtype)",
                  i, dtype_name(g.dtype), dtype_name(t.scaled_grads[0].dtype));
    }
    if (g.numel().value_or(0) == 0) {
      return fail(StatusCode::kParamInvalid, kType,
                  "scaled_grads[{}] shape {} is empty (the aclnn call takes no empty tensor)", i,
                  g.shape_string());
    }
  }
  return {};
}

}  // namespace mantissa
