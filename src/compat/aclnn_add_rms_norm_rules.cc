// aclnnAddRmsNorm's own rules (its entry points are generated from the declaration): upstream's
// combinations of the outputs a call may leave null.
#include "compat/aclnn_op.h"
#include "ops/add_rms_norm/add_rms_norm_desc.h"

namespace mantissa {

// Before the common rules, as upstream checks its null pointers first: rstdOut without xOut is
// 161001 (upstream's calls give both, xOut alone, or neither).
Status detail::AddRmsNormOp::check_aclnn_early(const Tensors& t, const Params&) {
  if (t.rstd && !t.x) {
    return fail(StatusCode::kParamNullptr, kType,
                "xOut is null while rstdOut is given (rstdOut needs xOut; leave both null, or "
                "rstdOut alone)");
  }
  return {};
}

// After the common rules: a call without rstdOut is upstream's pre- or post-norm form, which
// takes FLOAT16 or BFLOAT16 and a gamma of rank 1 or 2 (161002).
Status detail::AddRmsNormOp::check_aclnn(const Tensors& t, const Params&) {
  if (t.rstd) return {};
  if (t.x1.dtype != DType::kFloat16 && t.x1.dtype != DType::kBFloat16) {
    return fail(StatusCode::kParamInvalid, kType,
                "x1 dtype {} is not supported without rstdOut (FLOAT16 or BFLOAT16; FLOAT needs "
                "rstdOut and xOut)",
                dtype_name(t.x1.dtype));
  }
  if (t.gamma.rank > 2) {
    return fail(StatusCode::kParamInvalid, kType,
                "gamma rank {} (shape {}) is above 2, which a call without rstdOut does not take",
                t.gamma.rank, t.gamma.shape_string());
  }
  return {};
}

}  // namespace mantissa
