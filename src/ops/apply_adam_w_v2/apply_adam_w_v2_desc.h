// ApplyAdamWV2's declaration: arguments in CANN's aclnn order, the graph's input order,
// attributes, variants. See core/op_desc.h.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/apply_adam_w_v2.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

struct ApplyAdamWV2Op {
  using Tensors = ApplyAdamWV2Tensors;
  using Params = ApplyAdamWV2Params;
  static constexpr std::string_view kType = "ApplyAdamWV2";
  static constexpr std::string_view kFunction = "apply_adam_w_v2";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnApplyAdamWV2";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "aclTensor* varRef, aclTensor* mRef, aclTensor* vRef, aclTensor* maxGradNormOptionalRef, "
      "const aclTensor* grad, const aclTensor* step, float lr, float beta1, float beta2, "
      "float weightDecay, float eps, bool amsgrad, bool maximize";

  enum Arg { kVar, kM, kV, kMaxGradNorm, kGrad, kStep };
  // State: a training float, rank 1..8, updated in place ("Ref" in the aclnn signature);
  // max_grad_norm may be left out (required with amsgrad: required_by()). grad: var's shape,
  // its dtype rule (var's, or fp16/bf16 with fp32 state) in check_params. step: one element.
  static constexpr std::array kArgs{
      InOut("var", "varRef").training_float().rank(1, 8),
      InOut("m", "mRef").like(kVar).rank(1, 8),
      InOut("v", "vRef").like(kVar).rank(1, 8),
      InOut("max_grad_norm", "maxGradNormOptionalRef").like(kVar).rank(1, 8).optional_input(),
      In("grad", "grad").training_float().shape_of(kVar).rank(1, 8),
      In("step", "step").dtype_in({DType::kInt64, DType::kFloat32}).one_element(),
  };
  MANTISSA_TENSOR_MEMBERS(var, m, v, max_grad_norm, grad, step);
  // The graph definition (op proto) orders its inputs var, m, v, grad, step, max_grad_norm.
  static constexpr std::array kGraphInputs{kVar, kM, kV, kGrad, kStep, kMaxGradNorm};

  // In the aclnn signature's order. Op-by-name defaults are the graph's (0.1, false); the
  // Params defaults are PyTorch's AdamW.
  static constexpr std::array kAttrs{
      AttrSpec{.name = "lr",
               .type = AttrType::kFloat,
               .required_by_name = false,
               .default_value = 0.1,
               .graph_default = true},
      AttrSpec{.name = "beta1",
               .type = AttrType::kFloat,
               .required_by_name = false,
               .default_value = 0.1,
               .graph_default = true},
      AttrSpec{.name = "beta2",
               .type = AttrType::kFloat,
               .required_by_name = false,
               .default_value = 0.1,
               .graph_default = true},
      AttrSpec{.name = "weight_decay",
               .type = AttrType::kFloat,
               .required_by_name = false,
               .default_value = 0.1,
               .graph_default = true},
      AttrSpec{.name = "eps",
               .type = AttrType::kFloat,
               .required_by_name = false,
               .default_value = 0.1,
               .graph_default = true},
      AttrSpec{"amsgrad", AttrType::kBool, false, 0.0},
      AttrSpec{"maximize", AttrType::kBool, false, 0.0},
  };
  MANTISSA_ATTR_MEMBERS(lr, beta1, beta2, weight_decay, eps, amsgrad, maximize);

  // Reads var, m, v, grad (and max_grad_norm); writes var, m, v (and max_grad_norm).
  enum class Variant { kDefault, kAmsgrad };
  static constexpr std::array kVariants{
      VariantSpec<Variant>{Variant::kDefault, "default", {3, 1}},
      VariantSpec<Variant>{Variant::kAmsgrad, "amsgrad", {4, 1}},
  };
  static Params params_for(Variant v) {
    Params p;
    p.amsgrad = v == Variant::kAmsgrad;
    return p;
  }

  // The attribute that makes an optional argument required, or nullptr.
  static const char* required_by(const Params& p, std::size_t k) {
    return k == kMaxGradNorm && p.amsgrad ? "amsgrad" : nullptr;
  }
  static Status check_params(const Tensors& t, const Params& p);
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) {
    return apply_adam_w_v2(t, p);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.required_by = &required_by};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<ApplyAdamWV2Op>());

}  // namespace mantissa::detail
