// SwiGluGrad's declaration: CANN's arguments (aclnnSwiGluGrad's yGrad, x, dim and out; the
// graph's y_grad, x, x_grad and its dim attribute, default -1). See core/op_desc.h.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/swi_glu.h"
#include "mantissa/workspace.h"
#include "ops/swi_glu/swi_glu_desc.h"

namespace mantissa::detail {

struct SwiGluGradOp {
  using Tensors = SwiGluGradTensors;
  using Params = SwiGluGradParams;
  static constexpr std::string_view kType = "SwiGluGrad";
  static constexpr std::string_view kFunction = "swi_glu_grad";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnSwiGluGrad";
  // CANN's phase-one signature: the build generates aclnnop/aclnn_swi_glu_grad.h and both entry
  // points.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* yGrad, const aclTensor* x, int64_t dim, const aclTensor* out";

  enum Arg { kYGrad, kX, kOut };
  static constexpr std::array kArgs{
      In("y_grad", "yGrad").training_float().rank(1, 8),  // its shape: check_params
      In("x", "x").dtype_of(kYGrad).rank(1, 8),
      // Each element pair of x is read before its two results are written: in place is safe.
      Out("out", "out", "x_grad").like(kX).rank(1, 8).in_place_of(kX),
  };
  MANTISSA_TENSOR_MEMBERS(y_grad, x, out);

  static constexpr std::array kAttrs{AttrSpec{"dim", AttrType::kInt, false, -1.0}};
  MANTISSA_ATTR_MEMBERS(dim);

  // Per element of y_grad: y_grad, A and B read (three read streams), dA and dB written (two
  // read-modify-write streams). tools/mantissa/bench_cases.cc gives x the shape [rows, 2 * 4096].
  enum class Variant { kDefault };
  static constexpr std::array kVariants{VariantSpec<Variant>{Variant::kDefault, "default", {2, 3}}};
  static Params params_for(Variant) { return {}; }

  // dim in range, x's size along it even, y_grad x's shape halved there.
  static Status check_params(const Tensors& t, const Params& p) {
    int d = 0;
    MANTISSA_RETURN_IF_ERROR(check_swi_glu_split(kType, t.x, p.dim, &d));
    return check_swi_glu_half(kType, "y_grad", t.y_grad, t.x, d);
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) {
    return swi_glu_grad(t, p);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<SwiGluGradOp>());

}  // namespace mantissa::detail
