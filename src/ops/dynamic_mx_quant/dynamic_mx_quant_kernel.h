// The validated, flattened arguments of DynamicMxQuant, handed from the operator entry to its
// SIMD kernel.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

// x viewed as [outer, length, inner] around the quantized axis; blocks of `blocksize` along
// `length`; mxscale as [outer, pairs, inner, 2] (pairs = ceil(blocks / 2)).
struct DynamicMxQuantKernelArgs {
  DType x_dtype = DType::kFloat32;
  DType y_dtype = DType::kFloat8E4M3FN;
  int64_t outer = 1, length = 1, inner = 1;
  int64_t blocksize = 32;
  int64_t scale_alg = 0;
  float max_low_bound = 0.0f;
  const void* x = nullptr;
  uint8_t* y = nullptr;
  uint8_t* mxscale = nullptr;
};

// A block's E8M0 code from its max |x| (fp32; NaN or +inf when the block holds one) and the
// factor its elements are multiplied by (2^(127 - code); 0 or NaN for the special codes).
struct MxBlockScale {
  uint8_t code = 0;
  float recip = 0.0f;
};
MxBlockScale mx_block_scale(float amax, DType y_dtype, int64_t scale_alg, float max_low_bound);

}  // namespace mantissa::detail
