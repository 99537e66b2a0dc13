// SoftmaxGrad's and LogSoftmaxGrad's declarations: arguments in aclnn's order (gradOutput,
// output, out), the graph's input order where it differs (SoftmaxGrad takes softmax first), and
// the dim attribute (op-by-name's "axes" / "axis", a one-element list of ints). See
// core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/softmax_grad.h"
#include "mantissa/workspace.h"
#include "ops/softmax/softmax_desc.h"

namespace mantissa::detail {

struct SoftmaxGradOp {
  using Tensors = SoftmaxGradTensors;
  using Params = SoftmaxGradParams;
  static constexpr std::string_view kType = "SoftmaxGrad";
  static constexpr std::string_view kFunction = "softmax_grad";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnSoftmaxBackward";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* gradOutput, const aclTensor* output, int64_t dim, aclTensor* out";
  static constexpr std::string_view kAclnnHeader = "aclnn_softmax_backward.h";

  enum Arg { kGradOutput, kOutput, kOut };
  static constexpr std::array kArgs{
      ArgSpec{"grad_output", "gradOutput", "grad_softmax", Role::kIn}.training_float().rank(0, 8),
      ArgSpec{"output", "output", "softmax", Role::kIn}.like(kGradOutput).rank(0, 8),
      Out("out", "out", "grad_x").like(kGradOutput).rank(0, 8).in_place_of(kGradOutput),
  };
  MANTISSA_TENSOR_MEMBERS(grad_output, output, out);
  // The graph declares (softmax, grad_softmax).
  static constexpr std::array kGraphInputs{kOutput, kGradOutput};

  static constexpr std::array kAttrs{
      AttrSpec{"dim", AttrType::kInt, false, -1.0, "axes", true},
  };
  MANTISSA_ATTR_MEMBERS(dim);

  // Row-wise, not element-wise: no variants for the element-wise benchmark cases.
  enum class Variant { kDefault };
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static Status check_params(const Tensors& t, const Params& p) {
    return check_softmax_dim(kType, t.grad_output, p.dim);
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) {
    return softmax_grad(t, p);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<SoftmaxGradOp>());

struct LogSoftmaxGradOp {
  using Tensors = SoftmaxGradTensors;
  using Params = SoftmaxGradParams;
  static constexpr std::string_view kType = "LogSoftmaxGrad";
  static constexpr std::string_view kFunction = "log_softmax_grad";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnLogSoftmaxBackward";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* gradOutput, const aclTensor* output, int64_t dim, aclTensor* out";
  static constexpr std::string_view kAclnnHeader = "aclnn_logsoftmax_backward.h";

  enum Arg { kGradOutput, kOutput, kOut };
  static constexpr std::array kArgs{
      ArgSpec{"grad_output", "gradOutput", "grad", Role::kIn}.training_float().rank(1, 8),
      ArgSpec{"output", "output", "x", Role::kIn}.like(kGradOutput).rank(1, 8),
      Out("out", "out", "y").like(kGradOutput).rank(1, 8).in_place_of(kGradOutput),
  };
  MANTISSA_TENSOR_MEMBERS(grad_output, output, out);

  static constexpr std::array kAttrs{
      AttrSpec{"dim", AttrType::kInt, false, -1.0, "axis", true},
  };
  MANTISSA_ATTR_MEMBERS(dim);

  // Row-wise, not element-wise: no variants for the element-wise benchmark cases.
  enum class Variant { kDefault };
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static Status check_params(const Tensors& t, const Params& p) {
    return check_softmax_dim(kType, t.grad_output, p.dim);
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) {
    return log_softmax_grad(t, p);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<LogSoftmaxGradOp>());

}  // namespace mantissa::detail
