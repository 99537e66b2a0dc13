// GeluBackward's and GeluBackwardV2's declarations: CANN's arguments (aclnn's gradOutput, self and
// gradInput; the graph's dy, x and z), broadcasting and promoting as upstream. See
// core/op_desc.h.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "core/validate.h"
#include "mantissa/ops/gelu.h"
#include "mantissa/workspace.h"
#include "ops/gelu/gelu_v2_desc.h"

namespace mantissa::detail {

// torch's broadcast of two shapes (trailing dims aligned; a dim of 1 stretches), or false.
inline bool gelu_broadcast_shape(const TensorView& a, const TensorView& b,
                                 std::vector<int64_t>& shape) {
  const int rank = std::max(a.rank, b.rank);
  shape.assign(static_cast<std::size_t>(rank), 1);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank - rank + i, ib = b.rank - rank + i;
    const int64_t da = ia >= 0 ? a.shape[ia] : 1, db = ib >= 0 ? b.shape[ib] : 1;
    if (da != db && da != 1 && db != 1) return false;
    shape[static_cast<std::size_t>(i)] = da == 1 ? db : da;
  }
  return true;
}

// The promoted dtype of grad_output and self: their own where equal, else FLOAT (upstream's
// table: FLOAT16 with BFLOAT16 gives FLOAT).
constexpr DType gelu_promoted(DType a, DType b) { return a == b ? a : DType::kFloat32; }

// Whether the kernel reads the operands where they are: one dtype, one shape, and the output
// either an input's very view (in place, element by element) or sharing no byte with either.
// Otherwise the operands are copied to scratch first, so any overlap is safe.
inline bool gelu_backward_direct(const TensorView& dy, const TensorView& x, const TensorView& out) {
  const auto apart = [&](const TensorView& in) {
    return same_view(in, out) || !memory_overlaps(in, out);
  };
  return dy.dtype == x.dtype && dy.dtype == out.dtype && same_shape(dy, x) &&
         same_shape(dy, out) && apart(dy) && apart(x);
}

// The rules the declaration's table cannot state: grad_output and self broadcast; grad_input
// has the broadcast shape and (exact_dtype) the promoted dtype. grad_input may share memory
// with either input (gelu_backward_direct says how that is computed). `op` names the operator.
inline Status check_gelu_backward(std::string_view op, const TensorView& grad_output,
                                  const TensorView& self, const TensorView& grad_input,
                                  bool exact_dtype) {
  std::vector<int64_t> shape;
  if (!gelu_broadcast_shape(grad_output, self, shape)) {
    return fail(StatusCode::kParamInvalid, op,
                "gradOutput {} and self {} do not broadcast (each trailing dim must match or be "
                "1)",
                grad_output.shape_string(), self.shape_string());
  }
  const TensorView want(nullptr, grad_input.dtype, shape);
  if (!same_shape(want, grad_input)) {
    return fail(StatusCode::kParamInvalid, op,
                "gradInput {} is not the broadcast shape {} of gradOutput {} and self {}",
                grad_input.shape_string(), want.shape_string(), grad_output.shape_string(),
                self.shape_string());
  }
  const DType mid = gelu_promoted(grad_output.dtype, self.dtype);
  if (exact_dtype && grad_input.dtype != mid) {
    return fail(StatusCode::kParamInvalid, op,
                "gradInput is {} but gradOutput ({}) and self ({}) promote to {}",
                dtype_name(grad_input.dtype), dtype_name(grad_output.dtype), dtype_name(self.dtype),
                dtype_name(mid));
  }
  return {};
}

// The kit's new output: the promoted dtype and the broadcast shape.
inline void gelu_backward_output(const TensorView& grad_output, const TensorView& self,
                                 DType& dtype, std::vector<int64_t>& shape) {
  dtype = gelu_promoted(grad_output.dtype, self.dtype);
  if (!gelu_broadcast_shape(grad_output, self, shape)) shape.clear();
}

// Scratch bytes of a call that broadcasts or converts (0 for one shape and one dtype): both
// operands widened to fp32.
inline uint64_t gelu_backward_workspace(const TensorView& grad_output, const TensorView& self,
                                        const TensorView& grad_input) {
  if (gelu_backward_direct(grad_output, self, grad_input)) return 0;
  const auto n = grad_input.numel();
  return n ? 2 * static_cast<uint64_t>(*n) * sizeof(float) : 0;
}

struct GeluBackwardOp {
  using Tensors = GeluBackwardTensors;
  using Params = GeluBackwardParams;
  static constexpr std::string_view kType = "GeluGrad";
  static constexpr std::string_view kFunction = "gelu_backward";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnGeluBackward";
  // CANN's phase-one signature: the build generates aclnnop/aclnn_gelu_backward.h and both
  // entries.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* gradOutput, const aclTensor* self, aclTensor* gradInput";

  enum Arg { kGradOutput, kSelf, kGradInput };
  static constexpr std::array kArgs{
      In("grad_output", "gradOutput").graph("dy").training_float().rank(0, 8),
      In("self", "self").graph("x").training_float().rank(0, 8),
      Out("grad_input", "gradInput", "z").training_float().rank(0, 8).may_alias_any_input(),
  };
  MANTISSA_TENSOR_MEMBERS(grad_output, self, grad_input);

  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();

  // Two read streams and one read-modify-write stream.
  enum class Variant { kDefault };
  static constexpr std::array kVariants{VariantSpec<Variant>{Variant::kDefault, "default", {1, 2}}};
  static Params params_for(Variant) { return {}; }

  static Status check_params(const Tensors& t, const Params&) {
    return check_gelu_backward(kType, t.grad_output, t.self, t.grad_input, false);
  }
  static void infer_output(std::size_t, const Tensors& t, const Params&, DType& dtype,
                           std::vector<int64_t>& shape) {
    gelu_backward_output(t.grad_output, t.self, dtype, shape);
  }
  static uint64_t workspace_size(const Tensors& t, const Params&) {
    return gelu_backward_workspace(t.grad_output, t.self, t.grad_input);
  }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return gelu_backward(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<GeluBackwardOp>());

struct GeluBackwardV2Op {
  using Tensors = GeluBackwardV2Tensors;
  using Params = GeluBackwardV2Params;
  static constexpr std::string_view kType = "GeluGradV2";
  static constexpr std::string_view kFunction = "gelu_backward_v2";  // the C++ API's
  // aclnn takes approximate as a string (src/compat/aclnn_gelu_backward_v2.cc maps it).
  static constexpr std::string_view kAclnn = "aclnnGeluBackwardV2";

  enum Arg { kGradOutput, kSelf, kGradInput };
  static constexpr std::array kArgs{
      In("grad_output", "gradOutput").graph("dy").training_float().rank(0, 8),
      In("self", "self").graph("x").training_float().rank(0, 8),
      Out("grad_input", "gradInput", "z").training_float().rank(0, 8).may_alias_any_input(),
  };
  MANTISSA_TENSOR_MEMBERS(grad_output, self, grad_input);

  static constexpr std::array kAttrs{
      AttrSpec{"approximate", AttrType::kInt, false, 0.0, {}, false, -1, kGeluApproximateStrings}};
  MANTISSA_ATTR_MEMBERS(approximate);

  enum class Variant { kNone, kTanh };
  static constexpr std::array kVariants{VariantSpec<Variant>{Variant::kNone, "none", {1, 2}},
                                        VariantSpec<Variant>{Variant::kTanh, "tanh", {1, 2}}};
  static Params params_for(Variant v) {
    return {v == Variant::kTanh ? GeluApproximate::kTanh : GeluApproximate::kNone};
  }

  // approximate none or tanh (the only strings upstream's entry maps), then GeluBackward's rules
  // with grad_input in the promoted dtype.
  static Status check_params(const Tensors& t, const Params& p) {
    if (p.approximate != GeluApproximate::kNone && p.approximate != GeluApproximate::kTanh) {
      return fail(StatusCode::kParamInvalid, kType, "approximate is {}: none (0) or tanh (1)",
                  static_cast<int64_t>(p.approximate));
    }
    return check_gelu_backward(kType, t.grad_output, t.self, t.grad_input, true);
  }
  static void infer_output(std::size_t, const Tensors& t, const Params&, DType& dtype,
                           std::vector<int64_t>& shape) {
    gelu_backward_output(t.grad_output, t.self, dtype, shape);
  }
  static uint64_t workspace_size(const Tensors& t, const Params&) {
    return gelu_backward_workspace(t.grad_output, t.self, t.grad_input);
  }
  // The aclnn string of approximate (the kit's aclnn backend).
  static const char* aclnn_string(std::size_t /*attr*/, int64_t value) {
    return value == static_cast<int64_t>(GeluApproximate::kTanh) ? "tanh" : "none";
  }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return gelu_backward_v2(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.aclnn_string = &aclnn_string};
};
static_assert(well_formed<GeluBackwardV2Op>());

}  // namespace mantissa::detail
