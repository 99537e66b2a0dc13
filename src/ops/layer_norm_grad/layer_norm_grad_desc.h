// LayerNormGrad's declaration: arguments in CANN's aclnn order (aclnnLayerNormBackward),
// normalized_shape and output_mask. See core/op_desc.h.
#pragma once

#include <algorithm>
#include <array>
#include <span>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "mantissa/ops/layer_norm_grad.h"
#include "mantissa/workspace.h"
#include "ops/layer_norm/layer_norm_desc.h"

namespace mantissa::detail {

struct LayerNormGradOp {
  using Tensors = LayerNormGradTensors;
  using Params = LayerNormGradParams;
  static constexpr std::string_view kType = "LayerNormGradV3";
  static constexpr std::string_view kFunction = "layer_norm_grad";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnLayerNormBackward";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* gradOut, const aclTensor* input, const aclIntArray* normalizedShape, "
      "const aclTensor* mean, const aclTensor* rstd, const aclTensor* weightOptional, "
      "const aclTensor* biasOptional, const aclBoolArray* outputMask, aclTensor* gradInputOut, "
      "aclTensor* gradWeightOut, aclTensor* gradBiasOut";
  static constexpr std::string_view kAclnnHeader = "aclnn_layer_norm_backward.h";

  enum Arg { kDy, kInput, kMean, kRstd, kWeight, kBias, kDx, kDweight, kDbias };
  static constexpr std::array kArgs{
      In("dy", "gradOut").training_float().rank(1, 8),
      In("input", "input").graph("x").like(kDy),
      In("mean", "mean")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .reduced_of(kDy),
      In("rstd", "rstd").dtype_of(kMean).reduced_of(kDy),
      In("weight", "weightOptional")
          .graph("gamma")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .optional_input()
          .required_by_name(),
      In("bias", "biasOptional")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .optional_input(),
      Out("dx", "gradInputOut", "pd_x").like(kDy).optional_result(),
      // normalized_shape (trailing dims of dy; check_params checks them exactly).
      Out("dweight", "gradWeightOut", "pd_gamma")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .trailing_of(kDy)
          .optional_result(),
      Out("dbias", "gradBiasOut", "pd_beta")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .trailing_of(kDy)
          .optional_result(),
  };
  MANTISSA_TENSOR_MEMBERS(dy, input, mean, rstd, weight, bias, dx, dweight, dbias);
  // The graph's inputs: dy, x, rstd, mean, gamma (it has no beta).
  static constexpr std::array kGraphInputs{kDy, kInput, kRstd, kMean, kWeight};

  // normalized_shape: an aclIntArray in aclnn; the graph has no such input or attribute, so by
  // name it is gamma's shape (params_by_name). output_mask: an aclBoolArray of 3 in
  // aclnn, the ListBool attribute "output_mask" by name (default all true).
  static constexpr std::array kAttrs{
      AttrSpec{"normalized_shape", AttrType::kIntList, true, 0.0, {}, false, kNotInGraph},
      AttrSpec{"output_mask", AttrType::kBoolList, false, 1.0},
  };
  MANTISSA_ATTR_MEMBERS(normalized_shape, output_mask);

  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static int normalized_dims(const Tensors&, const Params& p) { return p.normalized_shape.size; }
  // dx, dweight and dbias are required where output_mask asks for them.
  static const char* required_by(const Params& p, std::size_t k) {
    static constexpr std::array<const char*, 3> kMask{"output_mask[0]", "output_mask[1]",
                                                      "output_mask[2]"};
    if (k >= kDx && k <= kDbias && p.output_mask[k - kDx]) return kMask[k - kDx];
    return nullptr;
  }
  // By name: normalized_shape is gamma's shape (the graph requires gamma).
  static void params_by_name(const Tensors& t, Params& p) {
    if (t.weight)
      p.normalized_shape =
          Dims(std::span(t.weight->shape.data(),
                         static_cast<std::size_t>(std::clamp(t.weight->rank, 0, kMaxRank))));
  }
  static Status check_shape_params(const Tensors& t, const Params& p) {
    return check_normalized_shape(kType, "dy", t.dy, p.normalized_shape);
  }
  static Status check_params(const Tensors& t, const Params& p);
  // A new output's dtype and shape where the rules leave them open: dweight and dbias take
  // weight's dtype (dy's without a weight) and normalized_shape.
  static void infer_output(std::size_t k, const Tensors& t, const Params& p, DType& dtype,
                           std::vector<int64_t>& shape) {
    if (k != kDweight && k != kDbias) return;
    dtype = t.weight ? t.weight->dtype : t.dy.dtype;
    const std::span<const int64_t> dims = p.normalized_shape.span();
    shape.assign(dims.begin(), dims.end());
  }
  static uint64_t workspace_size(const Tensors& t, const Params& p) {
    return layer_norm_grad_workspace_size(t, p);
  }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return layer_norm_grad(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.normalized_dims = &normalized_dims,
                                                   .check_shape_params = &check_shape_params,
                                                   .required_by = &required_by,
                                                   .infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.params_by_name = &params_by_name};
};
static_assert(well_formed<LayerNormGradOp>());

}  // namespace mantissa::detail
