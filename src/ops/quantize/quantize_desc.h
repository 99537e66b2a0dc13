// Quantize's declaration: arguments in CANN's aclnn order, dtype and axis. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "mantissa/ops/quantize.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// The dtypes Quantize writes (y) and those it refuses although CANN lists them (HIFLOAT8).
inline constexpr std::array kQuantizeOutputs{DType::kInt8, DType::kUInt8, DType::kInt32,
                                             DType::kFloat8E4M3FN, DType::kFloat8E5M2};

// The rules of check_params: dtype, y's dtype, axis, the sizes and dtypes of scales and
// zero_points (quantize.cc).
Status check_quantize_params(const QuantizeTensors& t, const QuantizeParams& p);

// The strings of CANN's graph attribute dtype (PyTorch's quantized dtype names).
inline constexpr std::array<GraphString, 5> kQuantizeDtypeStrings{{
    {"torch.qint8", static_cast<int64_t>(DType::kInt8)},
    {"torch.quint8", static_cast<int64_t>(DType::kUInt8)},
    {"torch.qint32", static_cast<int64_t>(DType::kInt32)},
    {"torch.float8_e4m3fn", static_cast<int64_t>(DType::kFloat8E4M3FN)},
    {"torch.float8_e5m2", static_cast<int64_t>(DType::kFloat8E5M2)},
}};

struct QuantizeOp {
  using Tensors = QuantizeTensors;
  using Params = QuantizeParams;
  static constexpr std::string_view kType = "Quantize";
  static constexpr std::string_view kFunction = "quantize";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnQuantize";

  enum Arg { kX, kScales, kZeroPoints, kY };
  static constexpr std::array kArgs{
      In("x", "x").training_float().rank(1, 8),
      In("scales", "scales")
          .dtype_in({DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          .rank(1, 1),
      In("zero_points", "zeroPoints")
          .dtype_in({DType::kInt8, DType::kUInt8, DType::kInt32, DType::kFloat32, DType::kBFloat16})
          .rank(1, 1)
          .optional_input(),
      Out("y", "out", "y")
          .dtype_in({DType::kInt8, DType::kUInt8, DType::kInt32, DType::kFloat8E4M3FN,
                     DType::kFloat8E5M2})
          .shape_of(kX),
  };
  MANTISSA_TENSOR_MEMBERS(x, scales, zero_points, y);

  // dtype: an aclDataType in aclnn; by name CANN's String ("torch.qint8", ...) or an Int holding
  // the aclDataType value. axis: default 1.
  static constexpr std::array kAttrs{
      AttrSpec{"dtype",
               AttrType::kInt,
               true,
               static_cast<double>(DType::kInt8),
               {},
               false,
               -1,
               kQuantizeDtypeStrings},
      AttrSpec{"axis", AttrType::kInt, false, 1.0},
  };
  MANTISSA_ATTR_MEMBERS(dtype, axis);

  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static Status check_params(const Tensors& t, const Params& p) {
    return check_quantize_params(t, p);
  }
  // The kit's y takes the dtype the attribute names.
  static void infer_output(std::size_t k, const Tensors&, const Params& p, DType& dtype,
                           std::vector<int64_t>&) {
    if (k == kY) dtype = p.dtype;
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return quantize(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<QuantizeOp>());

}  // namespace mantissa::detail
