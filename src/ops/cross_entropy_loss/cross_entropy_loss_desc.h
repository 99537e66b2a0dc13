// CrossEntropyLoss's declaration: arguments in CANN's aclnn order, the reduction (a string in
// aclnn and by name), ignore_index, label_smoothing and the z-loss attributes. See
// core/op_desc.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "mantissa/ops/cross_entropy_loss.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// The strings of CANN's graph attribute reduction (a String), with PyTorch's numbers.
inline constexpr std::array<GraphString, 3> kLossReductionStrings{
    {{"none", 0}, {"mean", 1}, {"sum", 2}}};

// reduction, label_smoothing and lse_square_scale_for_zloss in range; C >= 1; target [N],
// weight [C], loss [N] (none) or one element (cross_entropy_loss.cc).
Status check_cross_entropy_loss_params(const CrossEntropyLossTensors& t,
                                       const CrossEntropyLossParams& p);

struct CrossEntropyLossOp {
  using Tensors = CrossEntropyLossTensors;
  using Params = CrossEntropyLossParams;
  static constexpr std::string_view kType = "CrossEntropyLoss";
  static constexpr std::string_view kFunction = "cross_entropy_loss";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnCrossEntropyLoss";

  enum Arg { kInput, kTarget, kWeight, kLoss, kLogProb, kZloss, kLseForZloss };
  static constexpr std::array kArgs{
      In("input", "input").training_float().rank(2, 2),
      In("target", "target").dtype_in({DType::kInt64, DType::kInt32}).rank(1, 1),
      In("weight", "weightOptional").float32().rank(1, 1).optional_input(),
      Out("loss", "lossOut", "loss").dtype_of(kInput).rank(0, 1),
      Out("log_prob", "logProbOut", "log_prob").like(kInput),
      Out("zloss", "zlossOut", "zloss").dtype_of(kInput).rank(0, 1),
      Out("lse_for_zloss", "lseForZlossOut", "lse_for_zloss").dtype_of(kInput).reduced_of(kInput),
  };
  MANTISSA_TENSOR_MEMBERS(input, target, weight, loss, log_prob, zloss, lse_for_zloss);

  // reduction: a string in aclnn ("none", "mean", "sum"; mapped by the entry); by name CANN's
  // String or an Int holding PyTorch's number (0 none, 1 mean, 2 sum).
  static constexpr std::array kAttrs{
      AttrSpec{"reduction", AttrType::kInt, false, 1.0, {}, false, -1, kLossReductionStrings},
      AttrSpec{"ignore_index", AttrType::kInt, false, -100.0},
      AttrSpec{"label_smoothing", AttrType::kFloat, false, 0.0},
      AttrSpec{"lse_square_scale_for_zloss", AttrType::kFloat, false, 0.0},
      AttrSpec{"return_zloss", AttrType::kBool, false, 0.0},
  };
  MANTISSA_ATTR_MEMBERS(reduction, ignore_index, label_smoothing, lse_square_scale_for_zloss,
                        return_zloss);

  // The benchmarks' shapes: rows of a language model's vocabulary (32000, Llama 3's 128256),
  // mean reduction, every target valid. "fwd+bwd" times this operator then CrossEntropyLossGrad
  // (the pair a training step runs): the logits read, log_prob written, then read, and the
  // gradient written.
  enum class Variant {
    kForward32000,
    kForward128256,
    kForwardBackward32000,
    kForwardBackward128256
  };
  static constexpr std::array kVariants{
      VariantSpec<Variant>{Variant::kForward32000, "fwd C=32000", {1, 1}},
      VariantSpec<Variant>{Variant::kForward128256, "fwd C=128256", {1, 1}},
      VariantSpec<Variant>{Variant::kForwardBackward32000, "fwd+bwd C=32000", {2, 2}},
      VariantSpec<Variant>{Variant::kForwardBackward128256, "fwd+bwd C=128256", {2, 2}},
  };

  // A row is the class dim (lse_for_zloss has one element per row).
  static int normalized_dims(const Tensors&, const Params&) { return 1; }
  // loss and zloss: [N] (none) or one element, by the reduction (check_params).
  static Status check_params(const Tensors& t, const Params& p) {
    return check_cross_entropy_loss_params(t, p);
  }
  // The kit's loss and zloss: [N] with reduction none, else [1].
  static void infer_output(std::size_t k, const Tensors& t, const Params& p, DType& /*dtype*/,
                           std::vector<int64_t>& shape) {
    if (k != kLoss && k != kZloss) return;
    if (p.reduction == LossReduction::kNone) {
      shape = {t.input.rank >= 1 ? t.input.shape[0] : 0};
    } else {
      shape = {1};
    }
  }
  // Upstream's aclnn codes (compat/aclnn_cross_entropy_loss.cc): shapes of input, target and
  // weight and the value of label_smoothing out of range are 561002, once every tensor is given
  // and of a supported dtype (else 161001 or 161002 first).
  static Status check_aclnn_early(const Tensors& t, const Params& p);
  // The aclnn string of the reduction (the kit's aclnn backend passes it as reductionOptional).
  static const char* aclnn_string(std::size_t /*attr*/, int64_t value) {
    return loss_reduction_name(static_cast<LossReduction>(value));
  }
  static uint64_t workspace_size(const Tensors& t, const Params& p) {
    return cross_entropy_loss_workspace_size(t, p);
  }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return cross_entropy_loss(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.normalized_dims = &normalized_dims,
                                                   .infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.check_aclnn_early = &check_aclnn_early,
                                                       .aclnn_string = &aclnn_string};
};
static_assert(well_formed<CrossEntropyLossOp>());

}  // namespace mantissa::detail
