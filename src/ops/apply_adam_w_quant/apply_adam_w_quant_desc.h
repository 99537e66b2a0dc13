// ApplyAdamWQuant's declaration: arguments in CANN's aclnn order (also the graph's), attributes.
// See core/op_desc.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/apply_adam_w_quant.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// quant_mode by name: CANN's graph takes a String; its one mode is block-wise.
inline constexpr std::array<GraphString, 1> kAdamWQuantModeStrings{{{"BLOCKWISE", 0}}};

struct ApplyAdamWQuantOp {
  using Tensors = ApplyAdamWQuantTensors;
  using Params = ApplyAdamWQuantParams;
  static constexpr std::string_view kType = "ApplyAdamWQuant";
  static constexpr std::string_view kFunction = "apply_adam_w_quant";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnApplyAdamWQuant";

  enum Arg { kVar, kGrad, kM, kV, kQmapM, kQmapV, kAbsmaxM, kAbsmaxV, kStep };
  // var: a training float updated in place; grad: var's dtype and shape; m, v: uint8 codes of
  // var's shape; the maps and absmax: fp32 vectors whose sizes check_params checks (256, and one
  // per block); step: one INT64.
  static constexpr std::array kArgs{
      InOut("var", "varRef").training_float().rank(1, 8),
      In("grad", "grad").like(kVar).rank(1, 8),
      InOut("m", "mRef").dtype_in({DType::kUInt8}).shape_of(kVar).rank(1, 8),
      InOut("v", "vRef").dtype_in({DType::kUInt8}).shape_of(kVar).rank(1, 8),
      In("qmap_m", "qmapM").float32().rank(1, 1),
      In("qmap_v", "qmapV").float32().rank(1, 1),
      InOut("absmax_m", "absmaxMRef").float32().rank(1, 1),
      InOut("absmax_v", "absmaxVRef").float32().rank(1, 1),
      In("step", "step").dtype_in({DType::kInt64}).one_element(),
  };
  MANTISSA_TENSOR_MEMBERS(var, grad, m, v, qmap_m, qmap_v, absmax_m, absmax_v, step);

  // In the aclnn signature's order (doubles there, rounded to fp32 as CANN's kernel holds them;
  // the defaults are the fp32 values of Params).
  static constexpr std::array kAttrs{
      AttrSpec{"lr", AttrType::kFloat, false, double{1e-3f}},
      AttrSpec{"beta1", AttrType::kFloat, false, double{0.9f}},
      AttrSpec{"beta2", AttrType::kFloat, false, double{0.999f}},
      AttrSpec{"weight_decay", AttrType::kFloat, false, double{1e-2f}},
      AttrSpec{"eps", AttrType::kFloat, false, double{1e-8f}},
      AttrSpec{"gnorm_scale", AttrType::kFloat, false, 1.0},
      AttrSpec{"quant_mode", AttrType::kInt, false, 0.0, {}, false, -1, kAdamWQuantModeStrings},
      AttrSpec{"block_size", AttrType::kInt, false, 256.0},
  };
  MANTISSA_ATTR_MEMBERS(lr, beta1, beta2, weight_decay, eps, gnorm_scale, quant_mode, block_size);

  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static Status check_params(const Tensors& t, const Params& p);
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) {
    return apply_adam_w_quant(t, p);
  }

  // The aclnn string of quant_mode (the kit's aclnn backend passes it as quantModeOptional).
  static const char* aclnn_string(std::size_t /*attr*/, int64_t /*value*/) { return "BLOCKWISE"; }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.aclnn_string = &aclnn_string};
};
static_assert(well_formed<ApplyAdamWQuantOp>());

}  // namespace mantissa::detail
