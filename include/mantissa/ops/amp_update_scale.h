// AmpUpdateScale: one step of dynamic loss scaling (CANN aclnnAmpUpdateScale).
#pragma once

#include <cstdint>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

struct AmpUpdateScaleTensors {
  TensorView current_scale;           // FLOAT, FLOAT16 or BFLOAT16, one element
  TensorView growth_tracker;          // INT32, one element
  TensorView found_inf;               // same dtype as current_scale, one element
  TensorView updated_scale;           // same dtype as current_scale; may alias current_scale
  TensorView updated_growth_tracker;  // INT32; may alias growth_tracker
};

struct AmpUpdateScaleParams {
  double growth_factor = 2.0;      // applied in fp32; not range-checked (as upstream)
  double backoff_factor = 0.5;     // applied in fp32; not range-checked (as upstream)
  int64_t growth_interval = 2000;  // must lie in [1, 2147483647]
};

// Validates everything, then updates. On error nothing is written.
MANTISSA_API Status amp_update_scale(const AmpUpdateScaleTensors& t, const AmpUpdateScaleParams& p);
// Validation only (what the first aclnn phase runs).
MANTISSA_API Status amp_update_scale_validate(const AmpUpdateScaleTensors& t,
                                              const AmpUpdateScaleParams& p);

}  // namespace mantissa
