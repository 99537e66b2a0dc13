// DynamicQuant (CANN's aclnnDynamicQuant, DynamicQuant by name): per-token (per-row) symmetric
// quantization over the last dim. Per row, in fp32:
//   in    = x * smooth_scales            (no smooth scales: x)
//   scale = max_i |in_i| / dtype_max     (INT8 127, INT4 and packed INT32 7, E4M3FN 448,
//                                         E5M2 57344)
//   y_i   = convert(in_i / scale)        (round to nearest even, saturate; FP8 with saturation)
// See docs/ops/dynamic_quant.md for NaN, infinities and rows of zeros.
#pragma once

#include <optional>

#include "mantissa/dtype.h"
#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

struct DynamicQuantTensors {
  TensorView x;  // FLOAT16 or BFLOAT16; rank 2..8, [A..., H]
  // Shape [H], x's dtype. Absent: 1.
  std::optional<TensorView> smooth_scales;
  // INT8, INT4 (x's shape, H even: two per byte, low nibble first), INT32 (eight int4 per int32,
  // [A..., H / 8]), FLOAT8_E4M3FN or FLOAT8_E5M2 (x's shape). Its dtype is dst_type.
  TensorView y;
  TensorView scale;  // FLOAT, [A...] (or [A..., 1])
};

struct DynamicQuantParams {
  DType dst_type = DType::kInt8;  // y's dtype (the aclnn entry takes it from y)
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones). No workspace.
MANTISSA_API Status dynamic_quant(const DynamicQuantTensors& t, const DynamicQuantParams& p,
                                  Workspace ws = {});
MANTISSA_API Status dynamic_quant_validate(const DynamicQuantTensors& t,
                                           const DynamicQuantParams& p);

}  // namespace mantissa
