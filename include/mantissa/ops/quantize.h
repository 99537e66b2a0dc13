// Quantize (CANN's aclnnQuantize, Quantize by name): per element, in fp32,
//   y = convert(x / scales[c] + zero_points[c])
// where c is the element's index along `axis` (or 0 when scales holds one element), and convert
// rounds to nearest, ties to even, then saturates to y's dtype (INT8, UINT8, INT32), or converts
// to FP8 (E4M3FN, E5M2) with round-to-nearest-even and saturation. See docs/ops/quantize.md.
#pragma once

#include <cstdint>
#include <optional>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

struct QuantizeTensors {
  TensorView x;  // FLOAT, FLOAT16 or BFLOAT16; rank 1..8
  // Rank 1, one element or x.shape[axis] of them; FLOAT, or x's dtype.
  TensorView scales;
  // scales' shape; INT8, UINT8, INT32, FLOAT or BFLOAT16 (BFLOAT16 only with x and scales
  // BFLOAT16). Absent: 0.
  std::optional<TensorView> zero_points;
  TensorView y;  // x's shape; dtype `dtype`
};

struct QuantizeParams {
  // INT8, UINT8, INT32, FLOAT8_E4M3FN or FLOAT8_E5M2 (HIFLOAT8 is refused); y's dtype.
  DType dtype = DType::kInt8;
  int32_t axis = 1;  // in [-rank(x), rank(x)): the dim scales and zero_points run along
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones). No workspace.
MANTISSA_API Status quantize(const QuantizeTensors& t, const QuantizeParams& p, Workspace ws = {});
MANTISSA_API Status quantize_validate(const QuantizeTensors& t, const QuantizeParams& p);

}  // namespace mantissa
