// RmsNorm's declaration: arguments in CANN's order, the epsilon attribute. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/rms_norm.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

struct RmsNormOp {
  using Tensors = RmsNormTensors;
  using Params = RmsNormParams;
  static constexpr std::string_view kType = "RmsNorm";
  static constexpr std::string_view kFunction = "rms_norm";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnRmsNorm";
  // CANN's phase-one signature: the build generates aclnnop/aclnn_rms_norm.h and both entries
  // from it (cmake/operators.cmake).
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* x, const aclTensor* gamma, double epsilon, const aclTensor* yOut, "
      "const aclTensor* rstdOut";

  enum Arg { kX, kGamma, kY, kRstd };
  // gamma: x's dtype or FLOAT (check_params: FLOAT only with an fp16/bf16 x).
  static constexpr std::array kArgs{
      In("x", "x").training_float().rank(1, 8),
      In("gamma", "gamma")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .trailing_of(kX),
      Out("y", "yOut", "y").like(kX),
      Out("rstd", "rstdOut", "rstd").float32().reduced_of(kX),
  };
  MANTISSA_TENSOR_MEMBERS(x, gamma, y, rstd);

  // A Float attribute in the graph (default 1e-6); a double in aclnn and in Params.
  static constexpr std::array kAttrs{AttrSpec{"epsilon", AttrType::kFloat, false, 1e-6}};
  MANTISSA_ATTR_MEMBERS(epsilon);

  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  // A row spans the trailing dims gamma has.
  static int normalized_dims(const Tensors& t, const Params&) { return t.gamma.rank; }
  static Status check_params(const Tensors& t, const Params& p);
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return rms_norm(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.normalized_dims = &normalized_dims};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<RmsNormOp>());

// gamma's dtype is x's, or FLOAT when x is FLOAT16 or BFLOAT16 (upstream's combinations).
inline Status check_norm_gamma_dtype(std::string_view op, const TensorView& x,
                                     const TensorView& gamma) {
  if (gamma.dtype == x.dtype || (gamma.dtype == DType::kFloat32 && x.dtype != DType::kFloat32)) {
    return {};
  }
  return fail(StatusCode::kParamInvalid, op,
              "gamma dtype {} does not go with x dtype {} (gamma takes x's dtype, or FLOAT when "
              "x is FLOAT16 or BFLOAT16)",
              dtype_name(gamma.dtype), dtype_name(x.dtype));
}

inline Status RmsNormOp::check_params(const Tensors& t, const Params&) {
  return check_norm_gamma_dtype(kType, t.x, t.gamma);
}

}  // namespace mantissa::detail
