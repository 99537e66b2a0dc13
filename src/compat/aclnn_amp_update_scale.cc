// aclnnAmpUpdateScale: the two-phase C entry points over mantissa::amp_update_scale. Phase one
// validates through the C++ API and captures the views; phase two runs the C++ operator.
#include "aclnnop/aclnn_amp_update_scale.h"

#include <array>

#include "compat/aclnn_common.h"
#include "compat/executor_internal.h"
#include "mantissa/ops/amp_update_scale.h"

namespace {
constexpr const char* kPhaseOne = "aclnnAmpUpdateScaleGetWorkspaceSize";
constexpr const char* kPhaseTwo = "aclnnAmpUpdateScale";
}  // namespace

extern "C" {

aclnnStatus aclnnAmpUpdateScaleGetWorkspaceSize(const aclTensor* currentScale,
                                                const aclTensor* growthTracker,
                                                const aclTensor* foundInf, double growthFactor,
                                                double backoffFactor, int64_t growthInterval,
                                                const aclTensor* updatedScale,
                                                const aclTensor* updatedGrowthTracker,
                                                uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mantissa::compat;
  const std::array<TensorArg, 5> args{{{"currentScale", currentScale},
                                       {"growthTracker", growthTracker},
                                       {"foundInf", foundInf},
                                       {"updatedScale", updatedScale},
                                       {"updatedGrowthTracker", updatedGrowthTracker}}};
  if (aclnnStatus s = check_tensor_args(kPhaseOne, args); s != ACLNN_SUCCESS) return s;
  if (aclnnStatus s = check_out_pointers(kPhaseOne, workspaceSize, executor); s != ACLNN_SUCCESS) {
    return s;
  }

  mantissa::AmpUpdateScaleTensors tensors;
  tensors.current_scale = to_view(*currentScale);
  tensors.growth_tracker = to_view(*growthTracker);
  tensors.found_inf = to_view(*foundInf);
  tensors.updated_scale = to_view(*updatedScale);
  tensors.updated_growth_tracker = to_view(*updatedGrowthTracker);
  mantissa::AmpUpdateScaleParams params;
  params.growth_factor = growthFactor;
  params.backoff_factor = backoffFactor;
  params.growth_interval = growthInterval;
  if (const mantissa::Status s = mantissa::amp_update_scale_validate(tensors, params); !s.ok()) {
    return report(s);
  }

  aclOpExecutor* created = create_executor(kPhaseTwo, 0, [tensors, params](void* /*workspace*/) {
    return mantissa::amp_update_scale(tensors, params);
  });
  if (created == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
  *workspaceSize = 0;
  *executor = created;
  return ACLNN_SUCCESS;
}

aclnnStatus aclnnAmpUpdateScale(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                aclrtStream stream) {
  return mantissa::compat::run_executor(kPhaseTwo, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
