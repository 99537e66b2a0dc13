// Exp, Log, Erf and Tanh over fp32 arrays (Exp, Erf, Erfc and Tanh over fp64 arrays), with the
// bits every kernel of the library computes them with (one implementation for every SIMD target;
// accuracy in docs/math.md): for scalar code and references that must match the kernels bit for
// bit.
#pragma once

#include <cstdint>

#include "mantissa/export.h"

namespace mantissa {

// out[i] = exp(in[i]) / log(in[i]) for i in [0, n), on the current SIMD target (every target
// gives the same bits). in and out may be the same array.
MANTISSA_API void exp_f32(const float* in, float* out, int64_t n);
MANTISSA_API void log_f32(const float* in, float* out, int64_t n);

// out[i] = exp(in[i]) in fp64 (the exponential LogSoftmaxGrad uses; within 1.13 ulp of fp64), the
// same bits on every SIMD target. in and out may be the same array.
MANTISSA_API void exp_f64(const double* in, double* out, int64_t n);

// out[i] = erf(in[i]) / tanh(in[i]) rounded once to fp32 from the library's fp64 functions below
// (NaN: the canonical NaN), the functions GELU's and the activations' kernels use; accuracy over
// all 2^32 inputs in docs/math.md. in and out may be the same array.
MANTISSA_API void erf_f32(const float* in, float* out, int64_t n);
MANTISSA_API void tanh_f32(const float* in, float* out, int64_t n);

// out[i] = erf(in[i]), erfc(in[i]), tanh(in[i]) in fp64 (relative error below 4e-15 on [-6, 6];
// erfc's exponent rounding adds up to in^2 * 2^-52 relative in its far tail), the same bits on
// every SIMD target. erfc_f64 of x >= 0 is the erfc GELU's erf form evaluates; of x < 0 it is 2
// minus erfc_f64(-x). in and out may be the same array.
MANTISSA_API void erf_f64(const double* in, double* out, int64_t n);
MANTISSA_API void erfc_f64(const double* in, double* out, int64_t n);
MANTISSA_API void tanh_f64(const double* in, double* out, int64_t n);

}  // namespace mantissa
