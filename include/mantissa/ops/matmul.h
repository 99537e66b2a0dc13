// Matrix products (CANN's MatMulV2 / BatchMatMulV2 and aclnnMatmul, aclnnBatchMatMul, aclnnAddmm),
// deterministic on every CPU. Per output, in this order (docs/ops/matmul.md):
//
//   acc = +0;  for k = 0 .. K-1:  acc = fma(a[m, k], b[k, n], acc)
//
// in fp32, each fma correctly rounded (a hardware FMA, or an exact software one on CPUs without
// it), operands widened exactly from fp16/bf16 (or rounded first, as cube_math_type asks), the
// result rounded once to out's dtype. Cache blocking and threads never change the order, so the
// bits are the same for every SIMD target and thread count.
//
// The inputs may have any non-negative strides (a transposed or broadcast view is read where it
// is, not copied); out is contiguous.
#pragma once

#include <cstdint>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa {

// CANN's cubeMathType: what the NPU's cube unit does with the operands, emulated. By the
// operands' promoted dtype (fp32 when either is fp32, or when they are fp16 and bf16):
//   kKeepDtype (0), kUseFp32Add (4), kFp16Fp32KeepDtype (-1): as given
//   kAllowFp32DownPrecision (1), kUseHf32 (3): fp32 x fp32 or fp32 x fp16 rounded to HFLOAT32
//       (11 explicit significand bits, nearest with ties away from zero); others as given
//   kUseFp16 (2): rounded to fp16 (a no-op for fp16; bf16 x bf16 as given, as the NPU ignores it)
enum class CubeMathType : int8_t {
  kFp16Fp32KeepDtype = -1,
  kKeepDtype = 0,
  kAllowFp32DownPrecision = 1,
  kUseFp16 = 2,
  kUseHf32 = 3,
  kUseFp32Add = 4,
};

// out = self @ mat2 with torch.matmul's shapes: ranks 1..6; a rank-1 operand is a row (self) or
// a column (mat2) whose dim the result drops; the batch dims broadcast.
struct MatmulTensors {
  TensorView self;  // FLOAT, FLOAT16 or BFLOAT16, [..., m, k] or [k]
  TensorView mat2;  // FLOAT, FLOAT16 or BFLOAT16, [..., k, n] or [k]
  TensorView out;   // FLOAT, FLOAT16 or BFLOAT16, the broadcast batch dims, then m, then n
};

struct MatmulParams {
  int8_t cube_math_type = 0;  // CubeMathType
  // The graph's attributes (MatMulV2's transpose_x1, transpose_x2): multiply by the transposed
  // view of self (mat2): its last two dims swapped (self and mat2 of rank 2 or more).
  bool transpose_self = false;
  bool transpose_mat2 = false;
};

MANTISSA_API Status matmul(const MatmulTensors& t, const MatmulParams& p = {});
MANTISSA_API Status matmul_validate(const MatmulTensors& t, const MatmulParams& p = {});

// out[b] = self[b] @ mat2[b]: rank 3, the batch equal or 1 in one of them (broadcast).
struct BatchMatMulTensors {
  TensorView self;  // FLOAT, FLOAT16 or BFLOAT16, [b, m, k]
  TensorView mat2;  // FLOAT, FLOAT16 or BFLOAT16, [b, k, n]
  TensorView out;   // FLOAT, FLOAT16 or BFLOAT16, [b, m, n]
};

struct BatchMatMulParams {
  int8_t cube_math_type = 0;    // CubeMathType (as Matmul's; kUseFp32Add is kKeepDtype)
  bool transpose_self = false;  // BatchMatMulV2's adj_x1
  bool transpose_mat2 = false;  // BatchMatMulV2's adj_x2
};

MANTISSA_API Status batch_matmul(const BatchMatMulTensors& t, const BatchMatMulParams& p = {});
MANTISSA_API Status batch_matmul_validate(const BatchMatMulTensors& t,
                                          const BatchMatMulParams& p = {});

// out = beta * self + alpha * (mat1 @ mat2), the product as Matmul's, then in fp32
//   out = (beta * self) + (alpha * acc)
// each product and the sum rounded to fp32, then once to out's dtype. beta and alpha are taken
// as fp32 (rounded to nearest) and, as on the NPU: |beta| <= FLT_EPSILON means self is not read
// (its NaN and inf do not reach out); |alpha| <= FLT_EPSILON means the product is not computed
// (out = beta * self); within FLT_EPSILON of 1 either is exactly 1 (no multiplication).
struct AddmmTensors {
  TensorView self;  // FLOAT, FLOAT16 or BFLOAT16, [n], [1, n], [m, 1] or [m, n] (broadcast)
  TensorView mat1;  // FLOAT, FLOAT16 or BFLOAT16, [m, k]
  TensorView mat2;  // FLOAT, FLOAT16 or BFLOAT16, [k, n]
  TensorView out;   // FLOAT, FLOAT16 or BFLOAT16, [m, n]; may be self itself ([m, n], in place)
};

struct AddmmParams {
  double beta = 1.0;
  double alpha = 1.0;
  int8_t cube_math_type = 0;  // CubeMathType
};

MANTISSA_API Status addmm(const AddmmTensors& t, const AddmmParams& p = {});
MANTISSA_API Status addmm_validate(const AddmmTensors& t, const AddmmParams& p = {});

}  // namespace mantissa
