// DynamicMxQuant's declaration: arguments in CANN's aclnn order (aclnnDynamicMxQuantV3), the
// attributes. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "mantissa/ops/dynamic_mx_quant.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// axis, dst_type, round_mode, blocksize, scale_alg, dst_type_max, max_low_bound, y's dtype and
// mxscale's shape (dynamic_mx_quant.cc).
Status check_dynamic_mx_quant_params(const DynamicMxQuantTensors& t, const DynamicMxQuantParams& p);
// mxscale's shape for x's shape and the attributes: x's shape with dim `axis` holding
// ceil(ceil(x.shape[axis] / blocksize) / 2), then a last dim of 2 (an axis out of range or a
// blocksize below 1 leaves x's dims as they are).
inline std::vector<int64_t> mx_scale_shape(const TensorView& x, const DynamicMxQuantParams& p) {
  std::vector<int64_t> s(x.shape.begin(), x.shape.begin() + x.rank);
  if (p.axis >= -x.rank && p.axis < x.rank && p.blocksize > 0) {
    int64_t& d = s[static_cast<std::size_t>(p.axis < 0 ? p.axis + x.rank : p.axis)];
    const int64_t blocks = d / p.blocksize + (d % p.blocksize != 0 ? 1 : 0);
    d = blocks / 2 + blocks % 2;
  }
  s.push_back(2);
  return s;
}

// The strings of CANN's graph attribute round_mode.
inline constexpr std::array<GraphString, 3> kMxRoundModeStrings{{
    {"rint", static_cast<int64_t>(MxRoundMode::kRint)},
    {"floor", static_cast<int64_t>(MxRoundMode::kFloor)},
    {"round", static_cast<int64_t>(MxRoundMode::kRound)},
}};

struct DynamicMxQuantOp {
  using Tensors = DynamicMxQuantTensors;
  using Params = DynamicMxQuantParams;
  static constexpr std::string_view kType = "DynamicMxQuant";
  static constexpr std::string_view kFunction = "dynamic_mx_quant";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnDynamicMxQuantV3";

  enum Arg { kX, kY, kMxScale };
  static constexpr std::array kArgs{
      In("x", "x").training_float().rank(1, 7),
      Out("y", "yOut", "y")
          .dtype_in(
              {DType::kFloat8E5M2, DType::kFloat8E4M3FN, DType::kFloat4E2M1, DType::kFloat4E1M2})
          .shape_of(kX),
      Out("mxscale", "mxscaleOut", "mxscale").dtype_in({DType::kFloat8E8M0}).rank(2, 8),
  };
  MANTISSA_TENSOR_MEMBERS(x, y, mxscale);

  // In the aclnn signature's order (roundModeOptional a string there, mapped by the entry).
  static constexpr std::array kAttrs{
      AttrSpec{"axis", AttrType::kInt, false, -1.0},
      AttrSpec{"round_mode", AttrType::kInt, false, 0.0, {}, false, -1, kMxRoundModeStrings},
      AttrSpec{"dst_type", AttrType::kInt, false, static_cast<double>(DType::kFloat8E4M3FN)},
      AttrSpec{"blocksize", AttrType::kInt, false, 32.0},
      AttrSpec{"scale_alg", AttrType::kInt, false, 0.0},
      AttrSpec{"dst_type_max", AttrType::kFloat, false, 0.0},
      AttrSpec{"max_low_bound", AttrType::kFloat, false, 0.0},
  };
  MANTISSA_ATTR_MEMBERS(axis, round_mode, dst_type, blocksize, scale_alg, dst_type_max,
                        max_low_bound);

  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static Status check_params(const Tensors& t, const Params& p) {
    return check_dynamic_mx_quant_params(t, p);
  }
  // The kit's new outputs: y in dst_type; mxscale in its layout.
  static void infer_output(std::size_t k, const Tensors& t, const Params& p, DType& dtype,
                           std::vector<int64_t>& shape) {
    if (k == kY) dtype = p.dst_type;
    if (k == kMxScale) {
      dtype = DType::kFloat8E8M0;
      shape = mx_scale_shape(t.x, p);
    }
  }
  static const char* aclnn_string(std::size_t /*attr*/, int64_t value) {
    return mx_round_mode_name(static_cast<MxRoundMode>(value));
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return dynamic_mx_quant(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.aclnn_string = &aclnn_string};
};
static_assert(well_formed<DynamicMxQuantOp>());

}  // namespace mantissa::detail
