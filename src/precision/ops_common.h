// Helpers shared by the kit's operator definitions: fp32 arithmetic with an explicit NaN rule
// for golden32, and views over host tensors for the backends.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mantissa/tensor.h"
#include "precision/fp.h"
#include "precision/kit.h"

namespace mantissa::precision {

// Rounds a golden32 result to the output dtype. The project's NaN rule: every NaN an operator
// computes is stored as the canonical quiet NaN (fp32 0x7FC00000, fp16 0x7E00, bf16 0x7FC0),
// because which operand's payload IEEE arithmetic propagates differs between CPU families.
inline uint32_t narrow_result(float f, DType dtype) {
  return std::isnan(f) ? quiet_nan_bits(dtype, false) : narrow_float(f, dtype);
}

// Element i of a float tensor widened to fp32 / to double.
inline float in_f32(const HostTensor& t, int64_t i) { return widen_to_float(t.bits(i), t.dtype); }
inline double in_f64(const HostTensor& t, int64_t i) { return decode_bits(t.bits(i), t.dtype); }

// A contiguous view over a host tensor, for the C++ API. An empty tensor gets a valid, unused
// pointer, as a caller's allocation would give it.
inline void* data_or_dummy(HostTensor& t) {
  alignas(64) static uint8_t dummy[64];
  return t.bytes.empty() ? static_cast<void*>(dummy) : t.data();
}
inline TensorView view_of(HostTensor& t) {
  return TensorView(data_or_dummy(t), t.dtype,
                    std::span<const int64_t>(t.shape.data(), t.shape.size()));
}

}  // namespace mantissa::precision
