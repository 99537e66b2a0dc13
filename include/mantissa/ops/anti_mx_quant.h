// AntiMxQuant (CANN's aclnnAntiMxQuant, AntiMxQuant by name): the inverse of DynamicMxQuant.
// Each FP8 element is multiplied by its block's scale, 2^(code - 127) (blocks of 32 along
// `axis`, the codes in DynamicMxQuant's paired mxscale layout), in fp32, and rounded once to
// y's dtype. A NaN code (0xFF) gives NaN. See docs/ops/anti_mx_quant.md.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"
#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

struct AntiMxQuantTensors {
  TensorView x;        // FLOAT8_E4M3FN or FLOAT8_E5M2; rank 1..7; may be empty
  TensorView mxscale;  // FLOAT8_E8M0, DynamicMxQuant's layout for x, axis and blocks of 32
  TensorView y;        // x's shape; dst_type: FLOAT, FLOAT16 or BFLOAT16
};

struct AntiMxQuantParams {
  int64_t axis = -1;                  // in [-rank(x), rank(x))
  DType dst_type = DType::kBFloat16;  // 0 (FLOAT), 1 (FLOAT16) or 27 (BFLOAT16): y's dtype
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones). No workspace.
MANTISSA_API Status anti_mx_quant(const AntiMxQuantTensors& t, const AntiMxQuantParams& p,
                                  Workspace ws = {});
MANTISSA_API Status anti_mx_quant_validate(const AntiMxQuantTensors& t, const AntiMxQuantParams& p);

}  // namespace mantissa
