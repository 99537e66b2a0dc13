// DynamicMxQuant (CANN's aclnnDynamicMxQuantV3 and aclnnDynamicMxQuant, DynamicMxQuant by name):
// microscaling quantization along any axis. x is cut along `axis` into blocks of `blocksize`
// elements (the last one may be shorter); each block gets one power-of-two scale, stored as an
// E8M0 code, and each element becomes FP8(x * 2^(127 - code)) (or FP4, two per byte), rounded
// by round_mode and saturated. The scale rule is chosen by scale_alg:
//   0  OCP:    code = E(amax) - emax, at least 0 (E the biased fp32 exponent of the block's
//              max |x|; emax 8 for E4M3FN, 15 for E5M2, 2 for E2M1, 0 for E1M2)
//   1  cuBLAS: S = fp32(max(amax, max_low_bound) * fp32(1 / dtype_max)); code = S's biased
//              exponent, plus one when S is not a power of two (the exponent rounded up); FP8
//   2  FP4 (E2M1): the exponent up when amax's significand (rounded to bf16) exceeds 1.5, or
//              cuBLAS's rule with dst_type_max (docs/ops/dynamic_mx_quant.md)
// A block holding an infinity or a NaN gets code 0xFF (NaN) and NaN elements; see
// docs/ops/dynamic_mx_quant.md for the zero and tiny-amax rules and the mxscale layout.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"
#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

// aclnn's roundModeOptional strings ("rint" when null): FP8 destinations take only kRint;
// "floor" and "round" are the FLOAT4 destinations'.
enum class MxRoundMode : int32_t { kRint = 0, kFloor = 1, kRound = 2 };

MANTISSA_API bool mx_round_mode_from_name(const char* name, MxRoundMode& mode) noexcept;
MANTISSA_API const char* mx_round_mode_name(MxRoundMode mode) noexcept;

struct DynamicMxQuantTensors {
  TensorView x;  // FLOAT, FLOAT16 or BFLOAT16; rank 1..7; may be empty
  TensorView y;  // x's shape; FLOAT8_E5M2, FLOAT8_E4M3FN or FLOAT4 (packed), as dst_type says
  // FLOAT8_E8M0, rank(x) + 1: x's shape with dim `axis` replaced by ceil(ceil(x.shape[axis] /
  // blocksize) / 2) and a last dim of 2. Element [..., j, ..., t] is the scale of block 2j + t
  // along the axis (a missing last block of an odd count: code 0).
  TensorView mxscale;
};

struct DynamicMxQuantParams {
  int64_t axis = -1;  // in [-rank(x), rank(x))
  MxRoundMode round_mode = MxRoundMode::kRint;
  DType dst_type = DType::kFloat8E4M3FN;  // 35, 36, or FLOAT4 40 (E2M1) / 41 (E1M2), packed
  int64_t blocksize = 32;                 // a multiple of 32 in [32, 1024]
  int64_t scale_alg = 0;                  // 0 (OCP), 1 (cuBLAS; FP8), 2 (the FP4 rule; E2M1)
  float dst_type_max = 0.0f;              // 0 or [6, 12]: scale_alg 2's rule (docs/ops)
  float max_low_bound = 0.0f;             // scale_alg 1 only: amax = max(amax, max_low_bound); >= 0
};

// The C++ API requires contiguous tensors (the aclnn layer copies strided ones). No workspace.
MANTISSA_API Status dynamic_mx_quant(const DynamicMxQuantTensors& t, const DynamicMxQuantParams& p,
                                     Workspace ws = {});
MANTISSA_API Status dynamic_mx_quant_validate(const DynamicMxQuantTensors& t,
                                              const DynamicMxQuantParams& p);

}  // namespace mantissa
