// The trainer's own small kernels: the GELU activation and an underflow count, written once for
// every SIMD target. Each output element gets the same bits on every target and for every thread
// count. (Its matrix products are the library's MatMul and Addmm.)
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::train::detail {

// GELU, tanh form: y = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), with
// tanh(u) = 1 - 2 / (1 + exp(2u)) and the library's exp (core/math-inl.h); and its derivative
// times dy. fp32 in and out, the same bits on every target.
void gelu_forward(const float* x, float* y, int64_t n);
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n);

// How many of src[0, n) are nonzero while bits[i], their fp16 or bf16 rounding, is +-0.
int64_t count_underflow(const float* src, const uint16_t* bits, int64_t n);

}  // namespace mantissa::train::detail
