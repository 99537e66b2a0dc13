// ForeachNonFiniteCheckAndUnscale's declaration. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/foreach_non_finite_check_and_unscale.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

struct ForeachNonFiniteCheckAndUnscaleOp {
  using Tensors = ForeachNonFiniteCheckAndUnscaleTensors;
  using Params = ForeachNonFiniteCheckAndUnscaleParams;
  static constexpr std::string_view kType = "ForeachNonFiniteCheckAndUnscale";
  static constexpr std::string_view kFunction =
      "foreach_non_finite_check_and_unscale";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnForeachNonFiniteCheckAndUnscale";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensorList* scaledGrads, const aclTensor* foundInf, const aclTensor* invScale";

  enum Arg { kScaledGrads, kFoundInf, kInvScale };
  // A wrong element count of found_inf or inv_scale is CANN's tiling error (561002).
  static constexpr std::array kArgs{
      InOut("scaled_grads", "scaledGrads").list().training_float().rank(0, 8),
      InOut("found_inf", "foundInf").float32().one_element(StatusCode::kTiling),
      In("inv_scale", "invScale").float32().one_element(StatusCode::kTiling),
  };
  MANTISSA_TENSOR_MEMBERS(scaled_grads, found_inf, inv_scale);
  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();

  // Streams per element: unscale reads and writes the gradient; the check only reads it.
  enum class Variant { kUnscale, kCheckOnly };
  static constexpr std::array kVariants{
      VariantSpec<Variant>{Variant::kUnscale, "unscale", {1, 0}},
      VariantSpec<Variant>{Variant::kCheckOnly, "check-only", {0, 1}},
  };

  // The list's elements together fit int64.
  static Status check_params(const Tensors& t, const Params& p);
  // Upstream's aclnn limits: at most 256 tensors, one dtype, no empty tensor.
  static Status check_aclnn(const Tensors& t, const Params&);
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) {
    return foreach_non_finite_check_and_unscale(t, p);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.check_aclnn = &check_aclnn};
};
static_assert(well_formed<ForeachNonFiniteCheckAndUnscaleOp>());

}  // namespace mantissa::detail
