// MatMul, BatchMatMul and Addmm: bitwise against the kit's golden32 (the normative fma order,
// indexed independently of the library's planner) on every SIMD target and thread count 1, 2, 3
// and 7, with shapes across the kernel's blocks (k blocks of 256, tasks of up to 192 rows and 512
// columns, register tiles and their edges); within the fp64 error bound of a dot product; strided
// and broadcast operands equal to their contiguous copies; the cube math types; Addmm's scalar
// rules; the validation rows through the C++ API and aclnn (nothing written); transposed views
// through aclnn without a workspace (read where they are, not copied).
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_addmm.h"
#include "aclnnop/aclnn_batch_matmul.h"
#include "aclnnop/aclnn_matmul.h"
#include "mantissa/ops/matmul.h"
#include "op_support.h"
#include "ops/matmul/gemm.h"
#include "ops/matmul/matmul_desc.h"
#include "precision/fp.h"

namespace mantissa::testing {

namespace {

using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using detail::AddmmOp;
using detail::BatchMatMulOp;
using detail::MatmulOp;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::sentinel;
using mt::untouched;
using mt::view;

constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// The product's shape by torch.matmul's rules, for the out tensor the tests allocate.
std::vector<int64_t> product_shape(const HostTensor& a, const HostTensor& b, bool ta, bool tb) {
  std::vector<int64_t> sa = a.shape, sb = b.shape;
  if (ta) std::swap(sa[sa.size() - 1], sa[sa.size() - 2]);
  if (tb) std::swap(sb[sb.size() - 1], sb[sb.size() - 2]);
  const std::size_t ba = sa.size() >= 2 ? sa.size() - 2 : 0,
                    bb = sb.size() >= 2 ? sb.size() - 2 : 0;
  const std::size_t batch = std::max(ba, bb);
  std::vector<int64_t> out(batch);
  for (std::size_t i = 0; i < batch; ++i) {
    const int64_t da = i + ba >= batch ? sa[i + ba - batch] : 1;
    const int64_t db = i + bb >= batch ? sb[i + bb - batch] : 1;
    out[i] = da == 1 ? db : da;
  }
  if (sa.size() >= 2) out.push_back(sa[sa.size() - 2]);
  if (sb.size() >= 2) out.push_back(sb.back());
  return out;
}

HostTensor matmul_golden(HostTensor& a, HostTensor& b, DType out_dtype, const MatmulParams& p) {
  HostTensor out = sentinel(out_dtype, product_shape(a, b, p.transpose_self, p.transpose_mat2));
  mt::apply_golden32<MatmulOp>({.self = view(a), .mat2 = view(b), .out = view(out)}, p);
  return out;
}

struct Shape {
  std::vector<int64_t> a, b;
  bool ta = false, tb = false;
};

// Across the blocks: k of 1, 255..257 and 600 (three k blocks), rows and columns around the
// register tiles (4, 6, 12 rows; 8, 16, 32 columns), tasks of 192 rows and 512 columns.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s{
      {{1, 1}, {1, 1}},
      {{13, 1}, {1, 33}},
      {{5, 257}, {257, 17}},
      {{25, 600}, {600, 31}},
      {{200, 64}, {64, 70}},
      {{7, 300}, {300, 530}},
      {{12, 256}, {256, 32}},
      {{40, 30}, {50, 40}, true, true},
      {{3, 2, 19, 40}, {40, 23}},
      {{2, 1, 9, 16}, {3, 16, 10}},
      {{70}, {70, 9}},
      {{9, 70}, {70}},
      {{300}, {300}},
  };
  return s;
}

TEST(Matmul, BitExactOnEveryTargetAndThreadCount) {
  for (DType d : kDtypes) {
    for (const Shape& s : shapes()) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + shape_text(s.a) + " @ " + shape_text(s.b) +
                   (s.ta ? " ta" : "") + (s.tb ? " tb" : ""));
      HostTensor a = filled(d, s.a, 0.0, 1.0, 11), b = filled(d, s.b, 0.0, 1.0, 12);
      const MatmulParams p{.transpose_self = s.ta, .transpose_mat2 = s.tb};
      const HostTensor ref = matmul_golden(a, b, d, p);
      mt::for_each_target_and_thread_count([&](const std::string&, int) {
        HostTensor out = sentinel(d, ref.shape);
        ASSERT_TRUE(matmul({.self = view(a), .mat2 = view(b), .out = view(out)}, p).ok());
        expect_same_bits(out, ref, "out");
      });
    }
  }
}

// fp32 out from 16-bit operands (no rounding to 16 bits on the way), mixed operand dtypes.
TEST(Matmul, MixedDtypes) {
  const std::vector<std::vector<DType>> rows{{DType::kBFloat16, DType::kBFloat16, DType::kFloat32},
                                             {DType::kFloat16, DType::kFloat32, DType::kFloat32},
                                             {DType::kBFloat16, DType::kFloat16, DType::kFloat32},
                                             {DType::kFloat32, DType::kFloat32, DType::kBFloat16}};
  for (const auto& r : rows) {
    SCOPED_TRACE(std::string(dtype_name(r[0])) + " @ " + dtype_name(r[1]) + " -> " +
                 dtype_name(r[2]));
    HostTensor a = filled(r[0], {30, 300}, 0.0, 1.0, 5), b = filled(r[1], {300, 40}, 0.0, 1.0, 6);
    // The normative order on the exactly widened operands, rounded once to out's dtype.
    HostTensor ref(r[2], {30, 40});
    for (int64_t i = 0; i < 30; ++i) {
      for (int64_t j = 0; j < 40; ++j) {
        float acc = 0.0f;
        for (int64_t q = 0; q < 300; ++q) {
          acc = std::fmaf(precision::widen_to_float(a.bits(i * 300 + q), r[0]),
                          precision::widen_to_float(b.bits(q * 40 + j), r[1]), acc);
        }
        ref.set_bits(i * 40 + j, precision::narrow_float(acc, r[2]));
      }
    }
    mt::for_each_target_and_thread_count(
        [&](const std::string&, int) {
          HostTensor out = sentinel(r[2], ref.shape);
          ASSERT_TRUE(matmul({.self = view(a), .mat2 = view(b), .out = view(out)}).ok());
          expect_same_bits(out, ref, "out");
        },
        {1, 2});
  }
}

// |out - exact| <= gamma_k * sum |a||b| + (half an ulp of out): the bound of a k-term dot
// product accumulated in fp32 (u = 2^-24), exact products summed in long double.
TEST(Matmul, WithinTheDotProductErrorBound) {
  for (int64_t k : {1, 10, 256, 1000, 4096}) {
    SCOPED_TRACE("k " + std::to_string(k));
    HostTensor a = filled(DType::kFloat32, {8, k}, 0.0, 1.0, 21);
    HostTensor b = filled(DType::kFloat32, {k, 8}, 0.0, 1.0, 22);
    HostTensor out(DType::kFloat32, {8, 8});
    ASSERT_TRUE(matmul({.self = view(a), .mat2 = view(b), .out = view(out)}).ok());
    const long double u = std::ldexp(1.0L, -24);
    const long double gamma = k * u / (1 - k * u);
    double worst = 0;
    for (int64_t i = 0; i < 8; ++i) {
      for (int64_t j = 0; j < 8; ++j) {
        long double exact = 0, magnitude = 0;
        for (int64_t q = 0; q < k; ++q) {
          const long double x = std::bit_cast<float>(a.bits(i * k + q));
          const long double y = std::bit_cast<float>(b.bits(q * 8 + j));
          exact += x * y;
          magnitude += std::fabs(x * y);
        }
        const long double got = std::bit_cast<float>(out.bits(i * 8 + j));
        const long double err = std::fabs(got - exact);
        ASSERT_LE(err, gamma * magnitude) << i << "," << j;
        worst = std::max(worst, static_cast<double>(err / (gamma * magnitude)));
      }
    }
    RecordProperty("worst_share_of_bound_k" + std::to_string(k), std::to_string(worst));
  }
}

// Views with gaps, transposes, broadcast (stride 0) batch dims: the same bits as contiguous
// copies of the same values.
TEST(Matmul, StridedOperandsAreReadWhereTheyAre) {
  for (DType d : {DType::kFloat32, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(d));
    // self: every other column of a [20, 2*70] buffer; mat2: the transpose of a [33, 70] buffer.
    HostTensor big_a = filled(d, {20, 140}, 0.0, 1.0, 31), bt = filled(d, {33, 70}, 0.0, 1.0, 32);
    HostTensor a(d, {20, 70}), b(d, {70, 33});
    for (int64_t i = 0; i < 20; ++i) {
      for (int64_t q = 0; q < 70; ++q) a.set_bits(i * 70 + q, big_a.bits(i * 140 + 2 * q));
    }
    for (int64_t q = 0; q < 70; ++q) {
      for (int64_t j = 0; j < 33; ++j) b.set_bits(q * 33 + j, bt.bits(j * 70 + q));
    }
    const HostTensor ref = matmul_golden(a, b, d, {});
    const int64_t a_shape[] = {20, 70}, a_strides[] = {140, 2};
    const int64_t b_shape[] = {70, 33}, b_strides[] = {1, 70};
    const TensorView sa(big_a.data(), d, a_shape, a_strides), sb(bt.data(), d, b_shape, b_strides);
    mt::for_each_target_and_thread_count(
        [&](const std::string&, int) {
          HostTensor out = sentinel(d, {20, 33});
          ASSERT_TRUE(matmul({.self = sa, .mat2 = sb, .out = view(out)}).ok());
          expect_same_bits(out, ref, "out");
        },
        {1, 3});
    // A batch dim of stride 0: [4, 20, 70] whose items are all `a`.
    const int64_t e_shape[] = {4, 20, 70}, e_strides[] = {0, 70, 1};
    const TensorView expanded(a.data(), d, e_shape, e_strides);
    HostTensor out = sentinel(d, {4, 20, 33});
    ASSERT_TRUE(matmul({.self = expanded, .mat2 = view(b), .out = view(out)}).ok());
    for (int64_t item = 0; item < 4; ++item) {
      for (int64_t e = 0; e < 20 * 33; ++e) ASSERT_EQ(out.bits(item * 660 + e), ref.bits(e));
    }
  }
}

TEST(Matmul, SpecialValuesAndEmptyShapes) {
  // A NaN or inf operand reaches exactly the outputs of its row and column; NaN is canonical.
  HostTensor a = filled(DType::kFloat32, {4, 5}, 0.0, 1.0, 41);
  HostTensor b = filled(DType::kFloat32, {5, 3}, 0.0, 1.0, 42);
  a.set_bits(1 * 5 + 2, 0x7FC01234u);  // a NaN with a payload
  b.set_bits(4 * 3 + 0, 0x7F800000u);  // +inf
  const HostTensor ref = matmul_golden(a, b, DType::kFloat32, {});
  HostTensor out(DType::kFloat32, {4, 3});
  ASSERT_TRUE(matmul({.self = view(a), .mat2 = view(b), .out = view(out)}).ok());
  expect_same_bits(out, ref, "out");
  for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(out.bits(1 * 3 + j), 0x7FC00000u);
  // k = 0: +0 everywhere; an empty m writes nothing.
  HostTensor a0(DType::kFloat32, {3, 0}), b0(DType::kFloat32, {0, 4});
  HostTensor zeros = sentinel(DType::kFloat32, {3, 4});
  ASSERT_TRUE(matmul({.self = view(a0), .mat2 = view(b0), .out = view(zeros)}).ok());
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(zeros.bits(i), 0u);
  HostTensor ae(DType::kFloat32, {0, 4}), be = filled(DType::kFloat32, {4, 2}, 0, 1, 1);
  HostTensor empty(DType::kFloat32, {0, 2});
  EXPECT_TRUE(matmul({.self = view(ae), .mat2 = view(be), .out = view(empty)}).ok());
}

// HFLOAT32 as the NPU rounds (11 explicit bits, ties away from zero), checked against an
// independent definition over a sweep of fp32 patterns; the cube math types' operand rounding.
TEST(Matmul, CubeMathTypes) {
  for (uint32_t i = 0; i < (1u << 20); ++i) {
    const uint32_t bits = i * 4096u + (i % 4096u);  // every exponent, many low-bit patterns
    const float x = std::bit_cast<float>(bits);
    const float got = detail::round_to_hf32(x);
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(got));
      continue;
    }
    float want = x;
    if (std::isfinite(x) && x != 0.0f) {
      const int e = std::max(std::ilogb(x), -126);
      const long double unit = std::ldexp(1.0L, e - 11);
      const long double r = std::floor(std::fabs(static_cast<long double>(x)) / unit + 0.5L) * unit;
      want = static_cast<float>(std::copysign(r, static_cast<long double>(x)));
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << std::hex << bits;
  }
  // The tie: 1 + 2^-12 is halfway between 1 and 1 + 2^-11: away from zero.
  EXPECT_EQ(detail::round_to_hf32(1.0f + 0x1p-12f), 1.0f + 0x1p-11f);
  EXPECT_EQ(detail::round_to_hf32(-(1.0f + 0x1p-12f)), -(1.0f + 0x1p-11f));
  // Each cube math type against golden32 (which rounds the operands on its own).
  for (int8_t cube : {-1, 0, 1, 2, 3, 4}) {
    for (DType d : kDtypes) {
      SCOPED_TRACE("cube_math_type " + std::to_string(cube) + " " + dtype_name(d));
      HostTensor a = filled(d, {17, 100}, 0.0, 1.0, 51), b = filled(d, {100, 21}, 0.0, 1.0, 52);
      const MatmulParams p{.cube_math_type = cube};
      const HostTensor ref = matmul_golden(a, b, d, p);
      HostTensor out = sentinel(d, ref.shape);
      ASSERT_TRUE(matmul({.self = view(a), .mat2 = view(b), .out = view(out)}, p).ok());
      expect_same_bits(out, ref, "out");
      if (d == DType::kFloat32 && (cube == 1 || cube == 2 || cube == 3)) {
        const HostTensor exact = matmul_golden(a, b, d, {});
        EXPECT_NE(out.bytes, exact.bytes) << "the operands were not rounded";
      }
    }
  }
}

TEST(BatchMatMul, BitExactWithBroadcastAndTransposes) {
  struct Row {
    std::vector<int64_t> a, b;
    bool ta, tb;
  };
  const std::vector<Row> rows{{{4, 30, 50}, {4, 50, 20}, false, false},
                              {{1, 30, 50}, {3, 50, 20}, false, false},
                              {{3, 50, 30}, {1, 20, 50}, true, true},
                              {{128, 16, 32}, {128, 32, 16}, false, false}};
  for (DType d : kDtypes) {
    for (const Row& r : rows) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + shape_text(r.a) + " @ " + shape_text(r.b));
      HostTensor a = filled(d, r.a, 0.0, 1.0, 61), b = filled(d, r.b, 0.0, 1.0, 62);
      const BatchMatMulParams p{.transpose_self = r.ta, .transpose_mat2 = r.tb};
      HostTensor ref = sentinel(d, product_shape(a, b, r.ta, r.tb));
      mt::apply_golden32<BatchMatMulOp>({.self = view(a), .mat2 = view(b), .out = view(ref)}, p);
      mt::for_each_target_and_thread_count(
          [&](const std::string&, int) {
            HostTensor out = sentinel(d, ref.shape);
            ASSERT_TRUE(batch_matmul({.self = view(a), .mat2 = view(b), .out = view(out)}, p).ok());
            expect_same_bits(out, ref, "out");
          },
          {1, 7});
    }
  }
}

HostTensor addmm_golden(HostTensor& self, HostTensor& m1, HostTensor& m2, DType out_dtype,
                        const AddmmParams& p) {
  HostTensor out = sentinel(out_dtype, {m1.shape[0], m2.shape[1]});
  mt::apply_golden32<AddmmOp>(
      {.self = view(self), .mat1 = view(m1), .mat2 = view(m2), .out = view(out)}, p);
  return out;
}

TEST(Addmm, EpilogueOnEveryTargetAndThreadCount) {
  const std::vector<std::vector<int64_t>> selves{{37}, {1, 37}, {20, 1}, {20, 37}, {1}};
  const std::vector<std::pair<double, double>> scalars{{1.0, 1.0},     {0.5, 2.0}, {-1.5, 0.25},
                                                       {0.0, 1.0},     {1.0, 0.0}, {1e-9, 1.0},
                                                       {1e300, -1e300}};  // beyond fp32: inf
  for (DType d : kDtypes) {
    for (const auto& s : selves) {
      for (const auto& [beta, alpha] : scalars) {
        SCOPED_TRACE(std::string(dtype_name(d)) + " self " + shape_text(s) + " beta " +
                     std::to_string(beta) + " alpha " + std::to_string(alpha));
        HostTensor self = filled(d, s, 0.0, 1.0, 71);
        HostTensor m1 = filled(d, {20, 300}, 0.0, 1.0, 72), m2 = filled(d, {300, 37}, 0.0, 1.0, 73);
        const AddmmParams p{.beta = beta, .alpha = alpha};
        const HostTensor ref = addmm_golden(self, m1, m2, d, p);
        mt::for_each_target_and_thread_count(
            [&](const std::string&, int) {
              HostTensor out = sentinel(d, {20, 37});
              ASSERT_TRUE(
                  addmm({.self = view(self), .mat1 = view(m1), .mat2 = view(m2), .out = view(out)},
                        p)
                      .ok());
              expect_same_bits(out, ref, "out");
            },
            {1, 3});
      }
    }
  }
}

// The NPU's scalar rules: beta within FLT_EPSILON of 0 leaves self out (its NaN does not reach
// out), alpha within it leaves the product out (a NaN operand does not either), and the grouping
// (beta * self) + (alpha * acc) in fp32.
TEST(Addmm, ScalarRules) {
  HostTensor self = filled(DType::kFloat32, {2, 3}, 0.0, 1.0, 81);
  HostTensor m1 = filled(DType::kFloat32, {2, 4}, 0.0, 1.0, 82);
  HostTensor m2 = filled(DType::kFloat32, {4, 3}, 0.0, 1.0, 83);
  HostTensor nan_self = self;
  nan_self.set_bits(0, 0x7FC00000u);
  HostTensor out(DType::kFloat32, {2, 3});
  ASSERT_TRUE(addmm({.self = view(nan_self), .mat1 = view(m1), .mat2 = view(m2), .out = view(out)},
                    {.beta = 1e-8})
                  .ok());
  EXPECT_FALSE(std::isnan(std::bit_cast<float>(out.bits(0))));
  HostTensor nan_m1 = m1;
  nan_m1.set_bits(0, 0x7FC00000u);
  ASSERT_TRUE(addmm({.self = view(self), .mat1 = view(nan_m1), .mat2 = view(m2), .out = view(out)},
                    {.beta = 2.0, .alpha = 0.0})
                  .ok());
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(std::bit_cast<float>(out.bits(i)), 2.0f * std::bit_cast<float>(self.bits(i)));
  }
  // beta = 0.5, alpha = 3: each element (0.5f * self) + (3.0f * acc) in fp32.
  ASSERT_TRUE(addmm({.self = view(self), .mat1 = view(m1), .mat2 = view(m2), .out = view(out)},
                    {.beta = 0.5, .alpha = 3.0})
                  .ok());
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      float acc = 0.0f;
      for (int64_t q = 0; q < 4; ++q) {
        acc = std::fmaf(std::bit_cast<float>(m1.bits(i * 4 + q)),
                        std::bit_cast<float>(m2.bits(q * 3 + j)), acc);
      }
      const float s = std::bit_cast<float>(self.bits(i * 3 + j));
      const float want = 0.5f * s + 3.0f * acc;
      EXPECT_EQ(std::bit_cast<uint32_t>(std::bit_cast<float>(out.bits(i * 3 + j))),
                std::bit_cast<uint32_t>(want));
    }
  }
}

// ---- Validation ---------------------------------------------------------------------------

aclnnStatus matmul_two(void* w, uint64_t s, aclOpExecutor* e) {
  return aclnnMatmul(w, s, e, nullptr);
}

TEST(Matmul, ValidationWritesNothing) {
  HostTensor a = filled(DType::kFloat32, {4, 5}, 0, 1, 1),
             b = filled(DType::kFloat32, {5, 3}, 0, 1, 2);
  HostTensor b6 = filled(DType::kFloat32, {6, 3}, 0, 1, 2);
  HostTensor ai(DType::kInt32, {4, 5});
  HostTensor rank7 = filled(DType::kFloat32, {1, 1, 1, 1, 1, 4, 5}, 0, 1, 3);
  HostTensor batch2 = filled(DType::kFloat32, {2, 4, 5}, 0, 1, 4),
             batch3 = filled(DType::kFloat32, {3, 5, 3}, 0, 1, 5);
  HostTensor scalar = filled(DType::kFloat32, {}, 0, 1, 6);
  struct Row {
    std::string what;
    HostTensor* self;
    HostTensor* mat2;
    std::vector<int64_t> out_shape;
    int8_t cube = 0;
    std::string needle;
  };
  const std::vector<Row> rows{
      {"k differs", &a, &b6, {4, 3}, 0, "cannot be multiplied"},
      {"out shape", &a, &b, {4, 4}, 0, "out has shape [4, 4]"},
      {"INT32 self", &ai, &b, {4, 3}, 0, "self"},
      {"rank 7", &rank7, &b, {1, 1, 1, 1, 1, 4, 3}, 0, "rank"},
      {"rank 0", &scalar, &b, {3}, 0, "rank"},
      {"batches", &batch2, &batch3, {3, 4, 3}, 0, "do not broadcast"},
      {"cube 5", &a, &b, {4, 3}, 5, "cube_math_type is 5"},
      {"cube -2", &a, &b, {4, 3}, -2, "cube_math_type is -2"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    HostTensor out = sentinel(DType::kFloat32, r.out_shape);
    const Status s = matmul({.self = view(*r.self), .mat2 = view(*r.mat2), .out = view(out)},
                            {.cube_math_type = r.cube});
    EXPECT_EQ(s.code(), StatusCode::kParamInvalid);
    EXPECT_NE(s.message().find("MatMulV2"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(r.needle), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(out));
    aclTensor* x = acl(view(*r.self));
    aclTensor* y = acl(view(*r.mat2));
    aclTensor* o = acl(view(out));
    const aclnnStatus st = mt::run_two_phases(
        [&](uint64_t* size, aclOpExecutor** e) {
          return aclnnMatmulGetWorkspaceSize(x, y, o, r.cube, size, e);
        },
        matmul_two);
    EXPECT_EQ(st, ACLNN_ERR_PARAM_INVALID) << aclGetRecentErrMsg();
    EXPECT_TRUE(untouched(out));
    aclDestroyTensor(x);
    aclDestroyTensor(y);
    aclDestroyTensor(o);
  }
  // A negative stride, a transpose of a rank-1 operand, out overlapping an input, null out.
  const int64_t shape[] = {4, 5}, negative[] = {5, -1};
  const TensorView reversed(static_cast<float*>(a.data()) + 4, DType::kFloat32, shape, negative);
  HostTensor out = sentinel(DType::kFloat32, {4, 3});
  EXPECT_EQ(matmul({.self = reversed, .mat2 = view(b), .out = view(out)}).code(),
            StatusCode::kParamInvalid);
  HostTensor v = filled(DType::kFloat32, {5}, 0, 1, 7);
  HostTensor out3 = sentinel(DType::kFloat32, {3});
  EXPECT_EQ(matmul({.self = view(v), .mat2 = view(b), .out = view(out3)}, {.transpose_self = true})
                .code(),
            StatusCode::kParamInvalid);
  HostTensor square = filled(DType::kFloat32, {4, 4}, 0, 1, 8);
  TensorView sq = view(square);
  EXPECT_EQ(matmul({.self = sq, .mat2 = sq, .out = sq}).code(), StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(out));
  EXPECT_EQ(matmul({.self = view(a), .mat2 = view(b), .out = TensorView{}}).code(),
            StatusCode::kParamNullptr);
}

TEST(Addmm, ValidationWritesNothing) {
  HostTensor m1 = filled(DType::kFloat32, {4, 5}, 0, 1, 1),
             m2 = filled(DType::kFloat32, {5, 3}, 0, 1, 2);
  HostTensor bad_self = filled(DType::kFloat32, {2}, 0, 1, 3),
             self3 = filled(DType::kFloat32, {2, 4, 3}, 0, 1, 4);
  HostTensor ok_self = filled(DType::kFloat32, {3}, 0, 1, 5);
  HostTensor out = sentinel(DType::kFloat32, {4, 3}), wrong = sentinel(DType::kFloat32, {3, 4});
  EXPECT_EQ(
      addmm({.self = view(bad_self), .mat1 = view(m1), .mat2 = view(m2), .out = view(out)}).code(),
      StatusCode::kParamInvalid);
  EXPECT_EQ(
      addmm({.self = view(self3), .mat1 = view(m1), .mat2 = view(m2), .out = view(out)}).code(),
      StatusCode::kParamInvalid);
  EXPECT_EQ(
      addmm({.self = view(ok_self), .mat1 = view(m1), .mat2 = view(m2), .out = view(wrong)}).code(),
      StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(out));
  EXPECT_TRUE(untouched(wrong));
}

// ---- aclnn ------------------------------------------------------------------------------------

namespace aclnn {

// Transposed operands as aclnn views (strides swapped): the same bits as the transposes, and no
// workspace: the operator reads them where they are.
TEST(MatmulAclnn, TransposedViewsNeedNoWorkspace) {
  for (DType d : {DType::kFloat32, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(d));
    HostTensor at = filled(d, {70, 33}, 0, 1, 91), bt = filled(d, {45, 70}, 0, 1, 92);
    const HostTensor ref =
        matmul_golden(at, bt, d, {.transpose_self = true, .transpose_mat2 = true});
    HostTensor out = sentinel(d, {33, 45});
    TensorView va = view(at), vb = view(bt);
    va.shape = {33, 70}, vb.shape = {70, 45};
    aclTensor* x = acl(va, {1, 33}, {70, 33});
    aclTensor* y = acl(vb, {1, 70}, {45, 70});
    aclTensor* o = acl(view(out));
    uint64_t size = 1;
    aclOpExecutor* e = nullptr;
    ASSERT_EQ(aclnnMatmulGetWorkspaceSize(x, y, o, 0, &size, &e), ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    EXPECT_EQ(size, 0u);
    ASSERT_EQ(aclnnMatmul(nullptr, 0, e, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    expect_same_bits(out, ref, "out");
    aclDestroyTensor(x);
    aclDestroyTensor(y);
    aclDestroyTensor(o);
  }
}

TEST(BatchMatMulAclnn, RanksOtherThanThreeAreRefused) {
  HostTensor a = filled(DType::kFloat32, {4, 5}, 0, 1, 1),
             b = filled(DType::kFloat32, {5, 3}, 0, 1, 2);
  HostTensor out = sentinel(DType::kFloat32, {4, 3});
  aclTensor* x = acl(view(a));
  aclTensor* y = acl(view(b));
  aclTensor* o = acl(view(out));
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnBatchMatMulGetWorkspaceSize(x, y, o, 0, &size, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(untouched(out));
  aclDestroyTensor(x);
  aclDestroyTensor(y);
  aclDestroyTensor(o);
}

TEST(AddmmAclnn, ScalarsAndBias) {
  HostTensor self = filled(DType::kFloat32, {37}, 0, 1, 1);
  HostTensor m1 = filled(DType::kFloat32, {20, 64}, 0, 1, 2),
             m2 = filled(DType::kFloat32, {64, 37}, 0, 1, 3);
  const HostTensor ref = addmm_golden(self, m1, m2, DType::kFloat32, {.beta = 0.5, .alpha = 2.0});
  HostTensor out = sentinel(DType::kFloat32, {20, 37});
  aclTensor* s = acl(view(self));
  aclTensor* x = acl(view(m1));
  aclTensor* y = acl(view(m2));
  aclTensor* o = acl(view(out));
  const float beta = 0.5f;
  const double alpha = 2.0;
  aclScalar* b = aclCreateScalar(const_cast<float*>(&beta), ACL_FLOAT);
  aclScalar* a = aclCreateScalar(const_cast<double*>(&alpha), ACL_DOUBLE);
  const aclnnStatus st = mt::run_two_phases(
      [&](uint64_t* size, aclOpExecutor** e) {
        return aclnnAddmmGetWorkspaceSize(s, x, y, b, a, o, 1, size, e);
      },
      [](void* w, uint64_t size, aclOpExecutor* e) { return aclnnAddmm(w, size, e, nullptr); });
  ASSERT_EQ(st, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  // cubeMathType 1 on fp32: HFLOAT32 operands, so not the KEEP_DTYPE bits.
  const HostTensor hf32 =
      addmm_golden(self, m1, m2, DType::kFloat32, {.beta = 0.5, .alpha = 2.0, .cube_math_type = 1});
  expect_same_bits(out, hf32, "out");
  EXPECT_NE(out.bytes, ref.bytes);
  aclDestroyScalar(b);
  aclDestroyScalar(a);
  for (aclTensor* t : {s, x, y, o}) aclDestroyTensor(t);
}

}  // namespace aclnn

}  // namespace

}  // namespace mantissa::testing
