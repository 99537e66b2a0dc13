// The validated, flattened arguments of AscendQuantV3, handed from the operator entry to its SIMD
// kernel.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"
#include "mantissa/ops/ascend_quant_v3.h"

namespace mantissa::detail {

// Elements per parallel piece: even, so that a packed INT4 byte never spans two pieces.
inline constexpr int64_t kAscendQuantChunk = 32768;

struct AscendQuantV3KernelArgs {
  DType x_dtype = DType::kFloat32;
  DType y_dtype = DType::kInt8;  // INT4 and INT32 share the packed int4 layout
  QuantRoundMode round_mode = QuantRoundMode::kRound;
  bool sqrt_mode = false;
  int64_t numel = 0;
  int64_t channels = 1;  // scale's element count: 1 (per tensor) or x.shape[axis]
  int64_t inner = 1;     // the elements of one channel run
  const void* x = nullptr;
  void* y = nullptr;
  const float* scale = nullptr;   // channels values, fp32
  const float* offset = nullptr;  // channels values, fp32; null: none
};

}  // namespace mantissa::detail
