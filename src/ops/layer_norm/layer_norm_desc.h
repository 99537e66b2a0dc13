// LayerNorm's declaration: arguments in CANN's aclnn order, normalized_shape and eps. See
// core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "mantissa/ops/layer_norm.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// The rules LayerNorm and LayerNormGrad share (upstream's combinations):
//   normalized_shape holds 1 to rank(x) values, equal to x's trailing dims;
//   weight and bias have shape normalized_shape, x's dtype or FLOAT, one dtype between them;
//   mean and rstd take x's dtype or FLOAT, one dtype between them.
Status check_normalized_shape(std::string_view op, const char* x_name, const TensorView& x,
                              const Dims& shape);
Status check_norm_params(std::string_view op, const TensorView& x, const Dims& shape,
                         const TensorView* weight, const TensorView* bias);
Status check_norm_stats(std::string_view op, const TensorView& x, const TensorView* mean,
                        const TensorView* rstd);

struct LayerNormOp {
  using Tensors = LayerNormTensors;
  using Params = LayerNormParams;
  static constexpr std::string_view kType = "LayerNormV4";
  static constexpr std::string_view kFunction = "layer_norm";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnLayerNorm";

  enum Arg { kInput, kWeight, kBias, kOut, kMean, kRstd };
  static constexpr std::array kArgs{
      In("input", "input").graph("x").training_float().rank(1, 8),
      In("weight", "weightOptional")
          .graph("gamma")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .optional_input(),
      In("bias", "biasOptional")
          .graph("beta")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .optional_input(),
      Out("out", "out", "y").like(kInput),
      Out("mean", "meanOutOptional", "mean")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .reduced_of(kInput)
          .optional_result(),
      Out("rstd", "rstdOutOptional", "rstd")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .reduced_of(kInput)
          .optional_result(),
  };
  MANTISSA_TENSOR_MEMBERS(input, weight, bias, out, mean, rstd);

  // normalized_shape: an aclIntArray in aclnn, the graph's second input (INT32 or INT64) by
  // name. eps: a double in aclnn, the Float attribute "epsilon" by name (default 1e-5).
  static constexpr std::array kAttrs{
      AttrSpec{"normalized_shape", AttrType::kIntList, true, 0.0, {}, false, kWeight},
      AttrSpec{"eps", AttrType::kFloat, false, 1e-5, "epsilon"},
  };
  MANTISSA_ATTR_MEMBERS(normalized_shape, eps);

  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  // A row spans the trailing dims normalized_shape names.
  static int normalized_dims(const Tensors&, const Params& p) { return p.normalized_shape.size; }
  // normalized_shape shapes the other rules, so it is checked before them.
  static Status check_shape_params(const Tensors& t, const Params& p) {
    return check_normalized_shape(kType, "input", t.input, p.normalized_shape);
  }
  static Status check_params(const Tensors& t, const Params& p) {
    MANTISSA_RETURN_IF_ERROR(check_norm_params(kType, t.input, p.normalized_shape,
                                               t.weight ? &*t.weight : nullptr,
                                               t.bias ? &*t.bias : nullptr));
    return check_norm_stats(kType, t.input, t.mean ? &*t.mean : nullptr,
                            t.rstd ? &*t.rstd : nullptr);
  }
  // The precision kit's mean and rstd are FLOAT (what training frameworks keep for the
  // backward pass); the C++ API also takes them in input's dtype.
  static void infer_output(std::size_t k, const Tensors&, const Params&, DType& dtype,
                           std::vector<int64_t>&) {
    if (k == kMean || k == kRstd) dtype = DType::kFloat32;
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return layer_norm(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.normalized_dims = &normalized_dims,
                                                   .check_shape_params = &check_shape_params,
                                                   .infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<LayerNormOp>());

}  // namespace mantissa::detail
