// The matrix-product kernel behind MatMul, BatchMatMul and Addmm (and every product the trainer
// computes): a batch of C[m, n] = A[m, k] @ B[k, n] with any element strides, in the normative
// order (docs/ops/matmul.md):
//
//   acc = +0;  for k = 0 .. K-1:  acc = fma(a[m, k], b[k, n], acc)      (fp32, one rounding each)
//
// with 16-bit operands widened exactly (and, where a cube math type asks for it, fp32 operands
// first rounded to a narrower format), then the epilogue
//
//   out = beta * self + alpha * acc      (Addmm: each product rounded to fp32, then the sum)
//   out = acc                            (MatMul, BatchMatMul; Addmm with beta == 0 reads no self
//                                         and with alpha == 1 multiplies by nothing)
//
// NaN made canonical and the result rounded once to out's dtype. Cache blocking over k stores the
// fp32 partial sums and resumes them (the same sequence of roundings); threads split the batch,
// m and n, never k. Targets without a hardware FMA compute each fma exactly in software.
#pragma once

#include <array>
#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {

// What happens to an operand before the products (the cube math types' emulation).
enum class OperandFormat : uint8_t {
  kAsIs,  // fp32 as given; fp16/bf16 widened exactly
  kFp16,  // each value rounded to fp16 first
  kHf32,  // each value rounded to HFLOAT32: fp32's sign and exponent, 11 explicit significand
          // bits, to nearest with ties away from zero (round_to_hf32)
};

inline constexpr int kGemmMaxBatchRank = 8;

// One matrix operand: element (i, j) of batch item b is at data + offset(b) + i * rows + j * cols
// (strides in elements, any sign of zero or more).
struct GemmOperand {
  const void* data = nullptr;
  DType dtype = DType::kFloat32;
  int64_t rows = 0, cols = 0;                      // strides of the two matrix dims
  std::array<int64_t, kGemmMaxBatchRank> batch{};  // strides of the batch dims (0: broadcast)
};

struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  // The batch: `batch_rank` dims of sizes batch_shape (the product may be 0 or 1).
  int batch_rank = 0;
  std::array<int64_t, kGemmMaxBatchRank> batch_shape{};
  GemmOperand a, b;  // [m, k] and [k, n]
  OperandFormat format = OperandFormat::kAsIs;
  // Out: FLOAT, FLOAT16 or BFLOAT16; element (i, j) at data + batch offset + i * rows + j * cols.
  void* out = nullptr;
  DType out_dtype = DType::kFloat32;
  int64_t out_rows = 0, out_cols = 1;
  std::array<int64_t, kGemmMaxBatchRank> out_batch{};
  // Addmm's epilogue; self unused when null or beta == 0.
  GemmOperand self;
  bool has_self = false;
  float alpha = 1.0f, beta = 0.0f;
  bool product = true;  // false: out = beta * self (or +0 without self); A and B are not read
};

// Runs the product. Allocates its packing buffers first (std::bad_alloc leaves out untouched).
void gemm(const GemmArgs& args);

// Rounds an fp32 value to HFLOAT32 as the NPU's cube unit does (Ascend C's SetHF32 mode 1, which
// CANN's matmul kernels set): 11 of fp32's 23 explicit significand bits kept, to nearest with
// ties away from zero, a carry reaching the exponent (the largest values round to inf); NaN stays
// NaN (made quiet), inf stays inf.
float round_to_hf32(float f) noexcept;

}  // namespace mantissa::detail
