// Softmax's and LogSoftmax's declarations: arguments in CANN's order, the dim attribute (op-by-
// name's "axes", a one-element list of ints). See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "core/rows.h"
#include "mantissa/ops/softmax.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// dim within the rank of self (161002 naming dim, its value and the rank).
inline Status check_softmax_dim(std::string_view op, const TensorView& self, int64_t dim) {
  if (!wrap_dim(dim, self.rank)) {
    const int r = self.rank > 0 ? self.rank : 1;
    return Status(StatusCode::kParamInvalid,
                  fmt::format("{}: dim is {} but must be in [{}, {}) for self of rank {}", op, dim,
                              -r, r, self.rank));
  }
  return {};
}

struct SoftmaxOp {
  using Tensors = SoftmaxTensors;
  using Params = SoftmaxParams;
  static constexpr std::string_view kType = "SoftmaxV2";
  static constexpr std::string_view kFunction = "softmax";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnSoftmax";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* self, int64_t dim, aclTensor* out";

  enum Arg { kSelf, kOut };
  static constexpr std::array kArgs{
      ArgSpec{"self", "self", "x", Role::kIn}.training_float().rank(0, 8),
      Out("out", "out", "y").like(kSelf).rank(0, 8).in_place_of(kSelf),
  };
  MANTISSA_TENSOR_MEMBERS(self, out);

  static constexpr std::array kAttrs{
      AttrSpec{"dim", AttrType::kInt, false, -1.0, "axes", true},
      AttrSpec{"half_to_float", AttrType::kBool, false, 0.0},
  };
  MANTISSA_ATTR_MEMBERS(dim, half_to_float);

  // Row-wise, not element-wise: no variants for the element-wise benchmark cases.
  enum class Variant { kDefault };
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static Status check_params(const Tensors& t, const Params& p) {
    if (p.half_to_float) {
      return Status(StatusCode::kParamInvalid,
                    "SoftmaxV2: half_to_float is true; only false (out in self's dtype) is "
                    "supported");
    }
    return check_softmax_dim(kType, t.self, p.dim);
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) { return softmax(t, p); }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<SoftmaxOp>());

struct LogSoftmaxOp {
  using Tensors = SoftmaxTensors;
  using Params = LogSoftmaxParams;
  static constexpr std::string_view kType = "LogSoftmaxV2";
  static constexpr std::string_view kFunction = "log_softmax";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnLogSoftmax";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* self, int64_t dim, aclTensor* out";
  static constexpr std::string_view kAclnnHeader = "aclnn_logsoftmax.h";

  enum Arg { kSelf, kOut };
  static constexpr std::array kArgs{
      ArgSpec{"self", "self", "logits", Role::kIn}.training_float().rank(1, 8),
      Out("out", "out", "logsoftmax").like(kSelf).rank(1, 8).in_place_of(kSelf),
  };
  MANTISSA_TENSOR_MEMBERS(self, out);

  static constexpr std::array kAttrs{
      AttrSpec{"dim", AttrType::kInt, false, -1.0, "axes", true},
  };
  MANTISSA_ATTR_MEMBERS(dim);

  // Row-wise, not element-wise: no variants for the element-wise benchmark cases.
  enum class Variant { kDefault };
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static Status check_params(const Tensors& t, const Params& p) {
    return check_softmax_dim(kType, t.self, p.dim);
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) { return log_softmax(t, p); }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<LogSoftmaxOp>());

}  // namespace mantissa::detail
