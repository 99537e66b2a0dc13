// SoftmaxCrossEntropyWithLogits' declaration. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/softmax_cross_entropy_with_logits.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

struct SoftmaxCrossEntropyWithLogitsOp {
  using Tensors = SoftmaxCrossEntropyWithLogitsTensors;
  using Params = SoftmaxCrossEntropyWithLogitsParams;
  static constexpr std::string_view kType = "SoftmaxCrossEntropyWithLogits";
  static constexpr std::string_view kFunction =
      "softmax_cross_entropy_with_logits";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnSoftmaxCrossEntropyWithLogits";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* features, const aclTensor* labels, aclTensor* loss, aclTensor* backprop";

  enum Arg { kFeatures, kLabels, kLoss, kBackprop };
  // loss is features' shape with the class dim dropped ([N]) or kept as 1 ([N, 1]).
  static constexpr std::array kArgs{
      In("features", "features").training_float().rank(2, 2),
      In("labels", "labels").like(kFeatures).rank(2, 2),
      Out("loss", "loss", "loss").dtype_of(kFeatures).reduced_of(kFeatures),
      Out("backprop", "backprop", "backprop").like(kFeatures),
  };
  MANTISSA_TENSOR_MEMBERS(features, labels, loss, backprop);
  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();

  // Row-wise, not element-wise: no variants for the element-wise benchmark cases.
  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  // A row is the class dim.
  static int normalized_dims(const Tensors&, const Params&) { return 1; }
  static Status check_params(const Tensors&, const Params&) { return {}; }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) {
    return softmax_cross_entropy_with_logits(t, p);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.normalized_dims = &normalized_dims};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<SoftmaxCrossEntropyWithLogitsOp>());

}  // namespace mantissa::detail
