// The matrix products' declarations: MatMul (aclnnMatmul, graph MatMulV2), BatchMatMul
// (aclnnBatchMatMul, graph BatchMatMulV2) and Addmm (aclnnAddmm). Arguments in CANN's order; the
// inputs are read through their strides. See core/op_desc.h and ops/matmul/matmul_plan.h.
#pragma once

#include <array>
#include <cmath>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/op_desc.h"
#include "mantissa/ops/matmul.h"
#include "mantissa/workspace.h"
#include "ops/matmul/matmul_plan.h"

namespace mantissa::detail {

struct MatmulOp {
  using Tensors = MatmulTensors;
  using Params = MatmulParams;
  static constexpr std::string_view kType = "MatMulV2";
  static constexpr std::string_view kFunction = "matmul";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnMatmul";
  static constexpr std::string_view kAclnnHeader = "aclnn_matmul.h";
  // CANN's phase-one signature: the build generates the aclnn header and entries from it.
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* self, const aclTensor* mat2, aclTensor* out, int8_t cubeMathType";

  enum Arg { kSelf, kMat2, kOut };
  static constexpr std::array kArgs{
      ArgSpec{"self", "self", "x1", Role::kIn}.training_float().rank(1, 6).any_strides(),
      ArgSpec{"mat2", "mat2", "x2", Role::kIn}.training_float().rank(1, 6).any_strides(),
      Out("out", "out", "y").training_float().rank(0, 6),
  };
  MANTISSA_TENSOR_MEMBERS(self, mat2, out);

  static constexpr std::array kAttrs{
      AttrSpec{"cube_math_type", AttrType::kInt, false, 0.0},
      AttrSpec{"transpose_self", AttrType::kBool, false, 0.0, "transpose_x1"},
      AttrSpec{"transpose_mat2", AttrType::kBool, false, 0.0, "transpose_x2"},
  };
  MANTISSA_ATTR_MEMBERS(cube_math_type, transpose_self, transpose_mat2);

  // Not element-wise: bench/bench_matmul.cc times it.
  enum class Variant { kDefault };
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  // cube_math_type's value; self and mat2 multiply (k, broadcast batch dims); out's shape.
  static Status check_params(const Tensors& t, const Params& p) {
    MANTISSA_RETURN_IF_ERROR(check_cube_math_type(kType, p.cube_math_type));
    MatmulPlan plan;
    MANTISSA_RETURN_IF_ERROR(
        plan_matmul(kType, t.self, t.mat2, p.transpose_self, p.transpose_mat2, &plan));
    return check_out_shape(kType, plan, t.out, "self @ mat2");
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) { return matmul(t, p); }

  // The kit's out: the promoted dtype of self and mat2, the product's shape.
  static void infer_output(std::size_t, const Tensors& t, const Params& p, DType& dtype,
                           std::vector<int64_t>& shape) {
    dtype = promoted_dtype(t.self.dtype, t.mat2.dtype);
    MatmulPlan plan;
    if (plan_matmul(kType, t.self, t.mat2, p.transpose_self, p.transpose_mat2, &plan).ok()) {
      shape.assign(plan.out_shape.begin(), plan.out_shape.begin() + plan.out_rank);
    }
  }

  // aclnn has no transpose attributes: it takes the transposed views.
  static bool aclnn_transposed(std::size_t k, const Params& p) {
    return (k == kSelf && p.transpose_self) || (k == kMat2 && p.transpose_mat2);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.aclnn_transposed = &aclnn_transposed};
};
static_assert(well_formed<MatmulOp>());

struct BatchMatMulOp {
  using Tensors = BatchMatMulTensors;
  using Params = BatchMatMulParams;
  static constexpr std::string_view kType = "BatchMatMulV2";
  static constexpr std::string_view kFunction = "batch_matmul";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnBatchMatMul";
  static constexpr std::string_view kAclnnHeader = "aclnn_batch_matmul.h";
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* self, const aclTensor* mat2, aclTensor* out, int8_t cubeMathType";

  enum Arg { kSelf, kMat2, kOut };
  static constexpr std::array kArgs{
      ArgSpec{"self", "self", "x1", Role::kIn}.training_float().rank(3, 3).any_strides(),
      ArgSpec{"mat2", "mat2", "x2", Role::kIn}.training_float().rank(3, 3).any_strides(),
      Out("out", "out", "y").training_float().rank(3, 3),
  };
  MANTISSA_TENSOR_MEMBERS(self, mat2, out);

  static constexpr std::array kAttrs{
      AttrSpec{"cube_math_type", AttrType::kInt, false, 0.0},
      AttrSpec{"transpose_self", AttrType::kBool, false, 0.0, "adj_x1"},
      AttrSpec{"transpose_mat2", AttrType::kBool, false, 0.0, "adj_x2"},
  };
  MANTISSA_ATTR_MEMBERS(cube_math_type, transpose_self, transpose_mat2);

  enum class Variant { kDefault };
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  static Status check_params(const Tensors& t, const Params& p) {
    MANTISSA_RETURN_IF_ERROR(check_cube_math_type(kType, p.cube_math_type));
    MatmulPlan plan;
    MANTISSA_RETURN_IF_ERROR(
        plan_matmul(kType, t.self, t.mat2, p.transpose_self, p.transpose_mat2, &plan));
    return check_out_shape(kType, plan, t.out, "self @ mat2");
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) {
    return batch_matmul(t, p);
  }

  // The kit's out: the promoted dtype of self and mat2, the product's shape.
  static void infer_output(std::size_t, const Tensors& t, const Params& p, DType& dtype,
                           std::vector<int64_t>& shape) {
    dtype = promoted_dtype(t.self.dtype, t.mat2.dtype);
    MatmulPlan plan;
    if (plan_matmul(kType, t.self, t.mat2, p.transpose_self, p.transpose_mat2, &plan).ok()) {
      shape.assign(plan.out_shape.begin(), plan.out_shape.begin() + plan.out_rank);
    }
  }

  // aclnn has no transpose attributes: it takes the transposed views.
  static bool aclnn_transposed(std::size_t k, const Params& p) {
    return (k == kSelf && p.transpose_self) || (k == kMat2 && p.transpose_mat2);
  }

  static constexpr OpHooks<Tensors, Params> kHooks{.infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{.aclnn_transposed = &aclnn_transposed};
};
static_assert(well_formed<BatchMatMulOp>());

struct AddmmOp {
  using Tensors = AddmmTensors;
  using Params = AddmmParams;
  static constexpr std::string_view kType = "Addmm";
  static constexpr std::string_view kFunction = "addmm";  // the C++ API's
  static constexpr std::string_view kAclnn = "aclnnAddmm";
  static constexpr std::string_view kAclnnHeader = "aclnn_addmm.h";
  static constexpr std::string_view kAclnnSignature =
      "const aclTensor* self, const aclTensor* mat1, const aclTensor* mat2, "
      "const aclScalar* beta, const aclScalar* alpha, aclTensor* out, int8_t cubeMathType";

  enum Arg { kSelf, kMat1, kMat2, kOut };
  static constexpr std::array kArgs{
      ArgSpec{"self", "self", "self", Role::kIn}.training_float().rank(1, 2).any_strides(),
      ArgSpec{"mat1", "mat1", "mat1", Role::kIn}.training_float().rank(2, 2).any_strides(),
      ArgSpec{"mat2", "mat2", "mat2", Role::kIn}.training_float().rank(2, 2).any_strides(),
      Out("out", "out", "out").training_float().rank(2, 2),
  };
  MANTISSA_TENSOR_MEMBERS(self, mat1, mat2, out);

  static constexpr std::array kAttrs{
      AttrSpec{"beta", AttrType::kScalar, false, 1.0},
      AttrSpec{"alpha", AttrType::kScalar, false, 1.0},
      AttrSpec{"cube_math_type", AttrType::kInt, false, 0.0},
  };
  MANTISSA_ATTR_MEMBERS(beta, alpha, cube_math_type);

  enum class Variant { kDefault };
  static constexpr std::array<VariantSpec<Variant>, 0> kVariants{};

  // cube_math_type; mat1 and mat2 multiply; out is [m, n]; self broadcasts to it.
  static Status check_params(const Tensors& t, const Params& p) {
    MANTISSA_RETURN_IF_ERROR(check_cube_math_type(kType, p.cube_math_type));
    MatmulPlan plan;
    MANTISSA_RETURN_IF_ERROR(plan_matmul(kType, t.mat1, t.mat2, false, false, &plan));
    MANTISSA_RETURN_IF_ERROR(check_out_shape(kType, plan, t.out, "mat1 @ mat2"));
    return plan_addmm_self(kType, t.self, plan);
  }
  // The kit's out: the promoted dtype of self, mat1 and mat2, shape [m, n].
  static void infer_output(std::size_t, const Tensors& t, const Params&, DType& dtype,
                           std::vector<int64_t>& shape) {
    dtype = promoted_dtype(promoted_dtype(t.mat1.dtype, t.mat2.dtype), t.self.dtype);
    shape = {t.mat1.shape[0], t.mat2.shape[1]};
  }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) { return addmm(t, p); }

  static constexpr OpHooks<Tensors, Params> kHooks{.infer_output = &infer_output};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<AddmmOp>());

}  // namespace mantissa::detail
