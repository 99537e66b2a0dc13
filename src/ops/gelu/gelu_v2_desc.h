// GeluV2's declaration: CANN's arguments (aclnnGeluV2's x and y; the graph's x and y) and the
// approximate attribute (an int64 in aclnn, a String by name). See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/gelu.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// The strings of CANN's graph attribute approximate (GeluV2, GeluGradV2).
inline constexpr std::array<GraphString, 2> kGeluApproximateStrings{{{"none", 0}, {"tanh", 1}}};

struct GeluV2Op {
  using Tensors = GeluV2Tensors;
  using Params = GeluV2Params;
  static constexpr std::string_view kType = "GeluV2";
  static constexpr std::string_view kFunction = "gelu_v2";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnGeluV2";
  // CANN's phase-one signature: the build generates aclnnop/aclnn_gelu_v2.h and both entries.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* x, int64_t approximate, aclTensor* y";

  enum Arg { kX, kY };
  static constexpr std::array kArgs{
      In("x", "x").training_float().rank(0, 8),
      Out("y", "y", "y").like(kX).rank(0, 8).in_place_of(kX),
  };
  MANTISSA_TENSOR_MEMBERS(x, y);

  // approximate: 0 none (erf), 1 tanh; aclnn's other values mean none, as upstream's. By name
  // CANN's String ("none", "tanh", default "none") or the Int.
  static constexpr std::array kAttrs{
      AttrSpec{"approximate", AttrType::kInt, false, 0.0, {}, false, -1, kGeluApproximateStrings}};
  MANTISSA_ATTR_MEMBERS(approximate);

  // One read stream and one read-modify-write stream.
  enum class Variant { kNone, kTanh };
  static constexpr std::array kVariants{VariantSpec<Variant>{Variant::kNone, "none", {1, 1}},
                                        VariantSpec<Variant>{Variant::kTanh, "tanh", {1, 1}}};
  static Params params_for(Variant v) {
    return {v == Variant::kTanh ? GeluApproximate::kTanh : GeluApproximate::kNone};
  }

  static Status check_params(const Tensors&, const Params&) { return {}; }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) { return gelu_v2(t, p); }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<GeluV2Op>());

}  // namespace mantissa::detail
