// SwiGlu's declaration: CANN's arguments (aclnnSwiGlu's x, dim and out; the graph's x, y and its
// dim attribute, default -1), and the split rules SwiGluGrad shares. See core/op_desc.h.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "core/rows.h"
#include "mantissa/ops/swi_glu.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// x's split along dim: dim within x's rank and an even size there (161002 naming the operator,
// the argument and the values). On success *wrapped is dim in [0, rank).
inline Status check_swi_glu_split(std::string_view op, const TensorView& x, int64_t dim,
                                  int* wrapped) {
  const std::optional<int> d = x.rank > 0 ? wrap_dim(dim, x.rank) : std::nullopt;
  if (!d) {
    return Status(StatusCode::kParamInvalid,
                  fmt::format("{}: dim is {} but must be in [{}, {}) for x of rank {}", op, dim,
                              -x.rank, x.rank, x.rank));
  }
  if (x.shape[*d] % 2 != 0) {
    return Status(StatusCode::kParamInvalid,
                  fmt::format("{}: x has size {} along dim {} (shape {}); it must be even to "
                              "split into two halves",
                              op, x.shape[*d], dim, x.shape_string()));
  }
  *wrapped = *d;
  return {};
}

// `half` (named `name`) has x's shape with the size along dim d halved (161002 otherwise).
inline Status check_swi_glu_half(std::string_view op, std::string_view name, const TensorView& half,
                                 const TensorView& x, int d) {
  bool ok = half.rank == x.rank;
  for (int i = 0; ok && i < x.rank; ++i) {
    ok = half.shape[i] == (i == d ? x.shape[i] / 2 : x.shape[i]);
  }
  if (!ok) {
    TensorView want = x;
    want.shape[d] /= 2;
    return Status(
        StatusCode::kParamInvalid,
        fmt::format("{}: {} has shape {} but must be {}: x's shape {} halved along dim {}", op,
                    name, half.shape_string(), want.shape_string(), x.shape_string(), d));
  }
  return {};
}

struct SwiGluOp {
  using Tensors = SwiGluTensors;
  using Params = SwiGluParams;
  static constexpr std::string_view kType = "SwiGlu";
  static constexpr std::string_view kFunction = "swi_glu";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnSwiGlu";
  // CANN's phase-one signature: the build generates aclnnop/aclnn_swi_glu.h and both entry points.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* x, int64_t dim, const aclTensor* out";

  enum Arg { kX, kOut };
  static constexpr std::array kArgs{
      In("x", "x").training_float().rank(1, 8),
      Out("out", "out", "y").dtype_of(kX).rank(1, 8),  // its shape: check_params
  };
  MANTISSA_TENSOR_MEMBERS(x, out);

  static constexpr std::array kAttrs{AttrSpec{"dim", AttrType::kInt, false, -1.0}};
  MANTISSA_ATTR_MEMBERS(dim);

  // Per output element: A and B read (two read streams), out written (a write costs a read for
  // ownership: one read-modify-write stream). tools/mantissa/bench_cases.cc gives x the shape
  // [rows, 2 * 4096] split along its last dim.
  enum class Variant { kDefault };
  static constexpr std::array kVariants{VariantSpec<Variant>{Variant::kDefault, "default", {1, 2}}};
  static Params params_for(Variant) { return {}; }

  // dim in range, x's size along it even, out x's shape halved there.
  static Status check_params(const Tensors& t, const Params& p) {
    int d = 0;
    MANTISSA_RETURN_IF_ERROR(check_swi_glu_split(kType, t.x, p.dim, &d));
    return check_swi_glu_half(kType, "out", t.out, t.x, d);
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) { return swi_glu(t, p); }

  // The kit's out: x's shape halved along dim (left as x's where dim is invalid: the call then
  // reports it).
  static void infer_output(std::size_t, const Tensors& t, const Params& p, DType&,
                           std::vector<int64_t>& shape) {
    const std::optional<int> d = wrap_dim(p.dim, t.x.rank);
    if (d && t.x.rank > 0 && static_cast<std::size_t>(*d) < shape.size()) shape[*d] /= 2;
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<SwiGluOp>());

}  // namespace mantissa::detail
