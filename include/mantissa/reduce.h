// Deterministic reductions over a whole tensor: sum, dot product, L2 norm and max |x| of fp32,
// fp16 or bf16 data, with a choice of accumulation method and accumulator precision.
//
// Every result has the same bits for any thread count and any SIMD target: the elements are
// summed in a fixed order (blocks of 4096 elements, 32 interleaved lanes per block, partials
// combined in a fixed pairwise tree), see docs/reductions.md for the order and error bounds.
#pragma once

#include <cstdint>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

enum class ReduceMethod : int32_t {
  kNaive = 0,     // plain sums per lane: error grows with the block length (about 128 u)
  kPairwise = 1,  // pairwise within each lane: error grows like log2(n) u
  kKahan = 2,     // Kahan compensation per lane: error about 2 u, independent of n
  kNeumaier = 3,  // Neumaier's variant (also exact when an addend exceeds the running sum)
};

enum class ReduceAccumulator : int32_t {
  kFloat32 = 0,  // sums kept in fp32; the result is an fp32 value
  kFloat64 = 1,  // sums kept in fp64 (products of dot and L2 norm are then exact)
};

struct ReduceOptions {
  ReduceMethod method = ReduceMethod::kNeumaier;
  ReduceAccumulator accumulator = ReduceAccumulator::kFloat32;
};

// Special values: a NaN element (or inf - inf) gives a NaN result (the positive quiet NaN),
// an infinite element otherwise gives that infinity, and a finite sum that overflows the
// accumulator gives inf. An empty tensor gives +0 (max_abs: +0). Tensors must be contiguous.

// *result = sum of the elements of x.
MANTISSA_API Status sum(const TensorView& x, double* result, const ReduceOptions& options = {});
// *result = sum of x[i] * y[i]; x and y have the same dtype and shape. With an fp32 accumulator
// each product is rounded to fp32 (compensation covers the additions, not the products).
MANTISSA_API Status dot(const TensorView& x, const TensorView& y, double* result,
                        const ReduceOptions& options = {});
// *result = sqrt(sum of x[i]^2), the square root taken in the accumulator's precision. With an
// fp32 accumulator, sums of squares above FLT_MAX (|x| around 1.8e19 and up) overflow to inf.
MANTISSA_API Status l2_norm(const TensorView& x, double* result, const ReduceOptions& options = {});
// *result = max |x[i]| (exact; NaN if any element is NaN).
MANTISSA_API Status max_abs(const TensorView& x, double* result);

}  // namespace mantissa
