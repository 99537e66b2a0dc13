// Exp and Log over fp32 arrays (and Exp over fp64 arrays), with the bits every kernel of the
// library computes them with (one implementation for every SIMD target; accuracy in docs/math.md):
// for scalar code and references that must match the kernels bit for bit.
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

}  // namespace mantissa
