// AmpUpdateScale: dynamic loss-scale update. Scalar work only, so no SIMD dispatch.
#include "mantissa/ops/amp_update_scale.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/op_entry.h"
#include "ops/amp_update_scale/amp_update_scale_desc.h"

namespace mantissa {
// Validation is derived from the declaration (amp_update_scale_desc.h); the attribute range is
// the operator's own rule.
Status detail::AmpUpdateScaleOp::check_params(const AmpUpdateScaleTensors& /*t*/,
                                              const AmpUpdateScaleParams& p) {
  if (p.growth_interval < 1 || p.growth_interval > INT32_MAX) {
    return detail::fail(StatusCode::kTiling, kType, "growth_interval {} is outside [1, 2147483647]",
                        p.growth_interval);
  }
  return {};
}

Status amp_update_scale_validate(const AmpUpdateScaleTensors& t, const AmpUpdateScaleParams& p) {
  return detail::validate<detail::AmpUpdateScaleOp>(t, p);
}

Status amp_update_scale(const AmpUpdateScaleTensors& t, const AmpUpdateScaleParams& p) {
  return detail::op_entry<detail::AmpUpdateScaleOp>(t, p, [&]() -> Status {
    const DType dtype = t.current_scale.dtype;

    // Read every input before writing anything: outputs may alias inputs.
    float scale = load_as_float(dtype, t.current_scale.data, 0);
    const float found_inf = load_as_float(dtype, t.found_inf.data, 0);
    int32_t tracker;
    std::memcpy(&tracker, t.growth_tracker.data, sizeof(tracker));
    const auto growth = static_cast<float>(p.growth_factor);
    const auto backoff = static_cast<float>(p.backoff_factor);

    if (found_inf != 0.0f) {  // IEEE: NaN compares unequal, so it counts as found; -0.0 does not
      scale = scale * backoff;
      tracker = 0;
    } else {
      // int32 two's-complement wrap, computed in unsigned arithmetic (no undefined behaviour).
      const auto successful = static_cast<int32_t>(static_cast<uint32_t>(tracker) + 1u);
      if (successful == p.growth_interval) {
        const float grown = scale * growth;
        // The contract: keep the scale when the grown one overflows the OUTPUT dtype (upstream
        // tests the fp32 product, so an fp16 65504 * 2 would be stored as inf there).
        if (std::isfinite(round_to(dtype, grown))) scale = grown;
        tracker = 0;
      } else {
        tracker = successful;
      }
    }
    // A NaN result is stored as the canonical quiet NaN, as every operator does: payload
    // propagation differs between CPUs, and results must not.
    if (std::isnan(scale)) scale = std::bit_cast<float>(0x7FC00000u);
    store_from_float(dtype, t.updated_scale.data, 0, scale);
    std::memcpy(t.updated_growth_tracker.data, &tracker, sizeof(tracker));
    return {};
  });
}

}  // namespace mantissa
