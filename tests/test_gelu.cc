// Gelu: bitwise against the kit's golden32 on every SIMD target and thread count (sizes around
// the vector widths and the parallel grain, in place), every fp16 and bf16 input and a sweep of
// fp32 inputs within 1 ulp of an independent long-double evaluation, the special values, the
// validation rows through the C++ API and aclnn (nothing written), and strided tensors through
// aclnn.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu.h"
#include "mantissa/ops/gelu.h"
#include "op_support.h"
#include "precision/fp.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::GeluOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::sentinel;
using mt::untouched;
using mt::view;

constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// GELU's tanh form in long double, written independently of the kernel: 0.5 x (1 + tanh(u)) as
// x / (1 + exp(-2u)) (the tanh form cancels in the negative tail).
long double reference(long double x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0L;
  const long double k = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
  const long double u = k * (x + 0.044715L * x * x * x);
  return x / (1.0L + std::exp(-2.0L * u));
}

// aclnnGelu's second phase on the default stream.
aclnnStatus phase_two(void* workspace, uint64_t size, aclOpExecutor* executor) {
  return aclnnGelu(workspace, size, executor, nullptr);
}

HostTensor golden32(HostTensor& self) {
  HostTensor out = sentinel(self.dtype, self.shape);
  mt::apply_golden32<GeluOp>({.self = view(self), .out = view(out)}, {});
  return out;
}

TEST(Gelu, BitExactOnEveryTargetAndThreadCount) {
  for (DType d : kDtypes) {
    // Around the vector widths (4-16 fp64 lanes, 4 vectors a step) and the parallel grain.
    for (int64_t n : {0, 1, 3, 4, 15, 16, 17, 63, 64, 65, 1000, 32768, 70001}) {
      for (double spread : {1.0, 6.0}) {
        SCOPED_TRACE(std::string(mantissa::dtype_name(d)) + " n " + std::to_string(n) + " spread " +
                     std::to_string(spread));
        HostTensor x = filled(d, {n}, 0.0, spread, static_cast<uint32_t>(n + 7));
        const HostTensor ref = golden32(x);
        mt::for_each_target_and_thread_count([&](const std::string&, int) {
          HostTensor y = sentinel(d, {n});
          ASSERT_TRUE(mantissa::gelu({.self = view(x), .out = view(y)}).ok());
          expect_same_bits(y, ref, "out");
          HostTensor in_place = x;  // out is self's buffer
          ASSERT_TRUE(mantissa::gelu({.self = view(in_place), .out = view(in_place)}).ok());
          expect_same_bits(in_place, ref, "out (in place)");
        });
      }
    }
  }
}

TEST(Gelu, SpecialValues) {
  for (DType d : kDtypes) {
    SCOPED_TRACE(mantissa::dtype_name(d));
    const std::vector<uint32_t> bits = mt::special_bits(d);
    HostTensor x(d, {static_cast<int64_t>(bits.size())});
    for (std::size_t i = 0; i < bits.size(); ++i) x.set_bits(static_cast<int64_t>(i), bits[i]);
    const HostTensor ref = golden32(x);
    mt::for_each_target_and_thread_count([&](const std::string&, int) {
      HostTensor y = sentinel(d, x.shape);
      ASSERT_TRUE(mantissa::gelu({.self = view(x), .out = view(y)}).ok());
      expect_same_bits(y, ref, "out");
    });
    // The limits and signs: gelu(+-0) = +-0, gelu(+inf) = +inf, gelu(-inf) = -0, NaN canonical.
    const uint32_t sign = d == DType::kFloat32 ? 0x80000000u : 0x8000u;
    for (std::size_t i = 0; i < bits.size(); ++i) {
      const double v = mantissa::precision::decode_bits(bits[i], d);
      const uint32_t got = ref.bits(static_cast<int64_t>(i));
      if (std::isnan(v)) {
        EXPECT_EQ(got, mantissa::precision::round_to_bits(std::nan(""), d));
      } else if (v == 0.0 || std::isinf(v)) {
        EXPECT_EQ(got, v > 0 ? bits[i] : (v < 0 ? sign : bits[i])) << v;
      }
    }
  }
}

// Every fp16 and bf16 input: golden32 (the kernel's bits, checked above) within 1 ulp of the
// long-double value rounded to the dtype; fp32 over a sweep of 2^20 bit patterns spread over the
// whole range, within 1 ulp of the long-double value.
TEST(Gelu, WithinOneUlpOfTheLongDoubleValue) {
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(mantissa::dtype_name(d));
    HostTensor x(d, {65536});
    for (int64_t i = 0; i < 65536; ++i) x.set_bits(i, static_cast<uint32_t>(i));
    const HostTensor y = golden32(x);
    int worst = 0;
    for (int64_t i = 0; i < 65536; ++i) {
      const double v = mantissa::precision::decode_bits(static_cast<uint32_t>(i), d);
      if (std::isnan(v)) continue;
      const uint32_t want =
          mantissa::precision::round_to_bits(static_cast<double>(reference(v)), d);
      // Ulps between two patterns of the same sign (or +-0 and the smallest values).
      const auto ordered = [&](uint32_t b) {
        const int32_t mag = static_cast<int32_t>(b & 0x7FFFu);
        return (b & 0x8000u) ? -mag : mag;
      };
      const int ulps = std::abs(ordered(y.bits(i)) - ordered(want));
      worst = std::max(worst, ulps);
      ASSERT_LE(ulps, 1) << "x " << v << " got " << y.bits(i) << " want " << want;
    }
    RecordProperty(std::string("max_ulp_") + mantissa::dtype_name(d), worst);
  }
  HostTensor x(DType::kFloat32, {1 << 20});
  for (int64_t i = 0; i < (1 << 20); ++i) {
    x.set_bits(i, static_cast<uint32_t>(i) * 4096u + 1234u);
  }
  const HostTensor y = golden32(x);
  double worst = 0;
  for (int64_t i = 0; i < (1 << 20); ++i) {
    const float v = std::bit_cast<float>(x.bits(i));
    if (std::isnan(v)) continue;
    const long double want = reference(v);
    const float got = std::bit_cast<float>(y.bits(i));
    if (std::isinf(want)) {
      EXPECT_EQ(got, static_cast<float>(want));
      continue;
    }
    // One ulp of fp32 at the reference (subnormal results: the subnormal spacing).
    const long double ulp =
        std::ldexp(1.0L, std::max(std::ilogb(static_cast<float>(want)), -126) - 23);
    const double err = static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
    worst = std::max(worst, err);
    ASSERT_LE(err, 1.0) << "x " << v << " got " << got << " want " << static_cast<double>(want);
  }
  RecordProperty("max_ulp_fp32_sweep", std::to_string(worst));
  EXPECT_LE(worst, 0.501);  // fp64 steps rounded once: correctly rounded but for ties' margins
}

TEST(Gelu, ValidationWritesNothing) {
  HostTensor x = filled(DType::kFloat32, {4, 5}, 0.0, 1.0, 1);
  HostTensor x16 = filled(DType::kFloat16, {4, 5}, 0.0, 1.0, 1);
  HostTensor xi(DType::kInt32, {4, 5});
  HostTensor rank9(DType::kFloat32, {1, 1, 1, 1, 1, 1, 1, 1, 2});
  struct Row {
    std::string what;
    HostTensor* self;
    DType out_dtype;
    std::vector<int64_t> out_shape;
  };
  const std::vector<Row> rows{{"out dtype differs", &x, DType::kFloat16, {4, 5}},
                              {"out shape differs", &x, DType::kFloat32, {5, 4}},
                              {"self INT32", &xi, DType::kInt32, {4, 5}},
                              {"self rank 9", &rank9, DType::kFloat32, rank9.shape},
                              {"fp16 self, fp32 out", &x16, DType::kFloat32, {4, 5}}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    HostTensor y = sentinel(r.out_dtype, r.out_shape);
    const mantissa::Status s = mantissa::gelu({.self = view(*r.self), .out = view(y)});
    EXPECT_EQ(s.code(), StatusCode::kParamInvalid);
    EXPECT_NE(s.message().find("Gelu"), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(y));
    // The same through aclnn: 161002, nothing written.
    aclTensor* as = acl(view(*r.self));
    aclTensor* ao = acl(view(y));
    const aclnnStatus st = mt::run_two_phases(
        [&](uint64_t* size, aclOpExecutor** e) {
          return aclnnGeluGetWorkspaceSize(as, ao, size, e);
        },
        phase_two);
    EXPECT_EQ(st, ACLNN_ERR_PARAM_INVALID) << aclGetRecentErrMsg();
    EXPECT_TRUE(untouched(y));
    aclDestroyTensor(as);
    aclDestroyTensor(ao);
  }
  // out overlapping self without being it.
  HostTensor big = filled(DType::kFloat32, {21}, 0.0, 1.0, 3);
  TensorView self = view(big), out = view(big);
  self.shape[0] = out.shape[0] = 20;
  out.data = static_cast<float*>(out.data) + 1;
  EXPECT_EQ(mantissa::gelu({.self = self, .out = out}).code(), StatusCode::kParamInvalid);
  // Null handles: 161001.
  HostTensor y = sentinel(DType::kFloat32, {4, 5});
  aclTensor* ao = acl(view(y));
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnGeluGetWorkspaceSize(nullptr, ao, &size, &e), ACLNN_ERR_PARAM_NULLPTR);
  aclTensor* ax = acl(view(x));
  EXPECT_EQ(aclnnGeluGetWorkspaceSize(ax, nullptr, &size, &e), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(untouched(y));
  aclDestroyTensor(ao);
  aclDestroyTensor(ax);
}

// A transposed self and out through aclnn: staged through the workspace, the same bits as the
// contiguous call.
TEST(Gelu, StridedThroughAclnn) {
  constexpr int64_t kRows = 37, kCols = 19;
  for (DType d : kDtypes) {
    SCOPED_TRACE(mantissa::dtype_name(d));
    HostTensor x = filled(d, {kRows, kCols}, 0.0, 3.0, 5);
    const HostTensor ref = golden32(x);
    // xt holds x transposed: element (i, j) of the [kRows, kCols] view at j * kRows + i.
    HostTensor xt(d, {kCols, kRows}), yt = sentinel(d, {kCols, kRows});
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kCols; ++j) xt.set_bits(j * kRows + i, x.bits(i * kCols + j));
    }
    TensorView xv = view(x), yv = view(x);
    xv.data = xt.data();
    yv.data = yt.data();
    aclTensor* ax = acl(xv, {1, kRows}, {kCols, kRows});
    aclTensor* ay = acl(yv, {1, kRows}, {kCols, kRows});
    uint64_t size = 0;
    ASSERT_EQ(mt::run_two_phases(
                  [&](uint64_t* s, aclOpExecutor** e) {
                    const aclnnStatus st = aclnnGeluGetWorkspaceSize(ax, ay, s, e);
                    size = *s;
                    return st;
                  },
                  phase_two),
              ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    EXPECT_GT(size, 0u);
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kCols; ++j) {
        EXPECT_EQ(yt.bits(j * kRows + i), ref.bits(i * kCols + j)) << i << " " << j;
      }
    }
    aclDestroyTensor(ax);
    aclDestroyTensor(ay);
  }
}

}  // namespace

}  // namespace mantissa::testing
