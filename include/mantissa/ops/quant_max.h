// QuantMax (CANN's aclnnQuantMax, QuantMax by name): a per-tensor FP8 cast with a scale and the
// input's absolute maximum, in one pass over x:
//   y    = convert(fp32(x) * scale)     one fp32 product, then round to nearest even and
//                                       saturate to +-max of y's format; NaN -> the NaN code
//   amax = max |x|                      exact; NaN when any element is NaN; +0 for an empty x
// The primitive of delayed and current FP8 scaling (mantissa/fp8.h). See docs/ops/quant_max.md.
#pragma once

#include <cstdint>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

// aclnn's roundMode strings: "rint" (round to nearest, ties to even) is FP8's; "round" and
// "hybrid" are HIFLOAT8's, which this library does not implement.
enum class QuantMaxRoundMode : int32_t { kRint = 0, kRound = 1, kHybrid = 2 };

MANTISSA_API bool quant_max_round_mode_from_name(const char* name,
                                                 QuantMaxRoundMode& mode) noexcept;
MANTISSA_API const char* quant_max_round_mode_name(QuantMaxRoundMode mode) noexcept;

struct QuantMaxTensors {
  TensorView x;      // FLOAT, FLOAT16 or BFLOAT16; rank 1..8; may be empty
  TensorView scale;  // FLOAT, one element
  TensorView y;      // x's shape; FLOAT8_E5M2 or FLOAT8_E4M3FN, as dst_type says
  TensorView amax;   // x's dtype, one element
};

struct QuantMaxParams {
  QuantMaxRoundMode round_mode = QuantMaxRoundMode::kRint;  // kRint, the FP8 formats' mode
  // FLOAT8_E5M2 (35) or FLOAT8_E4M3FN (36); y's dtype. HIFLOAT8 (34) is refused (161002).
  DType dst_type = DType::kFloat8E4M3FN;
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones). No workspace.
MANTISSA_API Status quant_max(const QuantMaxTensors& t, const QuantMaxParams& p, Workspace ws = {});
MANTISSA_API Status quant_max_validate(const QuantMaxTensors& t, const QuantMaxParams& p);

}  // namespace mantissa
