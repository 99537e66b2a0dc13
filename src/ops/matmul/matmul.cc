// MatMul, BatchMatMul and Addmm: validation from the declarations (matmul_desc.h), then one call
// of the product kernel (gemm.h) with the operands' own strides.
#include "mantissa/ops/matmul.h"

#include <cfloat>
#include <cmath>

#include "core/op_entry.h"
#include "ops/matmul/gemm.h"
#include "ops/matmul/matmul_desc.h"
#include "ops/matmul/matmul_plan.h"

namespace mantissa {

namespace {

// An fp32 scalar as the NPU takes it: rounded to fp32, exactly 1 within FLT_EPSILON of 1.
float npu_scalar(double value) {
  // Beyond fp32's range (FLT_MAX plus half its ulp) the value rounds to inf (a cast would be
  // undefined there).
  const float f = std::fabs(value) >= 0x1.ffffffp+127 ? (value > 0 ? HUGE_VALF : -HUGE_VALF)
                                                      : static_cast<float>(value);
  return std::fabs(f - 1.0f) <= FLT_EPSILON ? 1.0f : f;
}

}  // namespace

Status matmul_validate(const MatmulTensors& t, const MatmulParams& p) {
  return detail::validate<detail::MatmulOp>(t, p);
}

Status matmul(const MatmulTensors& t, const MatmulParams& p) {
  return detail::op_entry<detail::MatmulOp>(t, p, [&]() -> Status {
    detail::MatmulPlan plan;
    MANTISSA_RETURN_IF_ERROR(detail::plan_matmul(detail::MatmulOp::kType, t.self, t.mat2,
                                                 p.transpose_self, p.transpose_mat2, &plan));
    detail::bind_out(plan, t.out);
    // Both rank 1: a dot product, on which the NPU's cube math type has no effect.
    plan.gemm.format = t.self.rank == 1 && t.mat2.rank == 1
                           ? detail::OperandFormat::kAsIs
                           : detail::operand_format(p.cube_math_type, t.self.dtype, t.mat2.dtype);
    detail::gemm(plan.gemm);
    return {};
  });
}

Status batch_matmul_validate(const BatchMatMulTensors& t, const BatchMatMulParams& p) {
  return detail::validate<detail::BatchMatMulOp>(t, p);
}

Status batch_matmul(const BatchMatMulTensors& t, const BatchMatMulParams& p) {
  return detail::op_entry<detail::BatchMatMulOp>(t, p, [&]() -> Status {
    detail::MatmulPlan plan;
    MANTISSA_RETURN_IF_ERROR(detail::plan_matmul(detail::BatchMatMulOp::kType, t.self, t.mat2,
                                                 p.transpose_self, p.transpose_mat2, &plan));
    detail::bind_out(plan, t.out);
    plan.gemm.format = detail::operand_format(p.cube_math_type, t.self.dtype, t.mat2.dtype);
    detail::gemm(plan.gemm);
    return {};
  });
}

Status addmm_validate(const AddmmTensors& t, const AddmmParams& p) {
  return detail::validate<detail::AddmmOp>(t, p);
}

Status addmm(const AddmmTensors& t, const AddmmParams& p) {
  return detail::op_entry<detail::AddmmOp>(t, p, [&]() -> Status {
    constexpr std::string_view op = detail::AddmmOp::kType;
    detail::MatmulPlan plan;
    MANTISSA_RETURN_IF_ERROR(detail::plan_matmul(op, t.mat1, t.mat2, false, false, &plan));
    MANTISSA_RETURN_IF_ERROR(detail::plan_addmm_self(op, t.self, plan));
    detail::bind_out(plan, t.out);
    detail::GemmArgs& g = plan.gemm;
    g.format = detail::operand_format(p.cube_math_type, t.mat1.dtype, t.mat2.dtype);
    g.beta = npu_scalar(p.beta);
    g.alpha = npu_scalar(p.alpha);
    // As on the NPU: a beta within FLT_EPSILON of 0 leaves self out; an alpha within it leaves
    // the product out (out = beta * self: a product over k = 0).
    if (std::fabs(g.beta) <= FLT_EPSILON) g.has_self = false, g.beta = 0.0f;
    if (std::fabs(g.alpha) <= FLT_EPSILON) g.product = false;
    detail::gemm(g);
    return {};
  });
}

}  // namespace mantissa
