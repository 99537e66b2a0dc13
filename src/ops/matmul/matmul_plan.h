// The shapes of the matrix products: torch.matmul's rules (MatMul), rank-3 batches (BatchMatMul)
// and Addmm's broadcast self, turned into the kernel's arguments (gemm.h). Used by validation (the
// declarations' check_params) and by the entries, so the two never disagree.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "mantissa/ops/matmul.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "ops/matmul/gemm.h"

namespace mantissa::detail {

struct MatmulPlan {
  GemmArgs gemm;  // operands, batch and matrix dims; out's pointer and strides set by bind_out
  int out_rank = 0;
  std::array<int64_t, kMaxRank> out_shape{};
  bool self_row = false, mat2_column = false;  // rank-1 operands: their dim is not in out
};

inline Status matmul_invalid(std::string_view op, const std::string& message) {
  return Status(StatusCode::kParamInvalid, fmt::format("{}: {}", op, message));
}

// The dtype two operands promote to: theirs when they agree, otherwise FLOAT (fp16 with bf16
// included, as on the NPU).
constexpr DType promoted_dtype(DType a, DType b) { return a == b ? a : DType::kFloat32; }

// CANN's cubeMathType values (-1 .. 4).
inline Status check_cube_math_type(std::string_view op, int8_t value) {
  if (value < -1 || value > 4) {
    return matmul_invalid(op, fmt::format("cube_math_type is {} but must be one of -1 (FP16FP32_"
                                          "KEEP_DTYPE), 0 (KEEP_DTYPE), 1 (ALLOW_FP32_DOWN_"
                                          "PRECISION), 2 (USE_FP16), 3 (USE_HF32), 4 (USE_FP32_"
                                          "ADD)",
                                          static_cast<int>(value)));
  }
  return {};
}

// What cubeMathType does to the operands on the NPU (Atlas A2/A3), by their dtypes: the promoted
// dtype is theirs when they agree, otherwise fp32.
inline OperandFormat operand_format(int8_t cube_math_type, DType a, DType b) {
  const bool bf16 = a == DType::kBFloat16 || b == DType::kBFloat16;
  const bool fp32 = a == DType::kFloat32 || b == DType::kFloat32;
  switch (static_cast<CubeMathType>(cube_math_type)) {
    case CubeMathType::kAllowFp32DownPrecision:
    case CubeMathType::kUseHf32:
      // fp32 x fp32 and fp32 x fp16 as HFLOAT32; with a bf16 operand the NPU keeps fp32.
      return fp32 && !bf16 ? OperandFormat::kHf32 : OperandFormat::kAsIs;
    case CubeMathType::kUseFp16:
      if (a == DType::kFloat16 && b == DType::kFloat16) return OperandFormat::kAsIs;  // already
      return a == DType::kBFloat16 && b == DType::kBFloat16 ? OperandFormat::kAsIs    // ignored
                                                            : OperandFormat::kFp16;
    default: return OperandFormat::kAsIs;
  }
}

// One matrix operand's two trailing dims (or its one dim) as rows x cols with their strides.
struct MatrixDims {
  int64_t rows = 1, cols = 1, row_stride = 0, col_stride = 0;
};

inline MatrixDims matrix_dims(const TensorView& v, bool transpose, bool is_rhs) {
  MatrixDims d;
  if (v.rank == 1) {
    // A row [1, k] on the left, a column [k, 1] on the right.
    if (is_rhs) {
      d.rows = v.shape[0], d.row_stride = v.strides[0];
    } else {
      d.cols = v.shape[0], d.col_stride = v.strides[0];
    }
    return d;
  }
  const int r = v.rank;
  d.rows = v.shape[r - 2], d.cols = v.shape[r - 1];
  d.row_stride = v.strides[r - 2], d.col_stride = v.strides[r - 1];
  if (transpose) std::swap(d.rows, d.cols), std::swap(d.row_stride, d.col_stride);
  return d;
}

// self @ mat2 with torch.matmul's rules (both of rank 1 or more).
inline Status plan_matmul(std::string_view op, const TensorView& self, const TensorView& mat2,
                          bool transpose_self, bool transpose_mat2, MatmulPlan* plan) {
  if ((transpose_self && self.rank < 2) || (transpose_mat2 && mat2.rank < 2)) {
    return matmul_invalid(op, fmt::format("a transpose needs rank 2 or more, but {} has rank {}",
                                          transpose_self && self.rank < 2 ? "self" : "mat2",
                                          transpose_self && self.rank < 2 ? self.rank : mat2.rank));
  }
  const MatrixDims a = matrix_dims(self, transpose_self, false);
  const MatrixDims b = matrix_dims(mat2, transpose_mat2, true);
  if (a.cols != b.rows) {
    return matmul_invalid(
        op,
        fmt::format("self {}{} and mat2 {}{} cannot be multiplied: self's k "
                    "is {} but mat2's is {}",
                    self.shape_string(), transpose_self ? " (transposed)" : "", mat2.shape_string(),
                    transpose_mat2 ? " (transposed)" : "", a.cols, b.rows));
  }
  MatmulPlan p;
  GemmArgs& g = p.gemm;
  g.m = a.rows, g.k = a.cols, g.n = b.cols;
  g.a = {self.data, self.dtype, a.row_stride, a.col_stride, {}};
  g.b = {mat2.data, mat2.dtype, b.row_stride, b.col_stride, {}};
  const int self_batch = std::max(self.rank - 2, 0), mat2_batch = std::max(mat2.rank - 2, 0);
  g.batch_rank = std::max(self_batch, mat2_batch);
  for (int i = 0; i < g.batch_rank; ++i) {
    // Right-aligned: dim i of the batch is dim i - (batch_rank - own batch rank) of an operand.
    const int ia = i - (g.batch_rank - self_batch), ib = i - (g.batch_rank - mat2_batch);
    const int64_t sa = ia >= 0 ? self.shape[ia] : 1, sb = ib >= 0 ? mat2.shape[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      return matmul_invalid(op, fmt::format("the batch dims of self {} and mat2 {} do not "
                                            "broadcast: {} against {}",
                                            self.shape_string(), mat2.shape_string(), sa, sb));
    }
    const auto u = static_cast<std::size_t>(i);
    g.batch_shape[u] = sa == 1 ? sb : sa;
    g.a.batch[u] = ia >= 0 && sa != 1 ? self.strides[ia] : 0;
    g.b.batch[u] = ib >= 0 && sb != 1 ? mat2.strides[ib] : 0;
    p.out_shape[u] = g.batch_shape[u];
  }
  p.out_rank = g.batch_rank;
  p.self_row = self.rank == 1, p.mat2_column = mat2.rank == 1;
  if (!p.self_row) p.out_shape[static_cast<std::size_t>(p.out_rank++)] = g.m;
  if (!p.mat2_column) p.out_shape[static_cast<std::size_t>(p.out_rank++)] = g.n;
  *plan = p;
  return {};
}

// out against the plan's shape (161002 naming both).
inline Status check_out_shape(std::string_view op, const MatmulPlan& plan, const TensorView& out,
                              std::string_view rule) {
  bool same = out.rank == plan.out_rank;
  for (int i = 0; same && i < out.rank; ++i) same = out.shape[i] == plan.out_shape[i];
  if (!same) {
    TensorView expected;
    expected.rank = plan.out_rank;
    expected.shape = plan.out_shape;
    return matmul_invalid(op, fmt::format("out has shape {} but {} gives {}", out.shape_string(),
                                          rule, expected.shape_string()));
  }
  return {};
}

// Points the plan's output at out (its shape checked against the plan).
inline void bind_out(MatmulPlan& plan, const TensorView& out) {
  GemmArgs& g = plan.gemm;
  g.out = out.data, g.out_dtype = out.dtype;
  int r = out.rank;
  g.out_cols = 1, g.out_rows = 0;
  if (!plan.mat2_column) g.out_cols = out.strides[--r];
  if (!plan.self_row) g.out_rows = out.strides[--r];
  for (int i = 0; i < g.batch_rank; ++i) g.out_batch[static_cast<std::size_t>(i)] = out.strides[i];
}

// Addmm's self against [m, n]: rank 1 or 2, each dim equal or 1 (broadcast).
inline Status plan_addmm_self(std::string_view op, const TensorView& self, MatmulPlan& plan) {
  GemmArgs& g = plan.gemm;
  const int64_t want[2] = {g.m, g.n};
  int64_t stride[2] = {0, 0};
  for (int i = 0; i < self.rank; ++i) {
    const int64_t size = self.shape[self.rank - 1 - i];
    const int64_t target = want[1 - i];
    if (size != target && size != 1) {
      return matmul_invalid(op, fmt::format("self {} does not broadcast to mat1 @ mat2's [{}, {}]",
                                            self.shape_string(), g.m, g.n));
    }
    stride[1 - i] = size == 1 ? 0 : self.strides[self.rank - 1 - i];
  }
  g.self = {self.data, self.dtype, stride[0], stride[1], {}};
  g.has_self = true;
  return {};
}

}  // namespace mantissa::detail
