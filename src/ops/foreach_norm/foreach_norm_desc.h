// ForeachNorm's declaration. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/foreach_norm.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

struct ForeachNormOp {
  using Tensors = ForeachNormTensors;
  using Params = ForeachNormParams;
  static constexpr std::string_view kType = "ForeachNorm";
  static constexpr std::string_view kFunction = "foreach_norm";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnForeachNorm";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensorList* x, const aclScalar* scalar, const aclTensorList* out";

  enum Arg { kX, kOut };
  // out[i] has x[i]'s dtype and one element; a wrong element count is CANN's tiling error
  // (561002). The graph names the output list "y".
  static constexpr std::array kArgs{
      In("x", "x").list().training_float().rank(0, 8),
      Out("out", "out", "y")
          .per_element_of(kX)
          .dtype_of(kX)
          .rank(0, 8)
          .one_element(StatusCode::kTiling),
  };
  MANTISSA_TENSOR_MEMBERS(x, out);
  // p: an aclScalar in aclnn, the one-element input tensor "scalar" by name.
  static constexpr std::array kAttrs{
      AttrSpec{"p", AttrType::kScalar, /*required_by_name=*/true, 2.0, "scalar"}};
  MANTISSA_ATTR_MEMBERS(p);

  // Every variant reads each element once and writes one value per tensor.
  enum class Variant { kL2, kL1, kInf };
  static constexpr std::array kVariants{
      VariantSpec<Variant>{Variant::kL2, "p2", {0, 1}},
      VariantSpec<Variant>{Variant::kL1, "p1", {0, 1}},
      VariantSpec<Variant>{Variant::kInf, "pinf", {0, 1}},
  };
  static Params params_for(Variant v) {
    switch (v) {
      case Variant::kL1: return {1.0};
      case Variant::kInf: return {__builtin_inf()};
      case Variant::kL2: break;
    }
    return {2.0};
  }

  // p is 2, 1 or +inf.
  static Status check_params(const Tensors& t, const Params& p);
  // Upstream's aclnn tiling rules, before the dtype and rank rules: one dtype across x and one
  // across out, then ranks up to 8 (561002), judged once every element is given (else 161001
  // first) and of a supported dtype (else 161002 first).
  static Status check_aclnn_early(const Tensors& t, const Params&);
  static uint64_t workspace_size(const Tensors& t, const Params& p) {
    return foreach_norm_workspace_size(t, p);
  }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return foreach_norm(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.check_aclnn_early = &check_aclnn_early};
};
static_assert(well_formed<ForeachNormOp>());

}  // namespace mantissa::detail
