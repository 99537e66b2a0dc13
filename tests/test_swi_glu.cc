// SwiGlu and SwiGluGrad: bitwise against the kit's golden32 on every SIMD target and thread count
// (halves around the vector widths and the parallel grain, chunks that cut rows, every dim of a
// rank-3 tensor, negative dims, in place for the backward pass, every fp16 and bf16 pattern
// through the table path), the split along any dim against an explicit multi-index gather, every
// pair of special values, every fp16 and bf16 input and sweeps of fp32 inputs (the whole range,
// and every fp32 value around the zero of silu') against an independent long-double evaluation,
// the validation rows through the C++ API and aclnn (nothing written), strided tensors through
// aclnn, and op-by-name with upstream's names.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_swi_glu.h"
#include "aclnnop/aclnn_swi_glu_grad.h"
#include "aclop_support.h"
#include "mantissa/ops/swi_glu.h"
#include "op_support.h"
#include "precision/fp.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::SwiGluGradOp;
using mantissa::detail::SwiGluOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::sentinel;
using mt::untouched;
using mt::view;

constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// ---- An independent reference in long double ---------------------------------------------------

// silu(a) = a / (1 + exp(-a)), the limits at +-inf.
long double silu_ref(long double a) {
  if (std::isinf(a)) return a > 0 ? a : -0.0L;
  return a / (1.0L + std::exp(-a));
}

// silu'(a) = sigmoid(a) + a sigmoid(a) sigmoid(-a), each sigmoid from exp of a non-positive
// argument.
long double dsilu_ref(long double a) {
  if (std::isinf(a)) return a > 0 ? 1.0L : -0.0L;
  const long double e = std::exp(-std::fabs(a));
  const long double sp = 1.0L / (1.0L + e), sn = e / (1.0L + e);  // sigmoid(|a|), sigmoid(-|a|)
  const long double s = a >= 0 ? sp : sn, sm = a >= 0 ? sn : sp;  // sigmoid(a), sigmoid(-a)
  return s + a * s * sm;
}

// The shape of x with dim halved.
std::vector<int64_t> halved(std::vector<int64_t> shape, int64_t dim) {
  const auto rank = static_cast<int64_t>(shape.size());
  shape[static_cast<std::size_t>(dim < 0 ? dim + rank : dim)] /= 2;
  return shape;
}

HostTensor golden32(HostTensor& x, int64_t dim) {
  HostTensor out = sentinel(x.dtype, halved(x.shape, dim));
  mt::apply_golden32<SwiGluOp>({.x = view(x), .out = view(out)}, {.dim = dim});
  return out;
}

HostTensor golden32_grad(HostTensor& g, HostTensor& x, int64_t dim) {
  HostTensor out = sentinel(x.dtype, x.shape);
  mt::apply_golden32<SwiGluGradOp>({.y_grad = view(g), .x = view(x), .out = view(out)},
                                   {.dim = dim});
  return out;
}

aclnnStatus forward_two(void* workspace, uint64_t size, aclOpExecutor* executor) {
  return aclnnSwiGlu(workspace, size, executor, nullptr);
}
aclnnStatus grad_two(void* workspace, uint64_t size, aclOpExecutor* executor) {
  return aclnnSwiGluGrad(workspace, size, executor, nullptr);
}

// Both operators on x (and g, x's shape halved along dim) on every target and thread count, out
// of place and (backward) in place, against golden32.
void expect_bitwise(DType d, const std::vector<int64_t>& shape, int64_t dim, double spread,
                    uint32_t seed) {
  SCOPED_TRACE(std::string(dtype_name(d)) + " dim " + std::to_string(dim) + " seed " +
               std::to_string(seed));
  HostTensor x = filled(d, shape, 0.0, spread, seed);
  HostTensor g = filled(d, halved(shape, dim), 0.0, 1.0, seed + 1);
  const HostTensor ref = golden32(x, dim);
  const HostTensor ref_grad = golden32_grad(g, x, dim);
  mt::for_each_target_and_thread_count([&](const std::string&, int) {
    HostTensor y = sentinel(d, ref.shape);
    ASSERT_TRUE(mantissa::swi_glu({.x = view(x), .out = view(y)}, {.dim = dim}).ok());
    expect_same_bits(y, ref, "out");
    HostTensor dx = sentinel(d, shape);
    ASSERT_TRUE(
        mantissa::swi_glu_grad({.y_grad = view(g), .x = view(x), .out = view(dx)}, {.dim = dim})
            .ok());
    expect_same_bits(dx, ref_grad, "grad out");
    HostTensor in_place = x;  // out is x's buffer
    ASSERT_TRUE(mantissa::swi_glu_grad(
                    {.y_grad = view(g), .x = view(in_place), .out = view(in_place)}, {.dim = dim})
                    .ok());
    expect_same_bits(in_place, ref_grad, "grad out (in place)");
  });
}

TEST(SwiGlu, BitExactOnEveryTargetAndThreadCount) {
  for (DType d : kDtypes) {
    // Halves around the vector widths (1-16 fp64 lanes, 4 vectors a step) on a few rows, and
    // flat sizes around the parallel grain (32768 results), where chunks cut rows.
    for (int64_t half : {1, 3, 4, 15, 16, 17, 63, 64, 65, 1000}) {
      expect_bitwise(d, {3, 2 * half}, -1, 3.0, static_cast<uint32_t>(half));
    }
    expect_bitwise(d, {2 * 40000}, 0, 3.0, 11);     // one row over three chunks
    expect_bitwise(d, {3, 2 * 20001}, 1, 6.0, 12);  // rows crossing chunk boundaries
    expect_bitwise(d, {5, 2 * 7, 13}, 1, 3.0, 13);  // inner dims: half = 7 * 13
    expect_bitwise(d, {4, 6, 2}, 0, 3.0, 14);       // every dim of a rank-3 tensor
    expect_bitwise(d, {4, 6, 2}, -2, 3.0, 15);
    expect_bitwise(d, {4, 6, 2}, 2, 3.0, 16);
    expect_bitwise(d, {2, 1, 2, 3, 1, 2, 2, 4}, -1, 3.0, 17);  // rank 8
  }
}

// fp16 and bf16 read silu and silu' from a table of the fp64 steps over every bit pattern: every
// pattern of a (NaNs, infinities, subnormals included) on every target, against golden32, which
// computes the steps.
TEST(SwiGlu, EverySixteenBitInputOnEveryTarget) {
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(mantissa::dtype_name(d));
    HostTensor x = filled(d, {2, 65536}, 0.0, 2.0, 51);
    for (int64_t i = 0; i < 65536; ++i) x.set_bits(i, static_cast<uint32_t>(i));
    HostTensor g = filled(d, {1, 65536}, 0.0, 1.0, 52);
    const HostTensor ref = golden32(x, 0), ref_grad = golden32_grad(g, x, 0);
    mt::for_each_target_and_thread_count(
        [&](const std::string&, int) {
          HostTensor y = sentinel(d, ref.shape), dx = sentinel(d, x.shape);
          ASSERT_TRUE(mantissa::swi_glu({.x = view(x), .out = view(y)}, {.dim = 0}).ok());
          expect_same_bits(y, ref, "out");
          ASSERT_TRUE(
              mantissa::swi_glu_grad({.y_grad = view(g), .x = view(x), .out = view(dx)}, {.dim = 0})
                  .ok());
          expect_same_bits(dx, ref_grad, "grad out");
        },
        {1, 2});
  }
}

// The split along each dim against A and B gathered by multi-index arithmetic: SwiGlu of x split
// along d equals SwiGlu of [A; B] split along dim 0 element for element, and SwiGluGrad's dA and
// dB land at A's and B's indices.
TEST(SwiGlu, SplitAlongAnyDimGathersTheHalves) {
  const std::vector<int64_t> shape{4, 6, 10};
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    const int64_t d = dim < 0 ? dim + 3 : dim;
    HostTensor x = filled(DType::kFloat32, shape, 0.0, 3.0, 21);
    const std::vector<int64_t> hs = halved(shape, dim);
    const int64_t n = hs[0] * hs[1] * hs[2];
    HostTensor g = filled(DType::kFloat32, hs, 0.0, 1.0, 22);
    HostTensor ab(DType::kFloat32, {2, n});
    // Index of element (i0, i1, i2) of x, and the flat index of the same position in hs.
    auto x_at = [&](int64_t i0, int64_t i1, int64_t i2) {
      return (i0 * shape[1] + i1) * shape[2] + i2;
    };
    int64_t m = 0;
    for (int64_t i0 = 0; i0 < hs[0]; ++i0) {
      for (int64_t i1 = 0; i1 < hs[1]; ++i1) {
        for (int64_t i2 = 0; i2 < hs[2]; ++i2, ++m) {
          int64_t j[3] = {i0, i1, i2};
          ab.set_bits(m, x.bits(x_at(j[0], j[1], j[2])));
          j[d] += shape[static_cast<std::size_t>(d)] / 2;
          ab.set_bits(n + m, x.bits(x_at(j[0], j[1], j[2])));
        }
      }
    }
    HostTensor y = sentinel(DType::kFloat32, hs), flat = sentinel(DType::kFloat32, {1, n});
    ASSERT_TRUE(mantissa::swi_glu({.x = view(x), .out = view(y)}, {.dim = dim}).ok());
    ASSERT_TRUE(mantissa::swi_glu({.x = view(ab), .out = view(flat)}, {.dim = 0}).ok());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y.bits(i), flat.bits(i)) << i;
    HostTensor gflat = g;
    gflat.shape = {1, n};
    HostTensor dx = sentinel(DType::kFloat32, shape), dflat = sentinel(DType::kFloat32, {2, n});
    ASSERT_TRUE(
        mantissa::swi_glu_grad({.y_grad = view(g), .x = view(x), .out = view(dx)}, {.dim = dim})
            .ok());
    ASSERT_TRUE(mantissa::swi_glu_grad({.y_grad = view(gflat), .x = view(ab), .out = view(dflat)},
                                       {.dim = 0})
                    .ok());
    m = 0;
    for (int64_t i0 = 0; i0 < hs[0]; ++i0) {
      for (int64_t i1 = 0; i1 < hs[1]; ++i1) {
        for (int64_t i2 = 0; i2 < hs[2]; ++i2, ++m) {
          int64_t j[3] = {i0, i1, i2};
          ASSERT_EQ(dx.bits(x_at(j[0], j[1], j[2])), dflat.bits(m)) << "dA " << m;
          j[d] += shape[static_cast<std::size_t>(d)] / 2;
          ASSERT_EQ(dx.bits(x_at(j[0], j[1], j[2])), dflat.bits(n + m)) << "dB " << m;
        }
      }
    }
  }
}

// Every (a, b) pair of special values for SwiGlu and every (g, a, b) triple for SwiGluGrad, with
// x = [A; B] split along dim 0: the bits of golden32 on every target, and the documented limits.
TEST(SwiGlu, SpecialValues) {
  for (DType d : kDtypes) {
    SCOPED_TRACE(mantissa::dtype_name(d));
    std::vector<uint32_t> bits = mt::special_bits(d);
    const auto add = [&](double v) { bits.push_back(precision::round_to_bits(v, d)); };
    for (double v :
         {1.0, -1.0, 2.0, -1.25, -1.28125, 20.0, -20.0, 100.0, -100.0, 1000.0, -1000.0}) {
      add(v);
    }
    const auto nb = static_cast<int64_t>(bits.size());
    // SwiGlu: x [2, nb * nb], A = bits[i], B = bits[j].
    HostTensor x(d, {2, nb * nb});
    for (int64_t i = 0; i < nb; ++i) {
      for (int64_t j = 0; j < nb; ++j) {
        x.set_bits(i * nb + j, bits[static_cast<std::size_t>(i)]);
        x.set_bits(nb * nb + i * nb + j, bits[static_cast<std::size_t>(j)]);
      }
    }
    const HostTensor ref = golden32(x, 0);
    // SwiGluGrad: g [1, nb^3], x [2, nb^3].
    const int64_t n3 = nb * nb * nb;
    HostTensor g(d, {1, n3}), xg(d, {2, n3});
    for (int64_t i = 0; i < n3; ++i) {
      g.set_bits(i, bits[static_cast<std::size_t>(i / (nb * nb))]);
      xg.set_bits(i, bits[static_cast<std::size_t>(i / nb % nb)]);
      xg.set_bits(n3 + i, bits[static_cast<std::size_t>(i % nb)]);
    }
    const HostTensor ref_grad = golden32_grad(g, xg, 0);
    mt::for_each_target_and_thread_count(
        [&](const std::string&, int) {
          HostTensor y = sentinel(d, ref.shape);
          ASSERT_TRUE(mantissa::swi_glu({.x = view(x), .out = view(y)}, {.dim = 0}).ok());
          expect_same_bits(y, ref, "out");
          HostTensor dx = sentinel(d, xg.shape);
          ASSERT_TRUE(mantissa::swi_glu_grad({.y_grad = view(g), .x = view(xg), .out = view(dx)},
                                             {.dim = 0})
                          .ok());
          expect_same_bits(dx, ref_grad, "grad out");
        },
        {1, 3});
    // The limits and signs, decoded from golden32 (the kernels' bits, checked above).
    const auto value = [&](const HostTensor& t, int64_t i) {
      return precision::decode_bits(t.bits(i), d);
    };
    const auto find = [&](double v) {
      for (int64_t i = 0; i < nb; ++i) {
        const double b = precision::decode_bits(bits[static_cast<std::size_t>(i)], d);
        if (b == v && std::signbit(b) == std::signbit(v)) return i;
      }
      ADD_FAILURE() << "no " << v;
      return int64_t{0};
    };
    const double inf = INFINITY;
    const int64_t pinf = find(inf), ninf = find(-inf), pz = find(0.0), nz = find(-0.0),
                  one = find(1.0), big = find(-1000.0);
    const auto y_of = [&](int64_t a, int64_t b) { return value(ref, a * nb + b); };
    EXPECT_EQ(y_of(pinf, one), inf);           // silu(+inf) = +inf
    const double silu_ninf = y_of(ninf, one);  // silu(-inf) = -0
    EXPECT_TRUE(silu_ninf == 0.0 && std::signbit(silu_ninf));
    EXPECT_TRUE(std::isnan(y_of(pinf, pz)));                            // inf * 0
    EXPECT_TRUE(std::isnan(y_of(ninf, pinf)));                          // -0 * inf
    EXPECT_TRUE(y_of(pz, one) == 0.0 && !std::signbit(y_of(pz, one)));  // silu(+-0) = +-0
    EXPECT_TRUE(y_of(nz, one) == 0.0 && std::signbit(y_of(nz, one)));
    const double tiny = y_of(big, one);  // silu(-1000) underflows to -0
    EXPECT_TRUE(tiny == 0.0 && std::signbit(tiny));
    // Grad with g = 1, b = 1: dA = silu'(a), dB = silu(a).
    const auto grad_of = [&](int64_t a, bool db) {
      return value(ref_grad, (db ? n3 : 0) + one * nb * nb + a * nb + one);
    };
    EXPECT_EQ(grad_of(pinf, false), 1.0);  // silu'(+inf) = 1
    EXPECT_TRUE(grad_of(ninf, false) == 0.0 && std::signbit(grad_of(ninf, false)));
    EXPECT_EQ(grad_of(pinf, true), inf);
    EXPECT_TRUE(grad_of(ninf, true) == 0.0 && std::signbit(grad_of(ninf, true)));
    EXPECT_EQ(grad_of(pz, false), 0.5);  // silu'(0) = 1/2
    EXPECT_TRUE(grad_of(big, false) == 0.0 && std::signbit(grad_of(big, false)));
    // NaN anywhere in a result's inputs: the canonical NaN.
    const uint32_t canonical = precision::round_to_bits(std::nan(""), d);
    for (int64_t i = 0; i < nb; ++i) {
      for (int64_t j = 0; j < nb; ++j) {
        const double a = precision::decode_bits(bits[static_cast<std::size_t>(i)], d);
        const double b = precision::decode_bits(bits[static_cast<std::size_t>(j)], d);
        if (std::isnan(a) || std::isnan(b)) {
          EXPECT_EQ(ref.bits(i * nb + j), canonical);
        }
      }
    }
  }
}

// Ulps between two 16-bit patterns (+-0 the same point).
int ulps16(uint32_t a, uint32_t b) {
  const auto ordered = [](uint32_t v) {
    const int32_t mag = static_cast<int32_t>(v & 0x7FFFu);
    return (v & 0x8000u) ? -mag : mag;
  };
  return std::abs(ordered(a) - ordered(b));
}

// |got - want| in fp32 ulps at want (subnormal results: the subnormal spacing).
double ulps32(float got, long double want) {
  const long double ulp =
      std::ldexp(1.0L, std::max(std::ilogb(static_cast<float>(want)), -126) - 23);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
}

// Every fp16 and bf16 a (b = g = 1, and b from a normal sample): golden32 (the kernels' bits,
// checked above) within 1 ulp of the long-double value rounded to the dtype, for out, dA and dB.
TEST(SwiGlu, SixteenBitWithinOneUlpOfTheLongDoubleValue) {
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(mantissa::dtype_name(d));
    for (bool unit_b : {true, false}) {
      HostTensor x(d, {2, 65536}), g(d, {1, 65536});
      HostTensor b = filled(d, {65536}, 0.0, 2.0, 31);
      for (int64_t i = 0; i < 65536; ++i) {
        x.set_bits(i, static_cast<uint32_t>(i));
        x.set_bits(65536 + i, unit_b ? precision::round_to_bits(1.0, d) : b.bits(i));
        g.set_bits(i, precision::round_to_bits(1.0, d));
      }
      const HostTensor y = golden32(x, 0), dx = golden32_grad(g, x, 0);
      int worst[3] = {0, 0, 0};
      for (int64_t i = 0; i < 65536; ++i) {
        const double a = precision::decode_bits(static_cast<uint32_t>(i), d);
        const long double bv = precision::decode_bits(x.bits(65536 + i), d);
        if (std::isnan(a) || std::isnan(bv)) continue;
        const long double want[3] = {silu_ref(a) * bv, dsilu_ref(a) * bv, silu_ref(a)};
        const uint32_t got[3] = {y.bits(i), dx.bits(i), dx.bits(65536 + i)};
        for (int k = 0; k < 3; ++k) {
          if (std::isnan(want[k])) continue;  // inf * 0
          const int u = ulps16(got[k], precision::round_to_bits(static_cast<double>(want[k]), d));
          worst[k] = std::max(worst[k], u);
          ASSERT_LE(u, 1) << "result " << k << " a " << a << " b " << static_cast<double>(bv);
        }
      }
      const std::string tag = std::string(dtype_name(d)) + (unit_b ? "_b1" : "_brand");
      RecordProperty("max_ulp_out_" + tag, worst[0]);
      RecordProperty("max_ulp_da_" + tag, worst[1]);
      RecordProperty("max_ulp_db_" + tag, worst[2]);
    }
  }
}

// fp32 a over 2^20 bit patterns spread over the whole range (b = g = 1, then b from a normal
// sample), and every fp32 a within 2^16 ulps either side of silu's minimum a0 = -1.27846...,
// where silu' changes sign and its value is smallest relative to its terms: golden32 within
// 1 ulp of the long-double value.
TEST(SwiGlu, Fp32WithinOneUlpOfTheLongDoubleValue) {
  constexpr int64_t kSweep = 1 << 20, kAround = 1 << 17;
  HostTensor x(DType::kFloat32, {2, kSweep + kAround}), g(DType::kFloat32, {1, kSweep + kAround});
  const HostTensor b = filled(DType::kFloat32, {kSweep + kAround}, 0.0, 2.0, 41);
  const uint32_t a0 = std::bit_cast<uint32_t>(-1.27846454276f);
  const int64_t n = kSweep + kAround;
  for (bool unit_b : {true, false}) {
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t bits = i < kSweep ? static_cast<uint32_t>(i) * 4096u + 1234u
                                       : a0 - kAround / 2 + static_cast<uint32_t>(i - kSweep);
      x.set_bits(i, bits);
      x.set_bits(n + i, unit_b ? std::bit_cast<uint32_t>(1.0f) : b.bits(i));
      g.set_bits(i, std::bit_cast<uint32_t>(1.0f));
    }
    const HostTensor y = golden32(x, 0), dx = golden32_grad(g, x, 0);
    double worst[3] = {0, 0, 0}, worst_root = 0;
    int sign_changes = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float a = std::bit_cast<float>(x.bits(i));
      const long double bv = std::bit_cast<float>(x.bits(n + i));
      if (std::isnan(a)) continue;
      const long double want[3] = {silu_ref(a) * bv, dsilu_ref(a) * bv, silu_ref(a)};
      const float got[3] = {std::bit_cast<float>(y.bits(i)), std::bit_cast<float>(dx.bits(i)),
                            std::bit_cast<float>(dx.bits(n + i))};
      for (int k = 0; k < 3; ++k) {
        if (std::isnan(want[k])) continue;
        if (std::isinf(want[k]) || std::fabs(want[k]) > 3.4028234663852886e38L) {
          // Beyond fp32's range: inf, or FLT_MAX where the value rounds down to it.
          EXPECT_EQ(got[k], static_cast<float>(want[k])) << "result " << k << " a " << a;
          continue;
        }
        const double e = ulps32(got[k], want[k]);
        worst[k] = std::max(worst[k], e);
        if (i >= kSweep && k == 1) worst_root = std::max(worst_root, e);
        ASSERT_LE(e, 1.0) << "result " << k << " a " << a << " b " << static_cast<double>(bv)
                          << " got " << got[k] << " want " << static_cast<double>(want[k]);
      }
      if (i > kSweep && unit_b) {
        const float prev = std::bit_cast<float>(dx.bits(i - 1));
        if ((prev < 0) != (got[1] < 0)) ++sign_changes;
      }
    }
    if (unit_b) {
      EXPECT_EQ(sign_changes, 1);  // silu' changes sign once around a0
    }
    const std::string tag = unit_b ? "_b1" : "_brand";
    RecordProperty("max_ulp_out_fp32" + tag, std::to_string(worst[0]));
    RecordProperty("max_ulp_da_fp32" + tag, std::to_string(worst[1]));
    RecordProperty("max_ulp_db_fp32" + tag, std::to_string(worst[2]));
    RecordProperty("max_ulp_da_near_root_fp32" + tag, std::to_string(worst_root));
    // fp64 steps rounded once: correctly rounded but for ties' margins, except dA near the root
    // of silu' (cancellation in 1 + a (1 - s)).
    EXPECT_LE(worst[0], 0.501);
    EXPECT_LE(worst[2], 0.501);
  }
}

// ---- Validation -----------------------------------------------------------------------------

struct Row {
  std::string what;
  DType x_dtype;
  std::vector<int64_t> x_shape;
  int64_t dim;
  DType out_dtype;
  std::vector<int64_t> out_shape;
  std::string needle;  // in the message
};

TEST(SwiGlu, ValidationWritesNothing) {
  const std::vector<Row> rows{
      {"x INT32", DType::kInt32, {4, 6}, -1, DType::kInt32, {4, 3}, "x"},
      {"out dtype differs", DType::kFloat32, {4, 6}, -1, DType::kFloat16, {4, 3}, "out"},
      {"x rank 0", DType::kFloat32, {}, 0, DType::kFloat32, {}, "rank"},
      {"x rank 9",
       DType::kFloat32,
       {1, 1, 1, 1, 1, 1, 1, 1, 2},
       -1,
       DType::kFloat32,
       {1, 1, 1, 1, 1, 1, 1, 1, 1},
       "rank"},
      {"dim 2 of rank 2", DType::kFloat32, {4, 6}, 2, DType::kFloat32, {4, 3}, "dim is 2"},
      {"dim -3 of rank 2", DType::kFloat32, {4, 6}, -3, DType::kFloat32, {4, 3}, "dim is -3"},
      {"odd size along dim", DType::kFloat32, {4, 5}, -1, DType::kFloat32, {4, 2}, "size 5"},
      {"odd size along dim 0", DType::kBFloat16, {3, 4}, 0, DType::kBFloat16, {1, 4}, "size 3"},
      {"out not halved", DType::kFloat32, {4, 6}, -1, DType::kFloat32, {4, 6}, "out has shape"},
      {"out halved along another dim",
       DType::kFloat32,
       {4, 6},
       -1,
       DType::kFloat32,
       {2, 6},
       "[4, 3]"},
      {"out rank differs", DType::kFloat16, {4, 6}, 1, DType::kFloat16, {12}, "out has shape"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    HostTensor x =
        filled(r.x_dtype == DType::kInt32 ? DType::kFloat32 : r.x_dtype, r.x_shape, 0.0, 1.0, 1);
    x.dtype = r.x_dtype;
    HostTensor y = sentinel(r.out_dtype, r.out_shape);
    const mantissa::Status s = mantissa::swi_glu({.x = view(x), .out = view(y)}, {.dim = r.dim});
    EXPECT_EQ(s.code(), StatusCode::kParamInvalid) << s.message();
    EXPECT_NE(s.message().find("SwiGlu"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(r.needle), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(y));
    // The same through aclnn: 161002, nothing written.
    aclTensor* ax = acl(view(x));
    aclTensor* ay = acl(view(y));
    const aclnnStatus st = mt::run_two_phases(
        [&](uint64_t* size, aclOpExecutor** e) {
          return aclnnSwiGluGetWorkspaceSize(ax, r.dim, ay, size, e);
        },
        forward_two);
    EXPECT_EQ(st, ACLNN_ERR_PARAM_INVALID) << aclGetRecentErrMsg();
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find(r.needle), std::string::npos)
        << aclGetRecentErrMsg();
    EXPECT_TRUE(untouched(y));
    aclDestroyTensor(ax);
    aclDestroyTensor(ay);
  }
  // out overlapping x: 161002 (out may not be x: its shape differs).
  HostTensor big = filled(DType::kFloat32, {24}, 0.0, 1.0, 3);
  TensorView xv = view(big), ov = view(big);
  xv.rank = ov.rank = 2;
  xv.shape = {4, 6};
  ov.shape = {4, 3};
  ov.data = static_cast<float*>(ov.data) + 1;
  const mantissa::Status overlap = mantissa::swi_glu({.x = xv, .out = ov});
  EXPECT_EQ(overlap.code(), StatusCode::kParamInvalid) << overlap.message();
  // Null handles: 161001.
  HostTensor x = filled(DType::kFloat32, {4, 6}, 0.0, 1.0, 1);
  HostTensor y = sentinel(DType::kFloat32, {4, 3});
  aclTensor* ax = acl(view(x));
  aclTensor* ay = acl(view(y));
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnSwiGluGetWorkspaceSize(nullptr, -1, ay, &size, &e), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnSwiGluGetWorkspaceSize(ax, -1, nullptr, &size, &e), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(untouched(y));
  aclDestroyTensor(ax);
  aclDestroyTensor(ay);
}

struct GradRow {
  std::string what;
  DType g_dtype;
  std::vector<int64_t> g_shape;
  DType x_dtype;
  std::vector<int64_t> x_shape;
  int64_t dim;
  DType out_dtype;
  std::vector<int64_t> out_shape;
  std::string needle;
};

TEST(SwiGluGrad, ValidationWritesNothing) {
  constexpr DType f32 = DType::kFloat32, f16 = DType::kFloat16;
  const std::vector<GradRow> rows{
      {"y_grad INT32", DType::kInt32, {4, 3}, f32, {4, 6}, -1, f32, {4, 6}, "y_grad"},
      {"x dtype differs", f32, {4, 3}, f16, {4, 6}, -1, f16, {4, 6}, "x"},
      {"out dtype differs", f32, {4, 3}, f32, {4, 6}, -1, f16, {4, 6}, "out"},
      {"out shape differs", f32, {4, 3}, f32, {4, 6}, -1, f32, {4, 3}, "out"},
      {"x rank 9",
       f32,
       {1, 1, 1, 1, 1, 1, 1, 1, 1},
       f32,
       {1, 1, 1, 1, 1, 1, 1, 1, 2},
       -1,
       f32,
       {1, 1, 1, 1, 1, 1, 1, 1, 2},
       "rank"},
      {"dim 2 of rank 2", f32, {4, 3}, f32, {4, 6}, 2, f32, {4, 6}, "dim is 2"},
      {"dim -3 of rank 2", f32, {4, 3}, f32, {4, 6}, -3, f32, {4, 6}, "dim is -3"},
      {"odd size along dim", f32, {4, 2}, f32, {4, 5}, -1, f32, {4, 5}, "size 5"},
      {"y_grad not halved", f32, {4, 6}, f32, {4, 6}, -1, f32, {4, 6}, "y_grad has shape"},
      {"y_grad halved along another dim", f32, {2, 6}, f32, {4, 6}, -1, f32, {4, 6}, "[4, 3]"},
  };
  for (const GradRow& r : rows) {
    SCOPED_TRACE(r.what);
    HostTensor g = filled(r.g_dtype == DType::kInt32 ? f32 : r.g_dtype, r.g_shape, 0.0, 1.0, 1);
    g.dtype = r.g_dtype;
    HostTensor x = filled(r.x_dtype, r.x_shape, 0.0, 1.0, 2);
    HostTensor out = sentinel(r.out_dtype, r.out_shape);
    const mantissa::Status s =
        mantissa::swi_glu_grad({.y_grad = view(g), .x = view(x), .out = view(out)}, {.dim = r.dim});
    EXPECT_EQ(s.code(), StatusCode::kParamInvalid) << s.message();
    EXPECT_NE(s.message().find("SwiGluGrad"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(r.needle), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(out));
    aclTensor* ag = acl(view(g));
    aclTensor* ax = acl(view(x));
    aclTensor* ao = acl(view(out));
    const aclnnStatus st = mt::run_two_phases(
        [&](uint64_t* size, aclOpExecutor** e) {
          return aclnnSwiGluGradGetWorkspaceSize(ag, ax, r.dim, ao, size, e);
        },
        grad_two);
    EXPECT_EQ(st, ACLNN_ERR_PARAM_INVALID) << aclGetRecentErrMsg();
    EXPECT_TRUE(untouched(out));
    aclDestroyTensor(ag);
    aclDestroyTensor(ax);
    aclDestroyTensor(ao);
  }
  // out overlapping y_grad, and out overlapping x without being it: 161002.
  HostTensor x = filled(f32, {4, 6}, 0.0, 1.0, 1);
  HostTensor g = filled(f32, {4, 3}, 0.0, 1.0, 2);
  HostTensor big = filled(f32, {25}, 0.0, 1.0, 3);
  TensorView shifted = view(big);
  shifted.rank = 2;
  shifted.shape = {4, 6};
  shifted.data = static_cast<float*>(shifted.data) + 1;
  TensorView xv = view(big);
  xv.rank = 2;
  xv.shape = {4, 6};
  EXPECT_EQ(mantissa::swi_glu_grad({.y_grad = view(g), .x = xv, .out = shifted}).code(),
            StatusCode::kParamInvalid);
  TensorView gv = view(big);
  gv.rank = 2;
  gv.shape = {4, 3};
  EXPECT_EQ(mantissa::swi_glu_grad({.y_grad = gv, .x = view(x), .out = shifted}).code(),
            StatusCode::kParamInvalid);
  // Null handles: 161001.
  HostTensor out = sentinel(f32, {4, 6});
  aclTensor* ag = acl(view(g));
  aclTensor* ax = acl(view(x));
  aclTensor* ao = acl(view(out));
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnSwiGluGradGetWorkspaceSize(nullptr, ax, -1, ao, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnSwiGluGradGetWorkspaceSize(ag, nullptr, -1, ao, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnSwiGluGradGetWorkspaceSize(ag, ax, -1, nullptr, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(untouched(out));
  aclDestroyTensor(ag);
  aclDestroyTensor(ax);
  aclDestroyTensor(ao);
}

// Empty tensors are accepted and nothing is written.
TEST(SwiGlu, EmptyTensors) {
  for (const auto& [shape, dim] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{0, 6}, -1}, {{3, 0}, -1}, {{0, 4}, 0}, {{2, 0, 4}, 2}}) {
    HostTensor x(DType::kFloat32, shape);
    HostTensor y = sentinel(DType::kFloat32, halved(shape, dim));
    EXPECT_TRUE(mantissa::swi_glu({.x = view(x), .out = view(y)}, {.dim = dim}).ok());
    HostTensor g(DType::kFloat32, halved(shape, dim));
    HostTensor dx = sentinel(DType::kFloat32, shape);
    EXPECT_TRUE(
        mantissa::swi_glu_grad({.y_grad = view(g), .x = view(x), .out = view(dx)}, {.dim = dim})
            .ok());
  }
}

// ---- Strided tensors through aclnn, and op-by-name ----------------------------------------------

// x [R, 2C] held transposed in memory (strides {1, R}), out and y_grad likewise, split along
// dim 1 and along dim 0 of the same view: staged through the workspace, the same bits as the
// contiguous calls.
TEST(SwiGlu, StridedThroughAclnn) {
  constexpr int64_t kRows = 38, kCols = 2 * 19;
  for (DType d : kDtypes) {
    for (int64_t dim : {1, 0}) {
      SCOPED_TRACE(std::string(mantissa::dtype_name(d)) + " dim " + std::to_string(dim));
      HostTensor x = filled(d, {kRows, kCols}, 0.0, 3.0, 5);
      const std::vector<int64_t> hs = halved({kRows, kCols}, dim);
      HostTensor g = filled(d, hs, 0.0, 1.0, 6);
      const HostTensor ref = golden32(x, dim);
      const HostTensor ref_grad = golden32_grad(g, x, dim);
      // The transposed copy of a [r, c] tensor: element (i, j) at j * r + i.
      const auto transposed = [&](const HostTensor& t) {
        HostTensor tt(d, {t.shape[1], t.shape[0]});
        for (int64_t i = 0; i < t.shape[0]; ++i) {
          for (int64_t j = 0; j < t.shape[1]; ++j) {
            tt.set_bits(j * t.shape[0] + i, t.bits(i * t.shape[1] + j));
          }
        }
        return tt;
      };
      HostTensor xt = transposed(x), gt = transposed(g);
      HostTensor yt = sentinel(d, {hs[1], hs[0]}), dxt = sentinel(d, {kCols, kRows});
      aclTensor* ax = acl(TensorView(xt.data(), d, {kRows, kCols}), {1, kRows}, {kCols, kRows});
      aclTensor* ay = acl(TensorView(yt.data(), d, {hs[0], hs[1]}), {1, hs[0]}, {hs[1], hs[0]});
      aclTensor* ag = acl(TensorView(gt.data(), d, {hs[0], hs[1]}), {1, hs[0]}, {hs[1], hs[0]});
      aclTensor* adx = acl(TensorView(dxt.data(), d, {kRows, kCols}), {1, kRows}, {kCols, kRows});
      uint64_t size = 0;
      ASSERT_EQ(mt::run_two_phases(
                    [&](uint64_t* s, aclOpExecutor** e) {
                      const aclnnStatus st = aclnnSwiGluGetWorkspaceSize(ax, dim, ay, s, e);
                      size = *s;
                      return st;
                    },
                    forward_two),
                ACLNN_SUCCESS)
          << aclGetRecentErrMsg();
      EXPECT_GT(size, 0u);
      ASSERT_EQ(mt::run_two_phases(
                    [&](uint64_t* s, aclOpExecutor** e) {
                      return aclnnSwiGluGradGetWorkspaceSize(ag, ax, dim, adx, s, e);
                    },
                    grad_two),
                ACLNN_SUCCESS)
          << aclGetRecentErrMsg();
      expect_same_bits(yt, transposed(ref), "out");
      expect_same_bits(dxt, transposed(ref_grad), "grad out");
      aclDestroyTensor(ax);
      aclDestroyTensor(ay);
      aclDestroyTensor(ag);
      aclDestroyTensor(adx);
    }
  }
}

// Op-by-name with upstream's graph: SwiGlu (x -> y) and SwiGluGrad (y_grad, x -> x_grad), the
// attribute dim (default -1): the C++ API's bits; an odd split refused with nothing written.
TEST(SwiGlu, OpByName) {
  namespace as = mt::aclop_support;
  for (aclDataType dt : as::training_dtypes()) {
    const DType d = static_cast<DType>(dt);
    for (bool set_dim : {false, true}) {
      const int64_t dim = set_dim ? 0 : -1;
      SCOPED_TRACE(std::string(dtype_name(d)) + (set_dim ? " dim 0" : " dim by default"));
      const std::vector<int64_t> shape{6, 8};
      const std::vector<int64_t> hs = halved(shape, dim);
      HostTensor x = filled(d, shape, 0.0, 3.0, 8);
      HostTensor g = filled(d, hs, 0.0, 1.0, 9);
      const HostTensor ref = golden32(x, dim), ref_grad = golden32_grad(g, x, dim);

      as::Call fwd("SwiGlu");
      fwd.add_in(dt, shape);
      fwd.add_out(dt, hs);
      if (set_dim) fwd.set_int("dim", dim);
      fwd.allocate();
      std::memcpy(fwd.in(0).mem.data(), x.data(), x.bytes.size());
      ASSERT_EQ(fwd.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
      ASSERT_EQ(std::memcmp(fwd.out(0).mem.data(), ref.data(), ref.bytes.size()), 0);

      as::Call bwd("SwiGluGrad");
      bwd.add_in(dt, hs);
      bwd.add_in(dt, shape);
      bwd.add_out(dt, shape);
      if (set_dim) bwd.set_int("dim", dim);
      bwd.allocate();
      std::memcpy(bwd.in(0).mem.data(), g.data(), g.bytes.size());
      std::memcpy(bwd.in(1).mem.data(), x.data(), x.bytes.size());
      ASSERT_EQ(bwd.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
      ASSERT_EQ(std::memcmp(bwd.out(0).mem.data(), ref_grad.data(), ref_grad.bytes.size()), 0);
    }
    as::Call odd("SwiGlu");
    odd.add_in(dt, {4, 5});
    odd.add_out(dt, {4, 2});
    as::expect_rejected_untouched(odd, ACLNN_ERR_PARAM_INVALID, "odd split", "size 5");
    as::Call bad_dim("SwiGluGrad");
    bad_dim.add_in(dt, {4, 3});
    bad_dim.add_in(dt, {4, 6});
    bad_dim.add_out(dt, {4, 6});
    bad_dim.set_int("dim", 2);
    as::expect_rejected_untouched(bad_dim, ACLNN_ERR_PARAM_INVALID, "dim 2", "dim is 2");
  }
}

}  // namespace

}  // namespace mantissa::testing
