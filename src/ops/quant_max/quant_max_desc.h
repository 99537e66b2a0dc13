// QuantMax's declaration: arguments in CANN's aclnn order, round_mode and dst_type. See
// core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "mantissa/ops/quant_max.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// dst_type, y's dtype and round_mode (quant_max.cc).
Status check_quant_max_params(const QuantMaxTensors& t, const QuantMaxParams& p);

// The strings of CANN's graph attribute round_mode (the graph capitalises them; aclnn's roundMode
// takes the lower-case ones).
inline constexpr std::array<GraphString, 6> kQuantMaxRoundModeStrings{{
    {"rint", static_cast<int64_t>(QuantMaxRoundMode::kRint)},
    {"Rint", static_cast<int64_t>(QuantMaxRoundMode::kRint)},
    {"round", static_cast<int64_t>(QuantMaxRoundMode::kRound)},
    {"Round", static_cast<int64_t>(QuantMaxRoundMode::kRound)},
    {"hybrid", static_cast<int64_t>(QuantMaxRoundMode::kHybrid)},
    {"Hybrid", static_cast<int64_t>(QuantMaxRoundMode::kHybrid)},
}};

struct QuantMaxOp {
  using Tensors = QuantMaxTensors;
  using Params = QuantMaxParams;
  static constexpr std::string_view kType = "QuantMax";
  static constexpr std::string_view kFunction = "quant_max";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnQuantMax";

  enum Arg { kX, kScale, kY, kAmax };
  static constexpr std::array kArgs{
      In("x", "x").training_float().rank(1, 8),
      In("scale", "scale").float32().one_element(),
      Out("y", "y", "y").dtype_in({DType::kFloat8E5M2, DType::kFloat8E4M3FN}).shape_of(kX),
      Out("amax", "amax", "amax").dtype_of(kX).one_element(),
  };
  MANTISSA_TENSOR_MEMBERS(x, scale, y, amax);

  // round_mode: a string in aclnn ("rint", mapped by the entry) and by name (CANN's String);
  // dst_type: an aclDataType value (int64 in aclnn).
  static constexpr std::array kAttrs{
      AttrSpec{"round_mode", AttrType::kInt, false, 0.0, {}, false, -1, kQuantMaxRoundModeStrings},
      AttrSpec{"dst_type", AttrType::kInt, true, static_cast<double>(DType::kFloat8E4M3FN)},
  };
  MANTISSA_ATTR_MEMBERS(round_mode, dst_type);

  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static Status check_params(const Tensors& t, const Params& p) {
    return check_quant_max_params(t, p);
  }
  // The kit's new outputs: y in the dtype dst_type names; amax one element.
  static void infer_output(std::size_t k, const Tensors&, const Params& p, DType& dtype,
                           std::vector<int64_t>& shape) {
    if (k == kY) dtype = p.dst_type;
    if (k == kAmax) shape = {1};
  }
  // The aclnn backend of the kit passes round_mode as aclnn's roundMode.
  static const char* aclnn_string(std::size_t /*attr*/, int64_t value) {
    return quant_max_round_mode_name(static_cast<QuantMaxRoundMode>(value));
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return quant_max(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.aclnn_string = &aclnn_string};
};
static_assert(well_formed<QuantMaxOp>());

}  // namespace mantissa::detail
