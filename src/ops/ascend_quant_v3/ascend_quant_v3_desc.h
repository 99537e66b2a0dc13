// AscendQuantV3's declaration: arguments in CANN's aclnn order, sqrt_mode, round_mode, dst_type
// and axis. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "mantissa/ops/ascend_quant_v3.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// dst_type, round_mode, axis, y's dtype and shape, the sizes and dtypes of scale and offset
// (ascend_quant_v3.cc).
Status check_ascend_quant_v3_params(const AscendQuantV3Tensors& t, const AscendQuantV3Params& p);

// The strings of CANN's graph attribute round_mode.
inline constexpr std::array<GraphString, 4> kRoundModeStrings{
    {{"round", 0}, {"floor", 1}, {"ceil", 2}, {"trunc", 3}}};

struct AscendQuantV3Op {
  using Tensors = AscendQuantV3Tensors;
  using Params = AscendQuantV3Params;
  static constexpr std::string_view kType = "AscendQuantV2";
  static constexpr std::string_view kFunction = "ascend_quant_v3";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnAscendQuantV3";

  enum Arg { kX, kScale, kOffset, kY };
  static constexpr std::array kArgs{
      In("x", "x").training_float().rank(1, 8),
      In("scale", "scale").training_float().rank(1, 1),
      In("offset", "offset").dtype_of(kScale).shape_of(kScale).optional_input(),
      Out("y", "y", "y")
          .dtype_in({DType::kInt8, DType::kInt4, DType::kInt32, DType::kFloat8E4M3FN,
                     DType::kFloat8E5M2}),
  };
  MANTISSA_TENSOR_MEMBERS(x, scale, offset, y);

  // round_mode: a string in aclnn ("round", "floor", "ceil", "trunc", mapped by the entry); by
  // name CANN's String or an Int holding upstream's mode number (0..3).
  static constexpr std::array kAttrs{
      AttrSpec{"sqrt_mode", AttrType::kBool, false, 0.0},
      AttrSpec{"round_mode", AttrType::kInt, false, 0.0, {}, false, -1, kRoundModeStrings},
      AttrSpec{"dst_type", AttrType::kInt, false, static_cast<double>(DType::kInt8)},
      AttrSpec{"axis", AttrType::kInt, false, -1.0},
  };
  MANTISSA_ATTR_MEMBERS(sqrt_mode, round_mode, dst_type, axis);

  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static Status check_params(const Tensors& t, const Params& p) {
    return check_ascend_quant_v3_params(t, p);
  }
  // The kit's y: dtype dst_type, x's shape (INT32: the last dim / 8).
  static void infer_output(std::size_t k, const Tensors&, const Params& p, DType& dtype,
                           std::vector<int64_t>& shape) {
    if (k != kY) return;
    dtype = p.dst_type;
    if (p.dst_type == DType::kInt32 && !shape.empty()) shape.back() /= 8;
  }
  // The aclnn string of attribute `attr` holding `value` (the kit's aclnn backend passes
  // round_mode as aclnn's roundMode).
  static const char* aclnn_string(std::size_t /*attr*/, int64_t value) {
    return quant_round_mode_name(static_cast<QuantRoundMode>(value));
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return ascend_quant_v3(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.aclnn_string = &aclnn_string};
};
static_assert(well_formed<AscendQuantV3Op>());

}  // namespace mantissa::detail
