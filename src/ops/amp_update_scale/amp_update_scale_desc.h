// AmpUpdateScale's declaration: arguments in CANN's order, attributes. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/amp_update_scale.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

struct AmpUpdateScaleOp {
  using Tensors = AmpUpdateScaleTensors;
  using Params = AmpUpdateScaleParams;
  static constexpr std::string_view kType = "AmpUpdateScale";
  static constexpr std::string_view kFunction = "amp_update_scale";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnAmpUpdateScale";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* currentScale, const aclTensor* growthTracker, "
      "const aclTensor* foundInf, double growthFactor, double backoffFactor, "
      "int64_t growthInterval, const aclTensor* updatedScale, "
      "const aclTensor* updatedGrowthTracker";

  enum Arg { kCurrentScale, kGrowthTracker, kFoundInf, kUpdatedScale, kUpdatedGrowthTracker };
  // Five one-element tensors; a wrong element count is CANN's tiling error (561002). Every input
  // is read before anything is written, so the outputs may share memory with any input, but
  // not with each other.
  static constexpr StatusCode kCount = StatusCode::kTiling;
  static constexpr std::array kArgs{
      In("current_scale", "currentScale").training_float().one_element(kCount),
      In("growth_tracker", "growthTracker").int32().one_element(kCount),
      In("found_inf", "foundInf").dtype_of(kCurrentScale).one_element(kCount),
      Out("updated_scale", "updatedScale", "updated_scale")
          .dtype_of(kCurrentScale)
          .one_element(kCount)
          .in_place_of(kCurrentScale)
          .may_alias_any_input(),
      Out("updated_growth_tracker", "updatedGrowthTracker", "updated_growth_tracker")
          .int32()
          .one_element(kCount)
          .in_place_of(kGrowthTracker)
          .may_alias_any_input(),
  };
  MANTISSA_TENSOR_MEMBERS(current_scale, growth_tracker, found_inf, updated_scale,
                          updated_growth_tracker);

  // Required by op-by-name, as in CANN's graph definition: no silent default for the schedule.
  static constexpr std::array kAttrs{
      AttrSpec{"growth_factor", AttrType::kFloat, true, 2.0},
      AttrSpec{"backoff_factor", AttrType::kFloat, true, 0.5},
      AttrSpec{"growth_interval", AttrType::kInt, true, 2000.0},
  };
  MANTISSA_ATTR_MEMBERS(growth_factor, backoff_factor, growth_interval);

  // Scalar work: per-call overhead is what is timed (tools/mantissa), no element-wise variants.
  enum class Variant {};
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};
  static Params params_for(Variant) { return {}; }

  // growth_interval in [1, 2147483647] (561002). In amp_update_scale.cc.
  static Status check_params(const Tensors& t, const Params& p);
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) {
    return amp_update_scale(t, p);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<AmpUpdateScaleOp>());

}  // namespace mantissa::detail
