// GeluV2, GeluBackward and GeluBackwardV2: bitwise against the kit's golden32 on every SIMD target
// and thread count (sizes around the vector widths and the parallel grain, in place), GeluV2 tanh
// equal to Gelu bit for bit, accuracy against independent long-double evaluations (every fp16 and
// bf16 input, a 2^20 sweep of fp32 and a dense sweep where the derivative changes sign), special
// values and limits, broadcasting and mixed dtypes, the validation rows through the C++ API and
// aclnn (nothing written), and strided tensors through aclnn.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu_backward.h"
#include "aclnnop/aclnn_gelu_backward_v2.h"
#include "aclnnop/aclnn_gelu_v2.h"
#include "mantissa/ops/gelu.h"
#include "op_support.h"
#include "precision/fp.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::GeluApproximate;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::GeluBackwardOp;
using mantissa::detail::GeluBackwardV2Op;
using mantissa::detail::GeluOp;
using mantissa::detail::GeluV2Op;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
namespace mp = mantissa::precision;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::sentinel;
using mt::untouched;
using mt::view;

constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
constexpr long double kPi = 3.14159265358979323846264338327950288L;

// ---- Independent long-double references ------------------------------------------------------

long double gelu_erf_ref(long double x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0L;
  return 0.5L * x * std::erfc(-x / std::sqrt(2.0L));
}

// The tanh form's derivative: d/dx [0.5 x (1 + tanh(u))].
long double gelu_grad_tanh_ref(long double x) {
  if (std::isinf(x)) return x > 0 ? 1.0L : 0.0L;
  const long double k = std::sqrt(2.0L / kPi);
  const long double u = k * (x + 0.044715L * x * x * x);
  const long double du = k * (1.0L + 0.134145L * x * x);
  const long double c = std::cosh(u);
  return 1.0L / (1.0L + std::exp(-2.0L * u)) + 0.5L * x * du / (c * c);
}

long double gelu_grad_erf_ref(long double x) {
  if (std::isinf(x)) return x > 0 ? 1.0L : 0.0L;
  return 0.5L * std::erfc(-x / std::sqrt(2.0L)) +
         x * std::exp(-0.5L * x * x) / std::sqrt(2.0L * kPi);
}

// Ulps between two 16-bit patterns (sign-magnitude ordered).
int ulps16(uint32_t a, uint32_t b) {
  const auto ordered = [](uint32_t v) {
    const int32_t mag = static_cast<int32_t>(v & 0x7FFFu);
    return (v & 0x8000u) ? -mag : mag;
  };
  return std::abs(ordered(a) - ordered(b));
}

// |got - want| in ulps of fp32 at want (the subnormal spacing below FLT_MIN).
double ulps32(float got, long double want) {
  if (std::isinf(want)) return static_cast<long double>(got) == want ? 0.0 : 1e30;
  const long double ulp =
      std::ldexp(1.0L, std::max(std::ilogb(static_cast<float>(want)), -126) - 23);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
}

// ---- Calls -------------------------------------------------------------------------------------

HostTensor v2_golden32(HostTensor& x, GeluApproximate a) {
  HostTensor y = sentinel(x.dtype, x.shape);
  mt::apply_golden32<GeluV2Op>({.x = view(x), .y = view(y)}, {.approximate = a});
  return y;
}

// The backward golden32 in the promoted dtype and broadcast shape (form: nullopt for
// GeluBackward, else GeluBackwardV2's approximate).
HostTensor backward_golden32(HostTensor& dy, HostTensor& x, std::optional<GeluApproximate> form,
                             DType dtype, std::vector<int64_t> shape) {
  HostTensor out = sentinel(dtype, shape);
  if (form) {
    mt::apply_golden32<GeluBackwardV2Op>(
        {.grad_output = view(dy), .self = view(x), .grad_input = view(out)},
        {.approximate = *form});
  } else {
    mt::apply_golden32<GeluBackwardOp>(
        {.grad_output = view(dy), .self = view(x), .grad_input = view(out)}, {});
  }
  return out;
}

mantissa::Status run_backward(HostTensor& dy, HostTensor& x, HostTensor& out,
                              std::optional<GeluApproximate> form) {
  if (form) {
    return mantissa::gelu_backward_v2(
        {.grad_output = view(dy), .self = view(x), .grad_input = view(out)},
        {.approximate = *form});
  }
  return mantissa::gelu_backward(
      {.grad_output = view(dy), .self = view(x), .grad_input = view(out)});
}

const std::vector<std::optional<GeluApproximate>> kBackwardForms{
    std::nullopt, GeluApproximate::kNone, GeluApproximate::kTanh};

std::string form_name(std::optional<GeluApproximate> f) {
  if (!f) return "GeluBackward";
  return *f == GeluApproximate::kTanh ? "GeluBackwardV2 tanh" : "GeluBackwardV2 none";
}

// ---- GeluV2
// --------------------------------------------------------------------------------------

TEST(GeluV2, BitExactOnEveryTargetAndThreadCount) {
  for (GeluApproximate a : {GeluApproximate::kNone, GeluApproximate::kTanh}) {
    for (DType d : kDtypes) {
      for (int64_t n : {0, 1, 3, 4, 15, 16, 17, 63, 64, 65, 1000, 32768, 70001}) {
        SCOPED_TRACE(std::string(mantissa::dtype_name(d)) + " n " + std::to_string(n) +
                     (a == GeluApproximate::kTanh ? " tanh" : " none"));
        HostTensor x = filled(d, {n}, 0.0, 4.0, static_cast<uint32_t>(n + 11));
        const HostTensor ref = v2_golden32(x, a);
        mt::for_each_target_and_thread_count([&](const std::string&, int) {
          HostTensor y = sentinel(d, {n});
          ASSERT_TRUE(mantissa::gelu_v2({.x = view(x), .y = view(y)}, {.approximate = a}).ok());
          expect_same_bits(y, ref, "y");
          HostTensor in_place = x;
          ASSERT_TRUE(
              mantissa::gelu_v2({.x = view(in_place), .y = view(in_place)}, {.approximate = a})
                  .ok());
          expect_same_bits(in_place, ref, "y (in place)");
        });
      }
    }
  }
}

// Every fp16 and bf16 bit pattern (the kernels read 16-bit inputs' values from tables computed
// by each target's own steps) in both forms, forward and backward, against golden32.
TEST(GeluV2, EverySixteenBitPatternOnEveryTarget) {
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    HostTensor x(d, {65536});
    for (int64_t i = 0; i < 65536; ++i) x.set_bits(i, static_cast<uint32_t>(i));
    HostTensor dy = filled(d, {65536}, 0.0, 2.0, 5);
    for (GeluApproximate a : {GeluApproximate::kNone, GeluApproximate::kTanh}) {
      SCOPED_TRACE(std::string(mantissa::dtype_name(d)) +
                   (a == GeluApproximate::kTanh ? " tanh" : " none"));
      const HostTensor ref = v2_golden32(x, a);
      const HostTensor gref = backward_golden32(dy, x, a, d, {65536});
      mt::for_each_target_and_thread_count([&](const std::string&, int) {
        HostTensor y = sentinel(d, {65536});
        ASSERT_TRUE(mantissa::gelu_v2({.x = view(x), .y = view(y)}, {.approximate = a}).ok());
        expect_same_bits(y, ref, "y");
        HostTensor g = sentinel(d, {65536});
        ASSERT_TRUE(mantissa::gelu_backward_v2(
                        {.grad_output = view(dy), .self = view(x), .grad_input = view(g)},
                        {.approximate = a})
                        .ok());
        expect_same_bits(g, gref, "grad_input");
      });
    }
  }
}

// approximate tanh is Gelu's function and bits; a value other than 0 and 1 means none (upstream).
TEST(GeluV2, TanhIsGeluAndOtherValuesMeanNone) {
  for (DType d : kDtypes) {
    HostTensor x = filled(d, {5000}, 0.0, 5.0, 3);
    HostTensor a = sentinel(d, x.shape), b = sentinel(d, x.shape), c = sentinel(d, x.shape),
               e = sentinel(d, x.shape);
    ASSERT_TRUE(mantissa::gelu({.self = view(x), .out = view(a)}).ok());
    ASSERT_TRUE(
        mantissa::gelu_v2({.x = view(x), .y = view(b)}, {.approximate = GeluApproximate::kTanh})
            .ok());
    expect_same_bits(b, a, "GeluV2 tanh against Gelu");
    ASSERT_TRUE(mantissa::gelu_v2({.x = view(x), .y = view(c)}, {}).ok());
    ASSERT_TRUE(mantissa::gelu_v2({.x = view(x), .y = view(e)},
                                  {.approximate = static_cast<GeluApproximate>(7)})
                    .ok());
    expect_same_bits(e, c, "approximate 7 against none");
  }
}

TEST(GeluV2, ErfFormWithinOneUlpOfTheLongDoubleValue) {
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(mantissa::dtype_name(d));
    HostTensor x(d, {65536});
    for (int64_t i = 0; i < 65536; ++i) x.set_bits(i, static_cast<uint32_t>(i));
    const HostTensor y = v2_golden32(x, GeluApproximate::kNone);
    int worst = 0;
    for (int64_t i = 0; i < 65536; ++i) {
      const double v = mp::decode_bits(static_cast<uint32_t>(i), d);
      if (std::isnan(v)) continue;
      const uint32_t want = mp::round_to_bits(static_cast<double>(gelu_erf_ref(v)), d);
      const int u = ulps16(y.bits(i), want);
      worst = std::max(worst, u);
      ASSERT_LE(u, 1) << "x " << v;
    }
    RecordProperty(std::string("max_ulp_") + mantissa::dtype_name(d), worst);
  }
  HostTensor x(DType::kFloat32, {1 << 20});
  for (int64_t i = 0; i < (1 << 20); ++i) x.set_bits(i, static_cast<uint32_t>(i) * 4096u + 1234u);
  const HostTensor y = v2_golden32(x, GeluApproximate::kNone);
  double worst = 0;
  for (int64_t i = 0; i < (1 << 20); ++i) {
    const float v = std::bit_cast<float>(x.bits(i));
    if (std::isnan(v)) continue;
    const double err = ulps32(std::bit_cast<float>(y.bits(i)), gelu_erf_ref(v));
    worst = std::max(worst, err);
    ASSERT_LE(err, 1.0) << "x " << v;
  }
  RecordProperty("max_ulp_fp32_sweep", std::to_string(worst));
  EXPECT_LE(worst, 0.501);
}

TEST(GeluV2, SpecialValues) {
  for (DType d : kDtypes) {
    SCOPED_TRACE(mantissa::dtype_name(d));
    const std::vector<uint32_t> bits = mt::special_bits(d);
    HostTensor x(d, {static_cast<int64_t>(bits.size())});
    for (std::size_t i = 0; i < bits.size(); ++i) x.set_bits(static_cast<int64_t>(i), bits[i]);
    const HostTensor ref = v2_golden32(x, GeluApproximate::kNone);
    mt::for_each_target_and_thread_count([&](const std::string&, int) {
      HostTensor y = sentinel(d, x.shape);
      ASSERT_TRUE(mantissa::gelu_v2({.x = view(x), .y = view(y)}).ok());
      expect_same_bits(y, ref, "y");
    });
    const uint32_t sign = d == DType::kFloat32 ? 0x80000000u : 0x8000u;
    for (std::size_t i = 0; i < bits.size(); ++i) {
      const double v = mp::decode_bits(bits[i], d);
      const uint32_t got = ref.bits(static_cast<int64_t>(i));
      if (std::isnan(v)) {
        EXPECT_EQ(got, mp::round_to_bits(std::nan(""), d));
      } else if (v == 0.0 || std::isinf(v)) {  // +-0 -> +-0, +inf -> +inf, -inf -> -0
        EXPECT_EQ(got, v > 0 ? bits[i] : (v < 0 ? sign : bits[i])) << v;
      }
    }
  }
}

// ---- GeluBackward, GeluBackwardV2
// ----------------------------------------------------------------

TEST(GeluBackward, BitExactOnEveryTargetAndThreadCount) {
  for (const auto& form : kBackwardForms) {
    for (DType d : kDtypes) {
      for (int64_t n : {0, 1, 3, 4, 15, 16, 17, 64, 65, 1000, 32768, 70001}) {
        SCOPED_TRACE(form_name(form) + " " + mantissa::dtype_name(d) + " n " + std::to_string(n));
        HostTensor x = filled(d, {n}, 0.0, 4.0, static_cast<uint32_t>(n + 5));
        HostTensor dy = filled(d, {n}, 0.0, 2.0, static_cast<uint32_t>(n + 6));
        const HostTensor ref = backward_golden32(dy, x, form, d, {n});
        mt::for_each_target_and_thread_count([&](const std::string&, int) {
          HostTensor out = sentinel(d, {n});
          ASSERT_TRUE(run_backward(dy, x, out, form).ok());
          expect_same_bits(out, ref, "grad_input");
          HostTensor in_place = dy;  // grad_input is grad_output's buffer
          ASSERT_TRUE(run_backward(in_place, x, in_place, form).ok());
          expect_same_bits(in_place, ref, "grad_input (in place)");
        });
      }
    }
  }
}

// g(x) (dy = 1) within a few fp32 ulp of the long-double derivative over a 2^20 sweep and densely
// around its zero near x = -0.75; every fp16 and bf16 input within 1 ulp of the rounded value.
TEST(GeluBackward, WithinAFewUlpOfTheLongDoubleDerivative) {
  for (bool erf : {false, true}) {
    SCOPED_TRACE(erf ? "erf form" : "tanh form");
    const auto ref = erf ? gelu_grad_erf_ref : gelu_grad_tanh_ref;
    const auto form = erf ? GeluApproximate::kNone : GeluApproximate::kTanh;
    for (DType d : {DType::kFloat16, DType::kBFloat16}) {
      HostTensor x(d, {65536});
      HostTensor dy(d, {65536});
      const uint32_t one = d == DType::kFloat16 ? 0x3C00u : 0x3F80u;
      for (int64_t i = 0; i < 65536; ++i) {
        x.set_bits(i, static_cast<uint32_t>(i));
        dy.set_bits(i, one);
      }
      const HostTensor g = backward_golden32(dy, x, form, d, {65536});
      int worst = 0;
      for (int64_t i = 0; i < 65536; ++i) {
        const double v = mp::decode_bits(static_cast<uint32_t>(i), d);
        if (std::isnan(v)) continue;
        const int u = ulps16(g.bits(i), mp::round_to_bits(static_cast<double>(ref(v)), d));
        worst = std::max(worst, u);
        ASSERT_LE(u, 1) << mantissa::dtype_name(d) << " x " << v;
      }
      RecordProperty(std::string(erf ? "erf_" : "tanh_") + "max_ulp_" + mantissa::dtype_name(d),
                     worst);
    }
    // fp32: a sweep over the whole range and 2^16 consecutive patterns on each side of the zero.
    std::vector<uint32_t> patterns;
    for (uint32_t i = 0; i < (1u << 20); ++i) patterns.push_back(i * 4096u + 1234u);
    const float zero_at = erf ? -0.75179152f : -0.75246142f;  // the derivative's zero
    const uint32_t zb = std::bit_cast<uint32_t>(zero_at);
    for (uint32_t i = 0; i < (1u << 16); ++i) {
      patterns.push_back(zb - (1u << 15) + i);
    }
    const auto n = static_cast<int64_t>(patterns.size());
    HostTensor x(DType::kFloat32, {n}), dy(DType::kFloat32, {n});
    for (int64_t i = 0; i < n; ++i) {
      x.set_bits(i, patterns[static_cast<std::size_t>(i)]);
      dy.set_bits(i, 0x3F800000u);
    }
    const HostTensor g = backward_golden32(dy, x, form, DType::kFloat32, {n});
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float v = std::bit_cast<float>(x.bits(i));
      if (std::isnan(v)) continue;
      const double err = ulps32(std::bit_cast<float>(g.bits(i)), ref(v));
      worst = std::max(worst, err);
      ASSERT_LE(err, 2.0) << "x " << v;
    }
    RecordProperty(std::string(erf ? "erf_" : "tanh_") + "max_ulp_fp32", std::to_string(worst));
  }
}

TEST(GeluBackward, SpecialValuesAndLimits) {
  for (const auto& form : kBackwardForms) {
    for (DType d : kDtypes) {
      SCOPED_TRACE(form_name(form) + " " + mantissa::dtype_name(d));
      const std::vector<uint32_t> bits = mt::special_bits(d);
      const auto n = static_cast<int64_t>(bits.size());
      HostTensor x(d, {n});
      HostTensor dy = filled(d, {n}, 1.0, 0.5, 9);
      for (int64_t i = 0; i < n; ++i) x.set_bits(i, bits[static_cast<std::size_t>(i)]);
      const HostTensor ref = backward_golden32(dy, x, form, d, {n});
      mt::for_each_target_and_thread_count([&](const std::string&, int) {
        HostTensor out = sentinel(d, {n});
        ASSERT_TRUE(run_backward(dy, x, out, form).ok());
        expect_same_bits(out, ref, "grad_input");
      });
      // g(+inf) = 1 (grad_input = dy), g(-inf) = 0, NaN canonical.
      for (int64_t i = 0; i < n; ++i) {
        const double v = mp::decode_bits(bits[static_cast<std::size_t>(i)], d);
        if (std::isnan(v)) {
          EXPECT_EQ(ref.bits(i), mp::round_to_bits(std::nan(""), d));
        } else if (std::isinf(v)) {
          EXPECT_EQ(mp::decode_bits(ref.bits(i), d), v > 0 ? mp::decode_bits(dy.bits(i), d) : 0.0)
              << v;
        }
      }
    }
  }
}

// grad_input overlapping an input without being its view (shifted by a few elements): the
// operands are copied first, so the result is the out-of-place call's.
TEST(GeluBackward, PartialOverlapGivesTheOutOfPlaceBits) {
  constexpr int64_t kN = 5000;
  for (const auto& form : kBackwardForms) {
    for (DType d : kDtypes) {
      for (int64_t shift : {-3, 1, 17}) {
        SCOPED_TRACE(form_name(form) + " " + mantissa::dtype_name(d) + " shift " +
                     std::to_string(shift));
        HostTensor x = filled(d, {kN}, 0.0, 3.0, 31);
        HostTensor buffer = filled(d, {kN + 40}, 0.0, 1.0, 32);
        HostTensor dy(d, {kN});  // the gradient as it sits in the buffer at offset 20
        std::memcpy(dy.data(), static_cast<char*>(buffer.data()) + 20 * mantissa::dtype_size(d),
                    dy.bytes.size());
        const HostTensor ref = backward_golden32(dy, x, form, d, {kN});
        TensorView dyv = view(buffer), out = view(buffer), xv = view(x);
        dyv.shape[0] = out.shape[0] = kN;
        const std::size_t es = mantissa::dtype_size(d);
        dyv.data = static_cast<char*>(buffer.data()) + 20 * es;
        out.data = static_cast<char*>(buffer.data()) + (20 + shift) * static_cast<int64_t>(es);
        const mantissa::Status s =
            form ? mantissa::gelu_backward_v2({.grad_output = dyv, .self = xv, .grad_input = out},
                                              {.approximate = *form})
                 : mantissa::gelu_backward({.grad_output = dyv, .self = xv, .grad_input = out});
        ASSERT_TRUE(s.ok()) << s.message();
        HostTensor got(d, {kN});
        std::memcpy(got.data(), out.data, got.bytes.size());
        expect_same_bits(got, ref, "grad_input (overlapping)");
      }
    }
  }
}

// Broadcast shapes and mixed dtypes: the same bits as the direct call on the materialised,
// converted operands, rounded through the promoted dtype.
TEST(GeluBackward, BroadcastsAndPromotes) {
  struct Case {
    std::vector<int64_t> dy, x, out;
    DType dyt, xt;
  };
  const std::vector<Case> cases{{{4, 1, 5}, {3, 5}, {4, 3, 5}, DType::kFloat16, DType::kFloat16},
                                {{3, 5}, {3, 5}, {3, 5}, DType::kFloat16, DType::kBFloat16},
                                {{1}, {2, 3, 70}, {2, 3, 70}, DType::kBFloat16, DType::kFloat32},
                                {{6, 70}, {70}, {6, 70}, DType::kFloat32, DType::kFloat32},
                                {{}, {7, 1}, {7, 1}, DType::kFloat32, DType::kBFloat16},
                                {{5, 1}, {1, 33}, {5, 33}, DType::kBFloat16, DType::kBFloat16}};
  for (const auto& form : kBackwardForms) {
    for (const Case& c : cases) {
      SCOPED_TRACE(form_name(form) + " dy " + mp::shape_string(c.dy) + " " +
                   mantissa::dtype_name(c.dyt) + " x " + mp::shape_string(c.x) + " " +
                   mantissa::dtype_name(c.xt));
      HostTensor dy = filled(c.dyt, c.dy, 0.0, 2.0, 21);
      HostTensor x = filled(c.xt, c.x, 0.0, 3.0, 22);
      const DType mid = c.dyt == c.xt ? c.dyt : DType::kFloat32;
      const HostTensor ref = backward_golden32(dy, x, form, mid, c.out);
      // The independent route: both operands materialised in fp32 in the broadcast shape, the
      // direct fp32 call, then rounded to the promoted dtype.
      HostTensor dy32(DType::kFloat32, c.out), x32(DType::kFloat32, c.out);
      const HostTensor shape(DType::kFloat32, c.out);
      for (int64_t i = 0; i < shape.numel(); ++i) {
        // Row-major index arithmetic over the broadcast shape.
        const auto source = [&](const std::vector<int64_t>& in) {
          int64_t rest = i, index = 0, stride = 1;
          for (std::size_t k = c.out.size(); k-- > 0;) {
            const int64_t at = rest % c.out[k];
            rest /= c.out[k];
            const std::size_t back = c.out.size() - 1 - k;
            if (back < in.size()) {
              const int64_t dim = in[in.size() - 1 - back];
              if (dim != 1) index += at * stride;
              stride *= dim;
            }
          }
          return index;
        };
        dy32.set_bits(i, std::bit_cast<uint32_t>(
                             static_cast<float>(mp::decode_bits(dy.bits(source(c.dy)), c.dyt))));
        x32.set_bits(i, std::bit_cast<uint32_t>(
                            static_cast<float>(mp::decode_bits(x.bits(source(c.x)), c.xt))));
      }
      HostTensor direct = sentinel(DType::kFloat32, c.out);
      ASSERT_TRUE(run_backward(dy32, x32, direct, form).ok());
      for (int64_t i = 0; i < shape.numel(); ++i) {
        const float f = std::bit_cast<float>(direct.bits(i));
        ASSERT_EQ(ref.bits(i), mp::narrow_result(f, mid)) << i;
      }
      mt::for_each_target_and_thread_count([&](const std::string&, int) {
        HostTensor out = sentinel(mid, c.out);
        ASSERT_TRUE(run_backward(dy, x, out, form).ok());
        expect_same_bits(out, ref, "grad_input");
      });
      // GeluBackward (v1) converts to any float grad_input dtype: the promoted value converted.
      if (!form) {
        for (DType to : kDtypes) {
          HostTensor out = sentinel(to, c.out);
          ASSERT_TRUE(run_backward(dy, x, out, form).ok()) << mantissa::dtype_name(to);
          for (int64_t i = 0; i < out.numel(); ++i) {
            const uint32_t want = to == mid
                                      ? ref.bits(i)
                                      : mp::narrow_result(mp::widen_to_float(ref.bits(i), mid), to);
            ASSERT_EQ(out.bits(i), want) << mantissa::dtype_name(to) << " " << i;
          }
        }
      }
    }
  }
}

// ---- Validation
// ----------------------------------------------------------------------------------

aclnnStatus aclnn_backward(std::optional<GeluApproximate> form, const char* approximate,
                           aclTensor* dy, aclTensor* x, aclTensor* out) {
  std::string a = approximate ? approximate : "";
  return mt::run_two_phases(
      [&](uint64_t* size, aclOpExecutor** e) {
        if (!form) return aclnnGeluBackwardGetWorkspaceSize(dy, x, out, size, e);
        return aclnnGeluBackwardV2GetWorkspaceSize(dy, x, approximate ? a.data() : nullptr, out,
                                                   size, e);
      },
      [&](void* w, uint64_t size, aclOpExecutor* e) {
        return form ? aclnnGeluBackwardV2(w, size, e, nullptr)
                    : aclnnGeluBackward(w, size, e, nullptr);
      });
}

TEST(GeluBackward, ValidationWritesNothing) {
  struct Row {
    std::string what;
    std::vector<int64_t> dy, x, out;
    DType dyt, xt, outt;
    bool v1_accepts;  // GeluBackward converts to any float grad_input dtype
  };
  const std::vector<Row> rows{{"shapes do not broadcast",
                               {4, 5},
                               {4, 6},
                               {4, 6},
                               DType::kFloat32,
                               DType::kFloat32,
                               DType::kFloat32,
                               false},
                              {"grad_input not the broadcast shape",
                               {4, 1},
                               {1, 5},
                               {4, 1},
                               DType::kFloat32,
                               DType::kFloat32,
                               DType::kFloat32,
                               false},
                              {"grad_input too large",
                               {4, 5},
                               {4, 5},
                               {2, 4, 5},
                               DType::kFloat32,
                               DType::kFloat32,
                               DType::kFloat32,
                               false},
                              {"self INT32",
                               {4, 5},
                               {4, 5},
                               {4, 5},
                               DType::kFloat32,
                               DType::kInt32,
                               DType::kFloat32,
                               false},
                              {"grad_input not the promoted dtype",
                               {4, 5},
                               {4, 5},
                               {4, 5},
                               DType::kFloat16,
                               DType::kFloat16,
                               DType::kFloat32,
                               true},
                              {"fp16 with bf16 into bf16",
                               {4, 5},
                               {4, 5},
                               {4, 5},
                               DType::kFloat16,
                               DType::kBFloat16,
                               DType::kBFloat16,
                               true},
                              {"rank 9",
                               {1, 1, 1, 1, 1, 1, 1, 1, 2},
                               {2},
                               {1, 1, 1, 1, 1, 1, 1, 1, 2},
                               DType::kFloat32,
                               DType::kFloat32,
                               DType::kFloat32,
                               false}};
  for (const auto& form : kBackwardForms) {
    for (const Row& r : rows) {
      SCOPED_TRACE(form_name(form) + ": " + r.what);
      HostTensor dy = filled(r.dyt == DType::kInt32 ? DType::kFloat32 : r.dyt, r.dy, 0, 1, 1);
      HostTensor x =
          r.xt == DType::kInt32 ? HostTensor(DType::kInt32, r.x) : filled(r.xt, r.x, 0, 1, 2);
      HostTensor out = sentinel(r.outt, r.out);
      const mantissa::Status s = run_backward(dy, x, out, form);
      if (!form && r.v1_accepts) {
        EXPECT_TRUE(s.ok()) << s.message();
        continue;
      }
      EXPECT_EQ(s.code(), StatusCode::kParamInvalid);
      EXPECT_NE(s.message().find(form ? "GeluGradV2" : "GeluGrad"), std::string::npos)
          << s.message();
      EXPECT_TRUE(untouched(out));
      aclTensor* a = acl(view(dy));
      aclTensor* b = acl(view(x));
      aclTensor* o = acl(view(out));
      EXPECT_EQ(
          aclnn_backward(form, form ? (*form == GeluApproximate::kTanh ? "tanh" : "none") : nullptr,
                         a, b, o),
          ACLNN_ERR_PARAM_INVALID)
          << aclGetRecentErrMsg();
      EXPECT_TRUE(untouched(out));
      aclDestroyTensor(a);
      aclDestroyTensor(b);
      aclDestroyTensor(o);
    }
  }
  // approximate: a null string is 161001, another string 161002, through aclnn; an enum value
  // other than none and tanh is 161002 through the C++ API.
  HostTensor dy = filled(DType::kFloat32, {8}, 0, 1, 3), x = filled(DType::kFloat32, {8}, 0, 1, 4);
  HostTensor out = sentinel(DType::kFloat32, {8});
  aclTensor* a = acl(view(dy));
  aclTensor* b = acl(view(x));
  aclTensor* o = acl(view(out));
  EXPECT_EQ(aclnn_backward(GeluApproximate::kNone, nullptr, a, b, o), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnn_backward(GeluApproximate::kNone, "erf", a, b, o), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("erf"), std::string::npos);
  EXPECT_EQ(aclnn_backward(GeluApproximate::kNone, "Tanh", a, b, o), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(run_backward(dy, x, out, static_cast<GeluApproximate>(2)).code(),
            StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(out));
  // Null handles: 161001.
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnGeluBackwardGetWorkspaceSize(nullptr, b, o, &size, &e), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnGeluBackwardGetWorkspaceSize(a, nullptr, o, &size, &e), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnGeluBackwardGetWorkspaceSize(a, b, nullptr, &size, &e), ACLNN_ERR_PARAM_NULLPTR);
  char none[] = "none";
  EXPECT_EQ(aclnnGeluBackwardV2GetWorkspaceSize(a, nullptr, none, o, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(untouched(out));
  // The same through GeluV2: x and y of different shapes.
  HostTensor y = sentinel(DType::kFloat32, {9});
  EXPECT_EQ(mantissa::gelu_v2({.x = view(x), .y = view(y)}).code(), StatusCode::kParamInvalid);
  aclTensor* ay = acl(view(y));
  EXPECT_EQ(
      mt::run_two_phases(
          [&](uint64_t* s, aclOpExecutor** ex) {
            return aclnnGeluV2GetWorkspaceSize(b, 0, ay, s, ex);
          },
          [](void* w, uint64_t s, aclOpExecutor* ex) { return aclnnGeluV2(w, s, ex, nullptr); }),
      ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(untouched(y));
  EXPECT_EQ(aclnnGeluV2GetWorkspaceSize(nullptr, 0, ay, &size, &e), ACLNN_ERR_PARAM_NULLPTR);
  for (aclTensor* t : {a, b, o, ay}) aclDestroyTensor(t);
}

// Transposed operands through aclnn: staged through the workspace, the same bits as the
// contiguous call; a broadcasting call reports its scratch in the workspace size.
TEST(GeluBackward, StridedAndBroadcastThroughAclnn) {
  constexpr int64_t kRows = 37, kCols = 19;
  for (const auto& form : kBackwardForms) {
    for (DType d : kDtypes) {
      SCOPED_TRACE(form_name(form) + " " + mantissa::dtype_name(d));
      HostTensor x = filled(d, {kRows, kCols}, 0.0, 3.0, 5);
      HostTensor dy = filled(d, {kRows, kCols}, 0.0, 1.0, 6);
      const HostTensor ref = backward_golden32(dy, x, form, d, {kRows, kCols});
      const auto transposed = [&](const HostTensor& t) {
        HostTensor tt(d, {kCols, kRows});
        for (int64_t i = 0; i < kRows; ++i) {
          for (int64_t j = 0; j < kCols; ++j) tt.set_bits(j * kRows + i, t.bits(i * kCols + j));
        }
        return tt;
      };
      HostTensor xt = transposed(x), dyt = transposed(dy), outt = sentinel(d, {kCols, kRows});
      TensorView xv = view(x), dv = view(dy), ov = view(x);
      xv.data = xt.data();
      dv.data = dyt.data();
      ov.data = outt.data();
      aclTensor* ax = acl(xv, {1, kRows}, {kCols, kRows});
      aclTensor* ad = acl(dv, {1, kRows}, {kCols, kRows});
      aclTensor* ao = acl(ov, {1, kRows}, {kCols, kRows});
      const char* a = form ? (*form == GeluApproximate::kTanh ? "tanh" : "none") : nullptr;
      ASSERT_EQ(aclnn_backward(form, a, ad, ax, ao), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      for (int64_t i = 0; i < kRows; ++i) {
        for (int64_t j = 0; j < kCols; ++j) {
          ASSERT_EQ(outt.bits(j * kRows + i), ref.bits(i * kCols + j)) << i << " " << j;
        }
      }
      for (aclTensor* t : {ax, ad, ao}) aclDestroyTensor(t);
      // Broadcast dy [1, kCols] against x: scratch in the workspace, golden32's bits.
      HostTensor dy1 = filled(d, {1, kCols}, 0.0, 1.0, 7);
      const HostTensor ref1 = backward_golden32(dy1, x, form, d, {kRows, kCols});
      HostTensor out = sentinel(d, {kRows, kCols});
      aclTensor* b1 = acl(view(dy1));
      aclTensor* bx = acl(view(x));
      aclTensor* bo = acl(view(out));
      uint64_t size = 0;
      aclOpExecutor* e = nullptr;
      std::string s = a ? a : "";
      const aclnnStatus st =
          form ? aclnnGeluBackwardV2GetWorkspaceSize(b1, bx, s.data(), bo, &size, &e)
               : aclnnGeluBackwardGetWorkspaceSize(b1, bx, bo, &size, &e);
      ASSERT_EQ(st, ACLNN_SUCCESS) << aclGetRecentErrMsg();
      EXPECT_GE(size, static_cast<uint64_t>(2 * kRows * kCols * sizeof(float)));
      std::vector<unsigned char> w(size);
      ASSERT_EQ(form ? aclnnGeluBackwardV2(w.data(), size, e, nullptr)
                     : aclnnGeluBackward(w.data(), size, e, nullptr),
                ACLNN_SUCCESS);
      expect_same_bits(out, ref1, "grad_input (broadcast)");
      for (aclTensor* t : {b1, bx, bo}) aclDestroyTensor(t);
    }
  }
}

}  // namespace

}  // namespace mantissa::testing
