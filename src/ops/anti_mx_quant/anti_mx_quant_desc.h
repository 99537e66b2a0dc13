// AntiMxQuant's declaration: arguments in CANN's aclnn order, axis and dst_type. See
// core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "mantissa/ops/anti_mx_quant.h"
#include "mantissa/workspace.h"
#include "ops/dynamic_mx_quant/dynamic_mx_quant_desc.h"

namespace mantissa::detail {

// The block of AntiMxQuant (upstream's: 32, fixed).
inline constexpr int64_t kAntiMxBlock = 32;

// axis, dst_type, y's dtype and mxscale's shape (anti_mx_quant.cc).
Status check_anti_mx_quant_params(const AntiMxQuantTensors& t, const AntiMxQuantParams& p);

struct AntiMxQuantOp {
  using Tensors = AntiMxQuantTensors;
  using Params = AntiMxQuantParams;
  static constexpr std::string_view kType = "AntiMxQuant";
  static constexpr std::string_view kFunction = "anti_mx_quant";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnAntiMxQuant";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* x, const aclTensor* mxscale, int64_t axis, int64_t dstType, "
      "const aclTensor* y";

  enum Arg { kX, kMxScale, kY };
  static constexpr std::array kArgs{
      In("x", "x")
          .dtype_in(
              {DType::kFloat8E5M2, DType::kFloat8E4M3FN, DType::kFloat4E2M1, DType::kFloat4E1M2})
          .rank(1, 7),
      In("mxscale", "mxscale").dtype_in({DType::kFloat8E8M0}).rank(2, 8),
      Out("y", "y", "y").training_float().shape_of(kX),
  };
  MANTISSA_TENSOR_MEMBERS(x, mxscale, y);

  static constexpr std::array kAttrs{
      AttrSpec{"axis", AttrType::kInt, false, -1.0},
      AttrSpec{"dst_type", AttrType::kInt, false, static_cast<double>(DType::kBFloat16)},
  };
  MANTISSA_ATTR_MEMBERS(axis, dst_type);

  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static Status check_params(const Tensors& t, const Params& p) {
    return check_anti_mx_quant_params(t, p);
  }
  // The kit's y takes the dtype dst_type names.
  static void infer_output(std::size_t k, const Tensors&, const Params& p, DType& dtype,
                           std::vector<int64_t>&) {
    if (k == kY) dtype = p.dst_type;
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace ws = {}) {
    return anti_mx_quant(t, p, ws);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<AntiMxQuantOp>());

}  // namespace mantissa::detail
