// ApplyAdamD's declaration: arguments in CANN's order, attributes, variants. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/apply_adam_d.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

struct ApplyAdamDOp {
  using Tensors = ApplyAdamDTensors;
  using Params = ApplyAdamDParams;
  static constexpr std::string_view kType = "ApplyAdamD";
  static constexpr std::string_view kFunction = "apply_adam_d";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnApplyAdamD";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* var, const aclTensor* m, const aclTensor* v, "
      "const aclTensor* beta1Power, const aclTensor* beta2Power, const aclTensor* lr, "
      "const aclTensor* beta1, const aclTensor* beta2, const aclTensor* epsilon, "
      "const aclTensor* grad, bool useLocking, bool useNesterov, aclTensor* varOut, "
      "aclTensor* mOut, aclTensor* vOut";

  enum Arg {
    kVar,
    kM,
    kV,
    kBeta1Power,
    kBeta2Power,
    kLr,
    kBeta1,
    kBeta2,
    kEpsilon,
    kGrad,
    kVarOut,
    kMOut,
    kVOut
  };
  // State and gradient: var's dtype (a training float) and shape, rank 0..8, empty allowed.
  // Scalars: var's dtype, one element. Outputs: in place or separate buffers of var's shape.
  static constexpr std::array kArgs{
      In("var", "var").training_float().rank(0, 8),
      In("m", "m").like(kVar).rank(0, 8),
      In("v", "v").like(kVar).rank(0, 8),
      In("beta1_power", "beta1Power").dtype_of(kVar).rank(0, 8).one_element(),
      In("beta2_power", "beta2Power").dtype_of(kVar).rank(0, 8).one_element(),
      In("lr", "lr").dtype_of(kVar).rank(0, 8).one_element(),
      In("beta1", "beta1").dtype_of(kVar).rank(0, 8).one_element(),
      In("beta2", "beta2").dtype_of(kVar).rank(0, 8).one_element(),
      In("epsilon", "epsilon").dtype_of(kVar).rank(0, 8).one_element(),
      In("grad", "grad").like(kVar).rank(0, 8),
      Out("var_out", "varOut", "var").like(kVar).rank(0, 8).in_place_of(kVar).optional_output(),
      Out("m_out", "mOut", "m").like(kVar).rank(0, 8).in_place_of(kM).optional_output(),
      Out("v_out", "vOut", "v").like(kVar).rank(0, 8).in_place_of(kV).optional_output(),
  };
  MANTISSA_TENSOR_MEMBERS(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
                          var_out, m_out, v_out);

  static constexpr std::array kAttrs{
      AttrSpec{"use_locking", AttrType::kBool, false, 0.0},  // accepted; no numeric effect
      AttrSpec{"use_nesterov", AttrType::kBool, false, 0.0},
  };
  MANTISSA_ATTR_MEMBERS(use_locking, use_nesterov);

  // Reads var, m, v, grad; writes var, m, v.
  enum class Variant { kDefault, kNesterov };
  static constexpr std::array kVariants{
      VariantSpec<Variant>{Variant::kDefault, "default", {3, 1}},
      VariantSpec<Variant>{Variant::kNesterov, "nesterov", {3, 1}},
  };
  static Params params_for(Variant v) {
    Params p;
    p.use_nesterov = v == Variant::kNesterov;
    return p;
  }

  static Status check_params(const Tensors&, const Params&) { return {}; }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) {
    return apply_adam_d(t, p);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<ApplyAdamDOp>());

}  // namespace mantissa::detail
