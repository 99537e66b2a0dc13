// The validated, flattened arguments of QuantMax, handed from the operator entry to its SIMD
// kernel.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

// Elements per parallel piece: the pieces' partial maxima are merged in piece order, and a max
// is exact, so the bits depend on neither this constant nor the thread count.
inline constexpr int64_t kQuantMaxChunk = 32768;

// The max |x| of one piece; nan: a NaN element was seen (its value is then not in `value`).
struct AmaxPartial {
  float value = 0.0f;
  bool nan = false;
};

struct QuantMaxKernelArgs {
  DType x_dtype = DType::kFloat32;
  DType y_dtype = DType::kFloat8E4M3FN;
  int64_t numel = 0;
  const void* x = nullptr;
  uint8_t* y = nullptr;
  float scale = 1.0f;
  AmaxPartial* partials = nullptr;  // chunk_count(numel, kQuantMaxChunk) of them
};

}  // namespace mantissa::detail
