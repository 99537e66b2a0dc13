// DynamicQuant's declaration: arguments in CANN's aclnn order, dst_type. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "mantissa/ops/dynamic_quant.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// dst_type and y's dtype and shape (dynamic_quant.cc).
Status check_dynamic_quant_params(const DynamicQuantTensors& t, const DynamicQuantParams& p);

struct DynamicQuantOp {
  using Tensors = DynamicQuantTensors;
  using Params = DynamicQuantParams;
  static constexpr std::string_view kType = "DynamicQuant";
  static constexpr std::string_view kFunction = "dynamic_quant";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnDynamicQuant";

  enum Arg { kX, kSmoothScales, kY, kScale };
  static constexpr std::array kArgs{
      In("x", "x").dtype_in({DType::kFloat16, DType::kBFloat16}).rank(2, 8),
      In("smooth_scales", "smoothScalesOptional")
          .dtype_of(kX)
          .trailing_of(kX)
          .rank(1, 1)
          .optional_input(),
      Out("y", "yOut", "y")
          .dtype_in({DType::kInt8, DType::kInt4, DType::kInt32, DType::kFloat8E4M3FN,
                     DType::kFloat8E5M2}),
      Out("scale", "scaleOut", "scale").float32().reduced_of(kX),
  };
  MANTISSA_TENSOR_MEMBERS(x, smooth_scales, y, scale);

  // dst_type: the graph's Int attribute (default INT8); the aclnn entry takes y's dtype.
  static constexpr std::array kAttrs{
      AttrSpec{"dst_type", AttrType::kInt, false, static_cast<double>(DType::kInt8)},
  };
  MANTISSA_ATTR_MEMBERS(dst_type);

  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  // A row spans the last dim.
  static int normalized_dims(const Tensors&, const Params&) { return 1; }
  static Status check_params(const Tensors& t, const Params& p) {
    return check_dynamic_quant_params(t, p);
  }
  // The kit's y: dtype dst_type, x's shape (INT32: the last dim / 8); scale: x's shape without
  // the last dim (upstream's form).
  static void infer_output(std::size_t k, const Tensors&, const Params& p, DType& dtype,
                           std::vector<int64_t>& shape) {
    if (k == kY) {
      dtype = p.dst_type;
      if (p.dst_type == DType::kInt32 && !shape.empty()) shape.back() /= 8;
    }
    if (k == kScale && !shape.empty()) shape.pop_back();
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return dynamic_quant(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.normalized_dims = &normalized_dims,
                                                   .infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<DynamicQuantOp>());

}  // namespace mantissa::detail
