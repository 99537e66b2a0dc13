// AddRmsNorm's declaration: arguments in CANN's order (x1, x2, gamma; y, rstd, x), the epsilon
// attribute. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/add_rms_norm.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

struct AddRmsNormOp {
  using Tensors = AddRmsNormTensors;
  using Params = AddRmsNormParams;
  static constexpr std::string_view kType = "AddRmsNorm";
  static constexpr std::string_view kFunction = "add_rms_norm";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnAddRmsNorm";
  // CANN's phase-one signature: the build generates aclnnop/aclnn_add_rms_norm.h and both
  // entries from it (cmake/operators.cmake).
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* x1, const aclTensor* x2, const aclTensor* gamma, double epsilon, "
      "const aclTensor* yOut, const aclTensor* rstdOut, const aclTensor* xOut";

  enum Arg { kX1, kX2, kGamma, kY, kRstd, kX };
  // gamma's shape (x1's trailing dims, or [1, D]) is checked first (check_shape_params): it
  // says which dims a row spans, which rstd's rule needs. Upstream computes into new tensors and
  // copies them out, so an output may share bytes with any input (never with another output):
  // the kernel reads the inputs first where they overlap otherwise (add_rms_norm.cc).
  static constexpr std::array kArgs{
      In("x1", "x1").training_float().rank(1, 8),
      In("x2", "x2").like(kX1),
      In("gamma", "gamma").dtype_of(kX1).rank(1, 8),
      Out("y", "yOut", "y").like(kX1).may_alias_any_input(),
      Out("rstd", "rstdOut", "rstd")
          .float32()
          .reduced_of(kX1)
          .optional_result()
          .may_alias_any_input(),
      Out("x", "xOut", "x").like(kX1).optional_result().may_alias_any_input(),
  };
  MANTISSA_TENSOR_MEMBERS(x1, x2, gamma, y, rstd, x);

  // A Float attribute in the graph (default 1e-6); a double in aclnn and in Params.
  static constexpr std::array kAttrs{AttrSpec{"epsilon", AttrType::kFloat, false, 1e-6}};
  MANTISSA_ATTR_MEMBERS(epsilon);

  // x1 and x2 read, x and y written (a write costs a read for ownership: two read-modify-write
  // streams and two read streams); gamma and rstd are a row's worth, from cache.
  enum class Variant { kDefault };
  static constexpr std::array kVariants{VariantSpec<Variant>{Variant::kDefault, "default", {2, 2}}};
  static Params params_for(Variant) { return {}; }

  // Whether gamma's shape is x1's trailing dims (ranks not yet checked are no match).
  static bool gamma_is_trailing(const Tensors& t) {
    const TensorView &x1 = t.x1, &g = t.gamma;
    if (g.rank < 1 || g.rank > kMaxRank || x1.rank > kMaxRank || g.rank > x1.rank) return false;
    for (int i = 0; i < g.rank; ++i) {
      if (g.shape[i] != x1.shape[x1.rank - g.rank + i]) return false;
    }
    return true;
  }
  // A row spans the trailing dims gamma has; with gamma [1, D] (not x1's trailing dims), x1's
  // last dim.
  static int normalized_dims(const Tensors& t, const Params&) {
    return gamma_is_trailing(t) ? t.gamma.rank : 1;
  }
  static Status check_shape_params(const Tensors& t, const Params&);
  static Status check_params(const Tensors&, const Params&) { return {}; }
  static uint64_t workspace_size(const Tensors& t, const Params& p) {
    return add_rms_norm_workspace_size(t, p);
  }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return add_rms_norm(t, p, ws);
  }

  // aclnn's combinations (upstream): rstdOut given needs xOut (161001); rstdOut left out takes
  // FLOAT16 or BFLOAT16 and a gamma of rank 1 or 2 (161002). Defined in
  // compat/aclnn_add_rms_norm_rules.cc.
  static Status check_aclnn_early(const Tensors& t, const Params& p);
  static Status check_aclnn(const Tensors& t, const Params& p);

  static constexpr OpHooks<Tensors, Params> kHooks{.normalized_dims = &normalized_dims,
                                                   .check_shape_params = &check_shape_params};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.check_aclnn_early = &check_aclnn_early,
                                                       .check_aclnn = &check_aclnn};
};
static_assert(well_formed<AddRmsNormOp>());

// gamma: x1's trailing dims, or [1, D] with D x1's last dim (upstream's form for the calls
// without rstd, taken as [D]). Ranks out of range are left to the rank rules.
inline Status AddRmsNormOp::check_shape_params(const Tensors& t, const Params&) {
  const TensorView &x1 = t.x1, &g = t.gamma;
  if (x1.rank < 1 || x1.rank > kMaxRank || g.rank < 1 || g.rank > kMaxRank) return {};
  if (gamma_is_trailing(t) ||
      (g.rank == 2 && g.shape[0] == 1 && g.shape[1] == x1.shape[x1.rank - 1])) {
    return {};
  }
  return fail(StatusCode::kParamInvalid, kType,
              "gamma shape {} must be the trailing dims of x1 shape {} (rank 1 to {}), or [1, {}] "
              "(x1's last dim)",
              g.shape_string(), x1.shape_string(), x1.rank, x1.shape[x1.rank - 1]);
}

}  // namespace mantissa::detail
