// Deterministic reductions: the same bits as a plain scalar model of the normative order for
// every size, dtype, method and accumulator; the same bits on every SIMD target and thread
// count; IEEE special values; error bounds against a long double reference; the public API.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/reduce.h"
#include "mantissa/mantissa.h"
#include "reduce_support.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

using detail::ReduceArgs;
using detail::ReduceOp;
using testing::reduce_support::Data;
using testing::reduce_support::kAccumulators;
using testing::reduce_support::kMethods;
using testing::reduce_support::MakeData;
using testing::reduce_support::Model;
using testing::reduce_support::SameBits;

constexpr int kThreadCounts[] = {1, 2, 3, 7};
constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
constexpr ReduceOp kSumOps[] = {ReduceOp::kSum, ReduceOp::kDot, ReduceOp::kSumSquares,
                                ReduceOp::kL2Norm};

ReduceArgs Args(ReduceOp op, const Data& d, ReduceOptions o = {}) {
  ReduceArgs a;
  a.op = op;
  a.dtype = d.dtype;
  a.x = d.x();
  a.y = d.y();
  a.n = d.n;
  a.options = o;
  return a;
}

std::vector<int64_t> Sizes() {
  std::vector<int64_t> sizes;
  for (int64_t n = 0; n <= 100; ++n) sizes.push_back(n);
  for (const int64_t n : {127, 128, 255, 256, 257, 1000, 4095, 4096, 4097, 8191, 8193, 32767, 32768,
                          32769, 36864 + 7, 65536 + 31}) {
    sizes.push_back(n);
  }
  return sizes;
}

// The kernels give the bits of the scalar model (tests/reduce_support.h), which is written
// from the normative description in core/reduce.h and shares no code with them.
TEST(Reduce, MatchesScalarModelForEverySize) {
  for (const DType dtype : kDtypes) {
    for (const int64_t n : Sizes()) {
      const Data d = MakeData(dtype, n, /*seed=*/static_cast<uint32_t>(n) * 3u + 1u);
      for (const ReduceOp op : kSumOps) {
        for (const ReduceMethod m : kMethods) {
          for (const ReduceAccumulator acc : kAccumulators) {
            const ReduceOptions o{m, acc};
            const double want = Model(op, d, o);
            const double got = detail::reduce(Args(op, d, o));
            ASSERT_TRUE(SameBits(got, want))
                << dtype_short_name(dtype) << " n=" << n << " op=" << static_cast<int>(op)
                << " method=" << static_cast<int>(m) << " acc=" << static_cast<int>(acc) << ": "
                << got << " vs model " << want;
            ASSERT_TRUE(SameBits(detail::reduce_row(Args(op, d, o)), want));
          }
        }
      }
      for (const ReduceOp op : {ReduceOp::kMax, ReduceOp::kMaxAbs}) {
        ASSERT_TRUE(SameBits(detail::reduce(Args(op, d)), Model(op, d, {}))) << n;
        ASSERT_TRUE(SameBits(detail::reduce_row(Args(op, d)), Model(op, d, {}))) << n;
      }
    }
  }
}

// The same bits on every SIMD target and for 1, 2, 3 and 7 threads (the large sizes take the
// parallel path: more than one piece of 8 blocks).
TEST(Reduce, BitExactOnEveryTargetAndThreadCount) {
  testing::ThreadCountGuard guard;
  const int64_t sizes[] = {1, 31, 33, 4097, 70001};
  for (const DType dtype : kDtypes) {
    for (const int64_t n : sizes) {
      const Data d = MakeData(dtype, n, static_cast<uint32_t>(n) + 17u);
      std::vector<double> want;
      for (const ReduceOp op : kSumOps) {
        for (const ReduceMethod m : kMethods) {
          for (const ReduceAccumulator acc : kAccumulators) want.push_back(Model(op, d, {m, acc}));
        }
      }
      want.push_back(Model(ReduceOp::kMax, d, {}));
      want.push_back(Model(ReduceOp::kMaxAbs, d, {}));
      testing::for_each_target([&](const std::string& target) {
        for (const int threads : kThreadCounts) {
          ASSERT_TRUE(set_num_threads(threads).ok());
          size_t k = 0;
          for (const ReduceOp op : kSumOps) {
            for (const ReduceMethod m : kMethods) {
              for (const ReduceAccumulator acc : kAccumulators) {
                ASSERT_TRUE(SameBits(detail::reduce(Args(op, d, {m, acc})), want[k++]))
                    << target << " threads " << threads << " " << dtype_short_name(dtype)
                    << " n=" << n << " op=" << static_cast<int>(op)
                    << " method=" << static_cast<int>(m) << " acc=" << static_cast<int>(acc);
              }
            }
          }
          ASSERT_TRUE(SameBits(detail::reduce(Args(ReduceOp::kMax, d)), want[k++])) << target;
          ASSERT_TRUE(SameBits(detail::reduce(Args(ReduceOp::kMaxAbs, d)), want[k++])) << target;
        }
      });
    }
  }
}

// Special values, on every target: NaN anywhere gives the positive quiet NaN, infinities
// propagate (also through the compensated methods), -0 sums stay -0, fp32 overflow gives inf.
TEST(Reduce, SpecialValuesOnEveryTarget) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const double qnan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    const char* name;
    std::vector<float> values;  // repeated cyclically over n elements, with `at` overriding
    int64_t n;
    std::vector<std::pair<int64_t, float>> at;
    double sum32, sum64, max, max_abs;
  };
  const std::vector<Case> cases{
      {"nan", {1.0f}, 5000, {{4321, -nan}}, qnan, qnan, qnan, qnan},
      {"nan in tail", {1.0f}, 37, {{36, nan}}, qnan, qnan, qnan, qnan},
      {"+inf", {1.0f}, 9000, {{8999, inf}}, inf, inf, inf, inf},
      {"-inf", {2.0f}, 40, {{0, -inf}}, -inf, -inf, 2.0, inf},
      {"inf - inf", {1.0f}, 70001, {{5, inf}, {69000, -inf}}, qnan, qnan, inf, inf},
      {"all -0", {-0.0f}, 4099, {}, -0.0, -0.0, -0.0, 0.0},
      {"+0 and -0", {-0.0f, 0.0f}, 100, {}, 0.0, 0.0, -0.0, 0.0},
      {"overflow", {3e38f}, 64, {}, inf, 64 * double{3e38f}, 3e38f, 3e38f},
  };
  for (const auto& c : cases) {
    std::vector<float> x(static_cast<size_t>(c.n));
    for (int64_t i = 0; i < c.n; ++i) x[i] = c.values[i % c.values.size()];
    for (const auto& [i, v] : c.at) x[i] = v;
    testing::for_each_target([&](const std::string& target) {
      SCOPED_TRACE(std::string(c.name) + " on " + target);
      for (const ReduceMethod m : kMethods) {
        ReduceArgs a;
        a.x = x.data();
        a.n = c.n;
        a.options = {m, ReduceAccumulator::kFloat32};
        EXPECT_TRUE(SameBits(detail::reduce(a), c.sum32)) << static_cast<int>(m);
        a.options.accumulator = ReduceAccumulator::kFloat64;
        EXPECT_TRUE(SameBits(detail::reduce(a), c.sum64)) << static_cast<int>(m);
      }
      ReduceArgs a;
      a.x = x.data();
      a.n = c.n;
      a.op = ReduceOp::kMax;
      EXPECT_TRUE(SameBits(detail::reduce(a), c.max)) << detail::reduce(a);
      a.op = ReduceOp::kMaxAbs;
      EXPECT_TRUE(SameBits(detail::reduce(a), c.max_abs)) << detail::reduce(a);
    });
  }
}

TEST(Reduce, EmptyRange) {
  for (const ReduceOp op : kSumOps) {
    ReduceArgs a;
    a.op = op;
    EXPECT_TRUE(SameBits(detail::reduce(a), 0.0));
  }
  ReduceArgs a;
  a.op = ReduceOp::kMax;
  EXPECT_EQ(detail::reduce(a), -std::numeric_limits<double>::infinity());
  a.op = ReduceOp::kMaxAbs;
  EXPECT_TRUE(SameBits(detail::reduce(a), 0.0));
}

// The tree of the pairwise method, written out: the merge records its operands, so any other
// grouping (a left fold, say) gives a different string.
std::string Merged(const std::string& a, const std::string& b) { return "(" + a + " " + b + ")"; }

// The tree by its definition (docs/reductions.md): over k > 1 items the left subtree covers the
// first p, p the largest power of two below k.
std::string TreeOf(const std::vector<std::string>& items, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) return items[lo];
  std::size_t p = 1;
  while (2 * p < hi - lo) p *= 2;
  return Merged(TreeOf(items, lo, lo + p), TreeOf(items, lo + p, hi));
}

TEST(Reduce, PairwiseStackBuildsThePairwiseTree) {
  detail::PairwiseStack<std::string> stack;
  for (int k = 0; k < 7; ++k) stack.push(std::to_string(k), Merged);
  EXPECT_EQ(stack.collapse(Merged), "(((0 1) (2 3)) ((4 5) 6))");
  for (int count = 1; count <= 70; ++count) {
    detail::PairwiseStack<std::string> s;
    std::vector<std::string> items;
    for (int k = 0; k < count; ++k) {
      items.push_back(std::to_string(k));
      s.push(items.back(), Merged);
    }
    EXPECT_EQ(s.collapse(Merged), TreeOf(items, 0, items.size())) << "count " << count;
  }
}

// Trees built in lockstep (a tile of rows summing its blocks) are each the tree of its own
// items, for every count of pushes up to 70 and every width.
TEST(Reduce, LockstepStacksBuildEachColumnsPairwiseTree) {
  constexpr int kWidth = 4;
  for (int width = 1; width <= kWidth; ++width) {
    for (int count = 1; count <= 70; ++count) {
      detail::LockstepPairwiseStacks<std::string, kWidth, 8> lockstep;
      std::vector<std::vector<std::string>> columns(width);
      for (int k = 0; k < count; ++k) {
        std::string items[kWidth];
        for (int j = 0; j < width; ++j) {
          items[j] = std::to_string(k) + "." + std::to_string(j);
          columns[j].push_back(items[j]);
        }
        lockstep.push(items, width, Merged);
      }
      std::string got[kWidth];
      lockstep.collapse(got, width, Merged);
      for (int j = 0; j < width; ++j) {
        EXPECT_EQ(got[j], TreeOf(columns[j], 0, columns[j].size()))
            << "width " << width << " count " << count;
      }
    }
  }
}

// Error bounds (see docs/reductions.md), asserted on 1M-element ill-conditioned data for every
// method and accumulator; the 16M-element runs are in test_reduce_accuracy_exhaustive.cc.
TEST(Reduce, ErrorWithinDerivedBounds) {
  testing::reduce_support::CheckErrorBounds(int64_t{1} << 20, /*print_table=*/false);
}

// ---------------------------------------------------------------------------------------------
// Public API

TEST(ReduceApi, Values) {
  const float x[] = {1.0f, 2.0f, 3.0f, -4.0f};
  const float y[] = {0.5f, 0.25f, 2.0f, 1.0f};
  const TensorView xv(const_cast<float*>(x), DType::kFloat32, {4});
  const TensorView yv(const_cast<float*>(y), DType::kFloat32, {2, 2});
  const TensorView yv4(const_cast<float*>(y), DType::kFloat32, {4});
  double r = 0;
  ASSERT_TRUE(sum(xv, &r).ok());
  EXPECT_EQ(r, 2.0);
  ASSERT_TRUE(dot(xv, yv4, &r, {ReduceMethod::kPairwise, ReduceAccumulator::kFloat64}).ok());
  EXPECT_EQ(r, 0.5 + 0.5 + 6.0 - 4.0);
  EXPECT_EQ(dot(xv, yv, &r).code(), StatusCode::kParamInvalid);  // shapes differ
  ASSERT_TRUE(l2_norm(xv, &r).ok());
  EXPECT_EQ(r, static_cast<double>(std::sqrt(30.0f)));
  ASSERT_TRUE(max_abs(xv, &r).ok());
  EXPECT_EQ(r, 4.0);

  const uint16_t h[] = {float_to_fp16_bits(3.0f), float_to_fp16_bits(4.0f)};
  const TensorView hv(const_cast<uint16_t*>(h), DType::kFloat16, {2});
  ASSERT_TRUE(l2_norm(hv, &r, {ReduceMethod::kKahan, ReduceAccumulator::kFloat64}).ok());
  EXPECT_EQ(r, 5.0);
  const float s = 7.5f;
  ASSERT_TRUE(sum(TensorView(const_cast<float*>(&s), DType::kFloat32, {}), &r).ok());
  EXPECT_EQ(r, 7.5);
  ASSERT_TRUE(sum(TensorView(nullptr, DType::kBFloat16, {3, 0}), &r).ok());
  EXPECT_TRUE(SameBits(r, 0.0));
  ASSERT_TRUE(max_abs(TensorView(nullptr, DType::kFloat32, {0}), &r).ok());
  EXPECT_TRUE(SameBits(r, 0.0));
}

TEST(ReduceApi, ValidationNamesOperatorAndArgument) {
  float x[6] = {};
  const TensorView xv(x, DType::kFloat32, {6});
  double r = 0;
  Status st = sum(TensorView(nullptr, DType::kFloat32, {2}), &r);
  EXPECT_EQ(st.code(), StatusCode::kParamNullptr);
  EXPECT_NE(st.message().find("Sum: x"), std::string::npos) << st.message();
  st = l2_norm(xv, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kParamNullptr);
  EXPECT_NE(st.message().find("L2Norm: result"), std::string::npos) << st.message();
  st = max_abs(TensorView(x, DType::kInt32, {6}), &r);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("MaxAbs: x dtype INT32"), std::string::npos) << st.message();
  const int64_t shape[] = {3, 2};
  const int64_t strides[] = {1, 3};
  st = sum(TensorView(x, DType::kFloat32, shape, strides), &r);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  st = dot(xv, TensorView(x, DType::kFloat16, {6}), &r);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("Dot: y dtype FLOAT16"), std::string::npos) << st.message();
  st = dot(xv, TensorView(x, DType::kFloat32, {5}), &r);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  st = dot(xv, TensorView(nullptr, DType::kFloat32, {6}), &r);
  EXPECT_EQ(st.code(), StatusCode::kParamNullptr);
  EXPECT_NE(st.message().find("Dot: y"), std::string::npos) << st.message();
  st = sum(xv, &r, {static_cast<ReduceMethod>(4), ReduceAccumulator::kFloat32});
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("options.method 4"), std::string::npos) << st.message();
  st = sum(xv, &r, {ReduceMethod::kNaive, static_cast<ReduceAccumulator>(-1)});
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  const std::vector<int64_t> nine(9, 1);
  EXPECT_EQ(sum(TensorView(x, DType::kFloat32, nine), &r).code(), StatusCode::kParamInvalid);
}

}  // namespace

}  // namespace mantissa::testing
