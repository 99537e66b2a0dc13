// The trainer's own small kernels: a deterministic GEMM (fixed k order, separate multiply and
// add, fp32 accumulation) and the GELU activation, written once for every SIMD target. Each
// output element gets the same bits on every target and for every thread count.
#pragma once

#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::train::detail {

// C[m, n] = sum over k = 0, 1, ..., K-1 of A[m, k] * B[k, n], accumulated in fp32 from +0 in
// that order, each product and each sum rounded separately (no FMA). A and B share one dtype
// (FLOAT, FLOAT16 or BFLOAT16; 16-bit values are widened exactly); all row-major and
// contiguous; C is FLOAT. With a bias (fp32, n values; may be null) the finished sum gets
// bias[n] added, one more fp32 addition. Rows of C are split among threads; the split never
// changes a bit.
void gemm(DType dtype, const void* a, const void* b, const float* bias, float* c, int64_t m,
          int64_t k, int64_t n);

// GELU, tanh form: y = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), with
// tanh(u) = 1 - 2 / (1 + exp(2u)) and the library's exp (core/math-inl.h); and its derivative
// times dy. fp32 in and out, the same bits on every target.
void gelu_forward(const float* x, float* y, int64_t n);
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n);

// How many of src[0, n) are nonzero while bits[i], their fp16 or bf16 rounding, is +-0.
int64_t count_underflow(const float* src, const uint16_t* bits, int64_t n);

}  // namespace mantissa::train::detail
