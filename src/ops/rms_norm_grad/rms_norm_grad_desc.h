// RmsNormGrad's declaration: arguments in CANN's order, no attributes. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/rms_norm_grad.h"
#include "mantissa/workspace.h"
#include "ops/rms_norm/rms_norm_desc.h"

namespace mantissa::detail {

struct RmsNormGradOp {
  using Tensors = RmsNormGradTensors;
  using Params = RmsNormGradParams;
  static constexpr std::string_view kType = "RmsNormGrad";
  static constexpr std::string_view kFunction = "rms_norm_grad";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnRmsNormGrad";
  // CANN's phase-one signature (generated entries: cmake/operators.cmake).
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* dy, const aclTensor* x, const aclTensor* rstd, const aclTensor* gamma, "
      "const aclTensor* dxOut, const aclTensor* dgammaOut";

  enum Arg { kDy, kX, kRstd, kGamma, kDx, kDgamma };
  static constexpr std::array kArgs{
      In("dy", "dy").training_float().rank(1, 8),
      In("x", "x").like(kDy),
      In("rstd", "rstd").float32().reduced_of(kX),
      In("gamma", "gamma")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .trailing_of(kX),
      Out("dx", "dxOut", "dx").like(kX),
      Out("dgamma", "dgammaOut", "dgamma").float32().shape_of(kGamma),
  };
  MANTISSA_TENSOR_MEMBERS(dy, x, rstd, gamma, dx, dgamma);
  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();

  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static int normalized_dims(const Tensors& t, const Params&) { return t.gamma.rank; }
  static Status check_params(const Tensors& t, const Params&) {
    return check_norm_gamma_dtype(kType, t.x, t.gamma);
  }
  static uint64_t workspace_size(const Tensors& t, const Params& p) {
    return rms_norm_grad_workspace_size(t, p);
  }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return rms_norm_grad(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.normalized_dims = &normalized_dims};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<RmsNormGradOp>());

}  // namespace mantissa::detail
