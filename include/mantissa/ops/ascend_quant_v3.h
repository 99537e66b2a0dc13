// AscendQuantV3 (CANN's aclnnAscendQuantV3, AscendQuantV2 by name): per element, in fp32,
//   y = convert(x * scale[c] + offset[c])            (sqrt_mode: x * scale[c] * scale[c])
// where c is the element's index along `axis` (or 0 when scale holds one element); convert
// rounds with round_mode (round: to nearest, ties to even; floor; ceil; trunc) and saturates to
// y's dtype (INT8, INT4, INT32 holding eight int4), or converts to FP8 (E4M3FN, E5M2) with
// round-to-nearest-even and saturation. See docs/ops/ascend_quant_v3.md.
#pragma once

#include <cstdint>
#include <optional>

#include "mantissa/dtype.h"
#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

// aclnn's roundMode strings, numbered as upstream's kernels number them.
enum class QuantRoundMode : int32_t { kRound = 0, kFloor = 1, kCeil = 2, kTrunc = 3 };

// "round", "floor", "ceil", "trunc" -> the mode; false for any other string (null included).
MANTISSA_API bool quant_round_mode_from_name(const char* name, QuantRoundMode& mode) noexcept;
MANTISSA_API const char* quant_round_mode_name(QuantRoundMode mode) noexcept;

struct AscendQuantV3Tensors {
  TensorView x;  // FLOAT, FLOAT16 or BFLOAT16; rank 1..8
  // Rank 1, one element or x.shape[axis] of them; FLOAT, or x's dtype.
  TensorView scale;
  std::optional<TensorView> offset;  // scale's dtype and shape. Absent: 0.
  // dst_type: INT8 or INT4 (x's shape; INT4 needs an even last dim, two per byte, low nibble
  // first), INT32 (eight int4 per int32, [..., last / 8]), FLOAT8_E4M3FN or FLOAT8_E5M2.
  TensorView y;
};

struct AscendQuantV3Params {
  bool sqrt_mode = false;
  QuantRoundMode round_mode = QuantRoundMode::kRound;  // FP8 outputs take kRound only
  DType dst_type = DType::kInt8;
  int32_t axis = -1;  // one of x's last two dims
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones). No workspace.
MANTISSA_API Status ascend_quant_v3(const AscendQuantV3Tensors& t, const AscendQuantV3Params& p,
                                    Workspace ws = {});
MANTISSA_API Status ascend_quant_v3_validate(const AscendQuantV3Tensors& t,
                                             const AscendQuantV3Params& p);

}  // namespace mantissa
