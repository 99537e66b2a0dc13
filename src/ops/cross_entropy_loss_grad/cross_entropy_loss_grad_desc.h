// CrossEntropyLossGrad's declaration: arguments in CANN's aclnn order (the graph's too), the
// reduction, ignore_index, label_smoothing and lse_square_scale_for_zloss. See core/op_desc.h.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/cross_entropy_loss.h"
#include "mantissa/workspace.h"
#include "ops/cross_entropy_loss/cross_entropy_loss_desc.h"

namespace mantissa::detail {

// reduction, label_smoothing and lse_square_scale_for_zloss in range; C >= 1; target [N],
// weight [C], grad_loss [N] (none) or one element (cross_entropy_loss_grad.cc).
Status check_cross_entropy_loss_grad_params(const CrossEntropyLossGradTensors& t,
                                            const CrossEntropyLossGradParams& p);

struct CrossEntropyLossGradOp {
  using Tensors = CrossEntropyLossGradTensors;
  using Params = CrossEntropyLossGradParams;
  static constexpr std::string_view kType = "CrossEntropyLossGrad";
  static constexpr std::string_view kFunction = "cross_entropy_loss_grad";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnCrossEntropyLossGrad";

  enum Arg { kGradLoss, kLogProb, kTarget, kWeight, kGradZloss, kLseForZloss, kOut };
  static constexpr std::array kArgs{
      In("grad_loss", "gradLoss").training_float().rank(0, 1),
      In("log_prob", "logProb").dtype_of(kGradLoss).rank(2, 2),
      In("target", "target").dtype_in({DType::kInt64, DType::kInt32}).rank(1, 1),
      In("weight", "weightOptional").float32().rank(1, 1).optional_input(),
      In("grad_zloss", "gradZlossOptional").like(kGradLoss).optional_input(),
      In("lse_for_zloss", "lseForZlossOptional")
          .dtype_of(kGradLoss)
          .reduced_of(kLogProb)
          .optional_input(),
      Out("out", "out", "x_grad").like(kLogProb),
  };
  MANTISSA_TENSOR_MEMBERS(grad_loss, log_prob, target, weight, grad_zloss, lse_for_zloss, out);

  static constexpr std::array kAttrs{
      AttrSpec{"reduction", AttrType::kInt, false, 1.0, {}, false, -1, kLossReductionStrings},
      AttrSpec{"ignore_index", AttrType::kInt, false, -100.0},
      AttrSpec{"label_smoothing", AttrType::kFloat, false, 0.0},
      AttrSpec{"lse_square_scale_for_zloss", AttrType::kFloat, false, 0.0},
  };
  MANTISSA_ATTR_MEMBERS(reduction, ignore_index, label_smoothing, lse_square_scale_for_zloss);

  // The benchmarks' shapes (CrossEntropyLossOp's), mean reduction: log_prob read once, the
  // gradient written once.
  enum class Variant { kBackward32000, kBackward128256 };
  static constexpr std::array kVariants{
      VariantSpec<Variant>{Variant::kBackward32000, "bwd C=32000", {1, 1}},
      VariantSpec<Variant>{Variant::kBackward128256, "bwd C=128256", {1, 1}},
  };

  static int normalized_dims(const Tensors&, const Params&) { return 1; }
  // The z-loss gradient needs the forward's lse.
  static const char* required_by(const Params& p, std::size_t k) {
    return k == kLseForZloss && p.lse_square_scale_for_zloss != 0.0 ? "lse_square_scale_for_zloss"
                                                                    : nullptr;
  }
  static Status check_params(const Tensors& t, const Params& p) {
    return check_cross_entropy_loss_grad_params(t, p);
  }
  // Upstream's aclnn codes (compat/aclnn_cross_entropy_loss.cc): shapes of log_prob, target and
  // weight out of range are 561002, once every tensor is given and of a supported dtype.
  static Status check_aclnn_early(const Tensors& t, const Params& p);
  static const char* aclnn_string(std::size_t /*attr*/, int64_t value) {
    return loss_reduction_name(static_cast<LossReduction>(value));
  }
  static uint64_t workspace_size(const Tensors& t, const Params& p) {
    return cross_entropy_loss_grad_workspace_size(t, p);
  }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return cross_entropy_loss_grad(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.normalized_dims = &normalized_dims,
                                                   .required_by = &required_by};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.check_aclnn_early = &check_aclnn_early,
                                                       .aclnn_string = &aclnn_string};
};
static_assert(well_formed<CrossEntropyLossGradOp>());

}  // namespace mantissa::detail
