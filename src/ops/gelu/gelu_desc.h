// Gelu's declaration: CANN's arguments (aclnnGelu's self and out; the graph's x and y), no
// attributes. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/gelu.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

struct GeluOp {
  using Tensors = GeluTensors;
  using Params = GeluParams;
  static constexpr std::string_view kType = "Gelu";
  static constexpr std::string_view kFunction = "gelu";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnGelu";
  // CANN's phase-one signature: the build generates aclnnop/aclnn_gelu.h and both entry points.
  static constexpr std::string_view kAclnnSignature = "const aclTensor* self, aclTensor* out";

  enum Arg { kSelf, kOut };
  static constexpr std::array kArgs{
      ArgSpec{"self", "self", "x", Role::kIn}.training_float().rank(0, 8),
      Out("out", "out", "y").like(kSelf).rank(0, 8).in_place_of(kSelf),
  };
  MANTISSA_TENSOR_MEMBERS(self, out);

  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();

  // Out of place: self read, out written (a write costs a read for ownership: one
  // read-modify-write stream and one read stream).
  enum class Variant { kDefault };
  static constexpr std::array kVariants{VariantSpec<Variant>{Variant::kDefault, "default", {1, 1}}};
  static Params params_for(Variant) { return {}; }

  static Status check_params(const Tensors&, const Params&) { return {}; }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) { return gelu(t, p); }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<GeluOp>());

}  // namespace mantissa::detail
