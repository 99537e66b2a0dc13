// DynamicMxQuant: bits on every target and thread count against the kit's golden32 (every
// input dtype, both FP8 formats, both scale rules, last and earlier axes, odd block counts,
// partial blocks, blocksize 64); each scale rule on blocks whose amax is a power of two, just
// below one, zero, subnormal, Inf or NaN, written by hand; the mxscale layout (pairs, padding,
// interleaving for an earlier axis) from blocks of known amax; validation through the C++ API;
// aclnn V3 and V1 with a strided input; op-by-name.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dynamic_mx_quant.h"
#include "aclnnop/aclnn_dynamic_mx_quant_v3.h"
#include "mantissa/lowp.h"
#include "mantissa/ops/dynamic_mx_quant.h"
#include "op_support.h"
#include "ops/dynamic_mx_quant/dynamic_mx_quant_desc.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::DynamicMxQuantOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::run_two_phases;
using mt::sentinel;
using mt::untouched;
using mt::view;

std::vector<int64_t> scale_shape(std::vector<int64_t> x, int64_t axis, int64_t bs) {
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  const int64_t blocks = (x[axis] + bs - 1) / bs;
  x[axis] = (blocks + 1) / 2;
  x.push_back(2);
  return x;
}

struct Call {
  HostTensor x, y, s;
  mantissa::DynamicMxQuantParams p;
  Call(HostTensor in, DType yd, int64_t axis, int64_t bs, int64_t alg, float mlb = 0.0f)
      : x(std::move(in)),
        y(sentinel(yd, x.shape)),
        s(sentinel(DType::kFloat8E8M0, scale_shape(x.shape, axis, bs))) {
    p = {.axis = axis, .dst_type = yd, .blocksize = bs, .scale_alg = alg, .max_low_bound = mlb};
  }
  mantissa::DynamicMxQuantTensors tensors() {
    return {.x = view(x), .y = view(y), .mxscale = view(s)};
  }
  Status run() { return mantissa::dynamic_mx_quant(tensors(), p); }
};

TEST(DynamicMxQuant, BitExactOnEveryTargetAndThreadCount) {
  struct Shape {
    std::vector<int64_t> dims;
    int64_t axis, bs;
  };
  const std::vector<Shape> shapes{
      {{4, 96}, -1, 32},      // 3 blocks: an odd count, padded
      {{3, 100}, 1, 32},      // a partial last block
      {{2, 70, 19}, 1, 32},   // an earlier axis, inner 19 (vectors and tails)
      {{65, 8}, 0, 64},       // the first axis, blocksize 64
      {{5, 2048}, -1, 1024},  // the largest blocksize
      {{600, 130}, -1, 32},   // several parallel pieces
      {{7}, 0, 32},           // rank 1, one short block
  };
  for (DType xd : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (DType yd : {DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
      for (int64_t alg : {0, 1}) {
        for (const Shape& sh : shapes) {
          SCOPED_TRACE(std::string(mantissa::dtype_name(xd)) + " -> " + mantissa::dtype_name(yd) +
                       " alg " + std::to_string(alg) + " axis " + std::to_string(sh.axis) +
                       " rank " + std::to_string(sh.dims.size()));
          const float mlb = alg == 1 ? 0.25f : 0.0f;
          Call ref(filled(xd, sh.dims, 0.0, 20.0, 5), yd, sh.axis, sh.bs, alg, mlb);
          mt::apply_golden32<DynamicMxQuantOp>(ref.tensors(), ref.p);
          mt::for_each_target_and_thread_count([&](const std::string&, int) {
            Call got(filled(xd, sh.dims, 0.0, 20.0, 5), yd, sh.axis, sh.bs, alg, mlb);
            ASSERT_TRUE(got.run().ok());
            expect_same_bits(got.y, ref.y, "y");
            expect_same_bits(got.s, ref.s, "mxscale");
          });
        }
      }
    }
  }
}

// One 32-element block per row, E4M3FN: the row's amax is its first element, the others 0.5.
// Expected codes and first elements by the rules (docs/ops/dynamic_mx_quant.md).
TEST(DynamicMxQuant, ScaleRulesOnSpecialBlocks) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Row {
    float amax;
    uint32_t ocp_code;
    float ocp_y0;  // NaN: the NaN code
    uint32_t cublas_code;
    float cublas_y0;
  };
  // E4M3FN: emax 8. OCP: code = E(amax) - 8. cuBLAS: S = amax * fp32(1/448), exponent rounded up.
  const std::vector<Row> rows{
      {1.0f, 119, 256.0f, 119, 256.0f},    // a power of two
      {448.0f, 127, 448.0f, 127, 448.0f},  // S exactly 1: not rounded up
      {896.0f, 128, 448.0f, 128, 448.0f},  // S exactly 2
      {0.99f, 118, 448.0f, 119, 256.0f},   // just below one: OCP saturates (0.99 * 2^9 = 506.9)
      {447.0f, 127, 448.0f, 127, 448.0f},  // both factor 1: 447 rounds to 448
      {0.0f, 0, 0.0f, 0, 0.0f},            // zero block: code 0, zeros
      {1e-40f, 0, 0.0f, 0, 0.0f},          // subnormal amax: OCP code 0 (factor 0); cuBLAS below
      {inf, 0xFF, nan, 0xFF, nan},         // an infinity: the NaN code
      {nan, 0xFF, nan, 0xFF, nan},         // a NaN
  };
  for (const Row& r : rows) {
    for (int64_t alg : {0, 1}) {
      SCOPED_TRACE("amax " + std::to_string(r.amax) + " alg " + std::to_string(alg));
      HostTensor x(DType::kFloat32, {1, 32});
      for (int64_t i = 0; i < 32; ++i)
        x.set_bits(i, std::bit_cast<uint32_t>(i == 0 ? r.amax : 0.0f));
      if (r.amax > 0.5f || std::isnan(r.amax)) x.set_bits(1, std::bit_cast<uint32_t>(0.5f));
      mt::for_each_target_and_thread_count(
          [&](const std::string&, int) {
            Call c(x, DType::kFloat8E4M3FN, -1, 32, alg);
            ASSERT_TRUE(c.run().ok());
            const uint32_t code = alg == 0 ? r.ocp_code : r.cublas_code;
            const float y0 = alg == 0 ? r.ocp_y0 : r.cublas_y0;
            if (!(r.amax == 1e-40f && alg == 1)) {
              EXPECT_EQ(c.s.bits(0), code);
            }
            EXPECT_EQ(c.s.bits(1), 0u);  // the pad of one block
            if (std::isnan(y0)) {
              EXPECT_EQ(c.y.bits(0), 0x7Fu);
            } else if (!(r.amax == 1e-40f && alg == 1)) {
              EXPECT_EQ(c.y.value(0), y0);
            }
          },
          {1});
    }
  }
  // cuBLAS with a subnormal amax: S = 1e-40 * fp32(1/448) is subnormal with a mantissa at most
  // half: code 0, factor 2^127, so 1e-40 becomes 1e-40 * 2^127 = 0.0170 -> E4M3 0.017578125.
  HostTensor x(DType::kFloat32, {32});
  for (int64_t i = 0; i < 32; ++i) x.set_bits(i, std::bit_cast<uint32_t>(i == 0 ? 1e-40f : 0.0f));
  Call c(x, DType::kFloat8E4M3FN, 0, 32, 1);
  ASSERT_TRUE(c.run().ok());
  EXPECT_EQ(c.s.bits(0), 0u);
  EXPECT_EQ(c.y.value(0), 0.017578125);
  // max_low_bound lifts a small amax: amax 1 with bound 448 gives S = 1, code 127, factor 1.
  HostTensor xb(DType::kFloat32, {32});
  for (int64_t i = 0; i < 32; ++i) xb.set_bits(i, std::bit_cast<uint32_t>(i == 0 ? 1.0f : 0.0f));
  Call cb(xb, DType::kFloat8E4M3FN, 0, 32, 1, 448.0f);
  ASSERT_TRUE(cb.run().ok());
  EXPECT_EQ(cb.s.bits(0), 127u);
  EXPECT_EQ(cb.y.value(0), 1.0);
  // E5M2: emax 15; amax 1 -> OCP code 112 (2^-15), y = 2^15 = 32768.
  Call c5(xb, DType::kFloat8E5M2, 0, 32, 0);
  ASSERT_TRUE(c5.run().ok());
  EXPECT_EQ(c5.s.bits(0), 112u);
  EXPECT_EQ(c5.y.value(0), 32768.0);
}

// x [2, 70, 3] along axis 1, blocks of 32: 3 blocks, 2 pairs; mxscale [2, 2, 3, 2], element
// [o, j, i, t] the scale of block 2j + t of column (o, i), [o, 1, i, 1] the pad. Block (o, b, i)
// holds amax 2^(o * 10 + b * 3 + i): its OCP E4M3 code is 127 + o * 10 + b * 3 + i - 8.
// Published vectors. The OCP MX specification's element tables (largest normal, smallest normal,
// largest and smallest subnormal of E4M3, E5M2 and E2M1; E8M0's range and NaN), decoded from
// their codes. Microsoft's microxcaling test vectors, through DynamicMxQuant with the OCP scale
// rule: a 32-element E4M3 block whose every element is off a tie (its expected values hold for
// both of microxcaling's round modes), and the block of its "E4M3 fix" test, where 485 and 475
// saturate to 448 and 400, halfway between 384 and 416, goes to 416 under microxcaling's default
// round-half-away-from-zero and to 384 here (round to nearest even, the OCP conversion's rule).
TEST(DynamicMxQuant, PublishedVectors) {
  struct Row {
    DType dtype;
    uint32_t code;
    double value;
  };
  const std::vector<Row> ocp{{DType::kFloat8E4M3FN, 0x7E, 448.0},
                             {DType::kFloat8E4M3FN, 0x08, 0x1p-6},
                             {DType::kFloat8E4M3FN, 0x07, 0.875 * 0x1p-6},
                             {DType::kFloat8E4M3FN, 0x01, 0x1p-9},
                             {DType::kFloat8E5M2, 0x7B, 57344.0},
                             {DType::kFloat8E5M2, 0x04, 0x1p-14},
                             {DType::kFloat8E5M2, 0x03, 0.75 * 0x1p-14},
                             {DType::kFloat8E5M2, 0x01, 0x1p-16},
                             {DType::kFloat4E2M1, 0x7, 6.0},
                             {DType::kFloat4E2M1, 0x2, 1.0},
                             {DType::kFloat4E2M1, 0x1, 0.5},
                             {DType::kFloat8E8M0, 0x00, 0x1p-127},
                             {DType::kFloat8E8M0, 0xFE, 0x1p127},
                             {DType::kFloat8E8M0, 0x7F, 1.0}};
  // The library's conversion, and for the element formats the kit's own decoding.
  auto decoded = [](uint32_t code, DType d) {
    const uint8_t byte = static_cast<uint8_t>(code);
    float f = 0.0f;
    EXPECT_TRUE(convert_lowp_to_fp32(d, &byte, &f, 1));
    if (precision::is_fp8(d)) {
      const double k = precision::decode_fp8(code, d);
      EXPECT_TRUE(k == f || (std::isnan(k) && std::isnan(f))) << k << " " << f;
    }
    if (precision::is_fp4(d)) {
      EXPECT_EQ(precision::decode_fp4(code, d), f);
    }
    return static_cast<double>(f);
  };
  for (const Row& r : ocp) {
    EXPECT_EQ(decoded(r.code, r.dtype), r.value) << dtype_name(r.dtype) << " code " << r.code;
    if (r.dtype != DType::kFloat8E8M0) {
      EXPECT_EQ(decoded(r.code | (r.dtype == DType::kFloat4E2M1 ? 0x8u : 0x80u), r.dtype),
                -r.value);
    }
  }
  EXPECT_TRUE(std::isnan(decoded(0xFF, DType::kFloat8E8M0)));
  EXPECT_TRUE(std::isnan(decoded(0x7F, DType::kFloat8E4M3FN)));
  EXPECT_TRUE(std::isinf(decoded(0x7C, DType::kFloat8E5M2)));
  EXPECT_TRUE(std::isnan(decoded(0x7D, DType::kFloat8E5M2)));

  auto quantized = [](const std::vector<double>& v) {
    HostTensor x(DType::kFloat32, {1, 32});
    for (int64_t i = 0; i < 32; ++i) {
      x.set_bits(i, precision::round_to_bits(i < static_cast<int64_t>(v.size()) ? v[i] : 0.0,
                                             DType::kFloat32));
    }
    Call c(x, DType::kFloat8E4M3FN, -1, 32, 0);
    EXPECT_TRUE(c.run().ok());
    std::vector<double> out;
    const double factor = std::ldexp(1.0, static_cast<int>(c.s.bits(0)) - 127);
    for (std::size_t i = 0; i < v.size(); ++i) {
      out.push_back(precision::decode_fp8(c.y.bits(static_cast<int64_t>(i)), DType::kFloat8E4M3FN) *
                    factor);
    }
    return out;
  };
  const std::vector<double> x{-0.582733273506, -0.256973713636, 0.506033003330,  0.400039970875,
                              -0.437093466520, 1.275019764900,  -2.123294353485, 1.514909625053,
                              -2.660086154938, -0.200791791081, -0.060985822231, -0.209203109145,
                              2.385987281799,  0.062245476991,  0.217003762722,  -0.857734560966,
                              0.507945835590,  0.896152675152,  -0.751049160957, -0.488164335489,
                              0.805381953716,  -0.172028362751, 0.271137863398,  -0.503807783127,
                              1.879478693008,  -0.294227510691, 0.968807995319,  0.670037031174,
                              -0.871595799923, 0.304561793804,  -0.567594051361, -1.265962004662};
  const std::vector<double> t{-0.5625,   -0.25,   0.5,       0.40625, -0.4375,   1.25, -2.0,
                              1.5,       -2.75,   -0.203125, -0.0625, -0.203125, 2.5,  0.0625,
                              0.21875,   -0.875,  0.5,       0.875,   -0.75,     -0.5, 0.8125,
                              -0.171875, 0.28125, -0.5,      1.875,   -0.28125,  1.0,  0.6875,
                              -0.875,    0.3125,  -0.5625,   -1.25};
  EXPECT_EQ(quantized(x), t);
  EXPECT_EQ(quantized({485, 475, 400, -485, -475, -450, 0x1p-6, -0x1p-6}),
            (std::vector<double>{448, 448, 384, -448, -448, -448, 0x1p-6, -0x1p-6}));
}

TEST(DynamicMxQuant, ScaleLayoutForAnEarlierAxis) {
  HostTensor x(DType::kFloat32, {2, 70, 3});
  for (int64_t o = 0; o < 2; ++o) {
    for (int64_t l = 0; l < 70; ++l) {
      for (int64_t i = 0; i < 3; ++i) {
        const int64_t b = l / 32;
        const float v =
            l % 32 == 5 ? std::ldexp(1.0f, static_cast<int>(o * 10 + b * 3 + i)) : 0.25f;
        x.set_bits((o * 70 + l) * 3 + i, std::bit_cast<uint32_t>(v));
      }
    }
  }
  Call c(x, DType::kFloat8E4M3FN, 1, 32, 0);
  ASSERT_EQ(c.s.shape, (std::vector<int64_t>{2, 2, 3, 2}));
  ASSERT_TRUE(c.run().ok());
  for (int64_t o = 0; o < 2; ++o) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t i = 0; i < 3; ++i) {
        for (int64_t t = 0; t < 2; ++t) {
          const int64_t b = 2 * j + t;
          const uint32_t want = b < 3 ? static_cast<uint32_t>(127 + o * 10 + b * 3 + i - 8) : 0u;
          EXPECT_EQ(c.s.bits(((o * 2 + j) * 3 + i) * 2 + t), want)
              << "o " << o << " j " << j << " i " << i << " t " << t;
        }
      }
    }
  }
}

// ---- FLOAT4 destinations -------------------------------------------------------------------

TEST(DynamicMxQuantFp4, BitExactOnEveryTargetAndThreadCount) {
  struct Shape {
    std::vector<int64_t> dims;
    int64_t axis, bs;
  };
  const std::vector<Shape> shapes{
      {{4, 96}, -1, 32},     // 3 blocks: an odd count, padded
      {{3, 100}, 1, 32},     // a partial last block
      {{2, 70, 18}, 1, 32},  // an earlier axis
      {{65, 8}, 0, 64},      // the first axis, blocksize 64
  };
  for (DType xd : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (DType yd : {DType::kFloat4E2M1, DType::kFloat4E1M2}) {
      for (auto mode : {mantissa::MxRoundMode::kRint, mantissa::MxRoundMode::kFloor,
                        mantissa::MxRoundMode::kRound}) {
        for (const Shape& sh : shapes) {
          SCOPED_TRACE(std::string(mantissa::dtype_name(xd)) + " -> " + mantissa::dtype_name(yd) +
                       " mode " + mantissa::mx_round_mode_name(mode) + " axis " +
                       std::to_string(sh.axis));
          Call ref(filled(xd, sh.dims, 0.0, 20.0, 5), yd, sh.axis, sh.bs, 0);
          ref.p.round_mode = mode;
          mt::apply_golden32<DynamicMxQuantOp>(ref.tensors(), ref.p);
          mt::for_each_target_and_thread_count(
              [&](const std::string&, int) {
                Call got(filled(xd, sh.dims, 0.0, 20.0, 5), yd, sh.axis, sh.bs, 0);
                got.p.round_mode = mode;
                ASSERT_TRUE(got.run().ok());
                expect_same_bits(got.y, ref.y, "y");
                expect_same_bits(got.s, ref.s, "mxscale");
              },
              {1, 3});
        }
      }
    }
  }
  // scale_alg 2 (FLOAT4_E2M1, blocksize 32): the bf16 dtype-range rule for dst_type_max 0, 6 and
  // 7, cuBLAS's for the others.
  for (DType xd : {DType::kFloat16, DType::kBFloat16}) {
    for (float dtm : {0.0f, 6.0f, 7.0f, 10.0f}) {
      SCOPED_TRACE(std::string(mantissa::dtype_name(xd)) + " dst_type_max " + std::to_string(dtm));
      Call ref(filled(xd, {6, 128}, 0.0, 20.0, 9), DType::kFloat4E2M1, -1, 32, 2);
      ref.p.dst_type_max = dtm;
      mt::apply_golden32<DynamicMxQuantOp>(ref.tensors(), ref.p);
      Call got(filled(xd, {6, 128}, 0.0, 20.0, 9), DType::kFloat4E2M1, -1, 32, 2);
      got.p.dst_type_max = dtm;
      ASSERT_TRUE(got.run().ok());
      expect_same_bits(got.y, ref.y, "y");
      expect_same_bits(got.s, ref.s, "mxscale");
    }
  }
}

// One 32-element bf16 block whose amax is 6 (E2M1: code 129 - 2 = 127, factor 1), the values
// placed on ties and between grid points; every round mode's codes by hand.
TEST(DynamicMxQuantFp4, E2M1RoundModesByHand) {
  const std::vector<float> v{0.25f, 0.75f, 2.5f, 5.0f, -0.25f, -5.0f, 6.0f, -0.0f, 1.75f, 7.5f};
  // Codes: sign in bit 3; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.
  const std::vector<uint32_t> rint{0x0, 0x2, 0x4, 0x6, 0x8, 0xE, 0x7, 0x8, 0x4, 0x7};
  const std::vector<uint32_t> floor{0x0, 0x1, 0x4, 0x6, 0x9, 0xF, 0x7, 0x8, 0x3, 0x7};
  const std::vector<uint32_t> round{0x1, 0x2, 0x5, 0x7, 0x9, 0xF, 0x7, 0x8, 0x4, 0x7};
  for (auto [mode, want] : {std::pair{mantissa::MxRoundMode::kRint, &rint},
                            std::pair{mantissa::MxRoundMode::kFloor, &floor},
                            std::pair{mantissa::MxRoundMode::kRound, &round}}) {
    SCOPED_TRACE(mantissa::mx_round_mode_name(mode));
    HostTensor x(DType::kBFloat16, {1, 32});
    for (int64_t i = 0; i < 32; ++i) {
      x.set_bits(i, precision::round_to_bits(i < 10 ? v[i] : 1.0, DType::kBFloat16));
    }
    Call c(x, DType::kFloat4E2M1, -1, 32, 0);
    c.p.round_mode = mode;
    ASSERT_TRUE(c.run().ok());
    // 7.5 is the block's amax: E = 129, code 127; the pad code is 0.
    EXPECT_EQ(c.s.bits(0), 127u);
    EXPECT_EQ(c.s.bits(1), 0u);
    for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(c.y.bits(i), (*want)[i]) << "value " << v[i];
    // Packing: element 2j in the low nibble of byte j.
    EXPECT_EQ(c.y.bytes[0], (*want)[0] | ((*want)[1] << 4));
  }
}

TEST(DynamicMxQuantFp4, E1M2AndTheSpecialBlocks) {
  // E1M2 (magnitudes k / 4): amax 1.5 gives code 127 - 0 = 127, factor 1.
  HostTensor x(DType::kFloat16, {3, 32});
  const std::vector<float> v{1.5f, 0.3f, 0.375f, -0.375f, 1.9f};
  for (int64_t i = 0; i < 32; ++i) {
    x.set_bits(i, precision::round_to_bits(i < 5 ? v[i] : 0.0, DType::kFloat16));
  }
  // Row 1: amax 2^-20 (E = 107): code 107, factor 2^20: 2^-20 -> 1 (code 4), 2^-21 -> 0.5 (2).
  for (int64_t i = 32; i < 64; ++i) {
    x.set_bits(i, precision::round_to_bits(i % 2 ? -0x1p-20 : 0x1p-21, DType::kFloat16));
  }
  // Row 2: a NaN: code 0xFF, every element +0 (FLOAT4 has no NaN).
  for (int64_t i = 64; i < 96; ++i) x.set_bits(i, precision::round_to_bits(-1.0, DType::kFloat16));
  x.set_bits(70, 0x7E00u);
  struct Want {
    mantissa::MxRoundMode mode;
    std::vector<uint32_t> codes;
  };
  for (const Want& w : {Want{mantissa::MxRoundMode::kRint, {6, 1, 2, 0xA, 7}},
                        Want{mantissa::MxRoundMode::kFloor, {6, 1, 1, 0xA, 7}},
                        Want{mantissa::MxRoundMode::kRound, {6, 1, 2, 0xA, 7}}}) {
    SCOPED_TRACE(mantissa::mx_round_mode_name(w.mode));
    Call c(x, DType::kFloat4E1M2, -1, 32, 0);
    c.p.round_mode = w.mode;
    ASSERT_TRUE(c.run().ok());
    EXPECT_EQ(c.s.bits(0), 127u);
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(c.y.bits(i), w.codes[i]) << "value " << v[i];
    EXPECT_EQ(c.s.bits(2), 107u);
    for (int64_t i = 32; i < 64; ++i) EXPECT_EQ(c.y.bits(i), i % 2 ? 0xCu : 0x2u) << i;
    EXPECT_EQ(c.s.bits(4), 0xFFu);
    for (int64_t i = 64; i < 96; ++i) EXPECT_EQ(c.y.bits(i), 0u) << i;
  }
  // E2M1 on a bf16 block whose amax is 2^-126 (E = 1 <= emax 2): code 0, zeros of each sign.
  HostTensor t(DType::kBFloat16, {1, 32});
  for (int64_t i = 0; i < 32; ++i) {
    t.set_bits(i, precision::round_to_bits(i % 2 ? -0x1p-126 : 0x1p-127, DType::kBFloat16));
  }
  Call c(t, DType::kFloat4E2M1, -1, 32, 0);
  ASSERT_TRUE(c.run().ok());
  EXPECT_EQ(c.s.bits(0), 0u);
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(c.y.bits(i), i % 2 ? 0x8u : 0x0u) << i;
}

TEST(DynamicMxQuantFp4, Validation) {
  HostTensor odd = filled(DType::kBFloat16, {4, 33}, 0.0, 1.0, 1);
  Call c(odd, DType::kFloat4E2M1, 0, 32, 0);
  Status s = c.run();
  EXPECT_EQ(s.code(), StatusCode::kParamInvalid);
  EXPECT_NE(std::string(s.message()).find("even"), std::string::npos) << s.message();
  EXPECT_TRUE(untouched(c.y) && untouched(c.s));
  for (auto [yd, alg, bs, dtm] :
       {std::tuple{DType::kFloat4E1M2, 2, 32, 0.0f}, std::tuple{DType::kFloat4E2M1, 1, 32, 0.0f},
        std::tuple{DType::kFloat4E2M1, 2, 64, 0.0f},
        std::tuple{DType::kFloat4E2M1, 2, 32, 13.0f}}) {
    Call d(filled(DType::kBFloat16, {4, 64}, 0.0, 1.0, 1), yd, -1, bs, alg);
    d.p.dst_type_max = dtm;
    EXPECT_EQ(d.run().code(), StatusCode::kParamInvalid)
        << mantissa::dtype_name(yd) << " alg " << alg << " bs " << bs << " dtm " << dtm;
    EXPECT_TRUE(untouched(d.y) && untouched(d.s));
  }
}

TEST(DynamicMxQuantValidation, RowsThroughTheCppApi) {
  struct Row {
    const char* what;
    std::function<void(Call&)> mutate;
    StatusCode code;
    const char* message;
  };
  HostTensor s_bad = sentinel(DType::kFloat8E8M0, {4, 1, 2});
  HostTensor s_uint8 = sentinel(DType::kUInt8, {4, 2, 2});
  HostTensor y5 = sentinel(DType::kFloat8E5M2, {4, 96});
  const std::vector<Row> rows{
      {"fp4 into an fp8 y", [](Call& c) { c.p.dst_type = DType::kFloat4E2M1; },
       StatusCode::kParamInvalid, "differs from dst_type"},
      {"int8", [](Call& c) { c.p.dst_type = DType::kInt8; }, StatusCode::kParamInvalid,
       "dst_type 2"},
      {"y not dst", [&](Call& c) { c.p.dst_type = DType::kFloat8E4M3FN, c.y = y5; },
       StatusCode::kParamInvalid, "differs from dst_type"},
      {"floor", [](Call& c) { c.p.round_mode = mantissa::MxRoundMode::kFloor; },
       StatusCode::kParamInvalid, "rint"},
      {"blocksize 48", [](Call& c) { c.p.blocksize = 48; }, StatusCode::kParamInvalid,
       "blocksize 48"},
      {"blocksize 2048", [](Call& c) { c.p.blocksize = 2048; }, StatusCode::kParamInvalid,
       "blocksize"},
      {"scale_alg 2", [](Call& c) { c.p.scale_alg = 2; }, StatusCode::kParamInvalid, "scale_alg"},
      {"dst_type_max", [](Call& c) { c.p.dst_type_max = 5.0f; }, StatusCode::kParamInvalid,
       "dst_type_max"},
      {"bound with alg 0", [](Call& c) { c.p.max_low_bound = 1.0f; }, StatusCode::kParamInvalid,
       "max_low_bound"},
      {"negative bound",
       [](Call& c) {
         c.p.scale_alg = 1;
         c.p.max_low_bound = -1.0f;
       },
       StatusCode::kParamInvalid, "max_low_bound"},
      {"axis 2", [](Call& c) { c.p.axis = 2; }, StatusCode::kParamInvalid, "axis"},
      {"scale shape", [&](Call& c) { c.s = s_bad; }, StatusCode::kParamInvalid, "mxscale shape"},
      {"scale uint8", [&](Call& c) { c.s = s_uint8; }, StatusCode::kParamInvalid, "mxscale"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    Call c(filled(DType::kFloat32, {4, 96}, 0.0, 3.0, 1), DType::kFloat8E4M3FN, -1, 32, 0);
    r.mutate(c);
    const Status st = c.run();
    EXPECT_EQ(st.code(), r.code) << st.message();
    EXPECT_NE(std::string(st.message()).find(r.message), std::string::npos) << st.message();
    EXPECT_NE(std::string(st.message()).find("DynamicMxQuant"), std::string::npos);
    EXPECT_TRUE(untouched(c.y));
    EXPECT_TRUE(untouched(c.s));
  }
}

TEST(DynamicMxQuantAclnn, V3AndV1WithAStridedInput) {
  Call ref(filled(DType::kBFloat16, {4, 64}, 0.0, 30.0, 3), DType::kFloat8E5M2, -1, 32, 1, 0.5f);
  ASSERT_TRUE(ref.run().ok());
  // x^T stored as [64][4] and viewed as [4, 64] with strides {1, 4}.
  HostTensor xt(DType::kBFloat16, {64, 4});
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < 64; ++i) xt.set_bits(i * 4 + r, ref.x.bits(r * 64 + i));
  }
  TensorView xv = view(xt);
  xv.shape = {4, 64};
  HostTensor y = sentinel(DType::kFloat8E5M2, {4, 64}), s = sentinel(DType::kFloat8E8M0, {4, 1, 2});
  aclTensor* xa = acl(xv, {1, 4}, {64, 4});
  aclTensor* ya = acl(view(y));
  aclTensor* sa = acl(view(s));
  char rint[] = "rint", floor_mode[] = "floor", bogus[] = "nearest";
  ASSERT_EQ(run_two_phases(
                [&](uint64_t* size, aclOpExecutor** e) {
                  return aclnnDynamicMxQuantV3GetWorkspaceSize(xa, -1, rint, 35, 32, 1, 0.0, 0.5,
                                                               ya, sa, size, e);
                },
                [](void* ws, uint64_t size, aclOpExecutor* e) {
                  return aclnnDynamicMxQuantV3(ws, size, e, nullptr);
                }),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(y, ref.y, "y");
  expect_same_bits(s, ref.s, "mxscale");
  // V1: no dstTypeMax or maxLowBound; a null roundMode is "rint".
  Call ref1(filled(DType::kBFloat16, {4, 64}, 0.0, 30.0, 3), DType::kFloat8E4M3FN, -1, 32, 0);
  ASSERT_TRUE(ref1.run().ok());
  HostTensor y1 = sentinel(DType::kFloat8E4M3FN, {4, 64}),
             s1 = sentinel(DType::kFloat8E8M0, {4, 1, 2});
  aclTensor* y1a = acl(view(y1));
  aclTensor* s1a = acl(view(s1));
  ASSERT_EQ(run_two_phases(
                [&](uint64_t* size, aclOpExecutor** e) {
                  return aclnnDynamicMxQuantGetWorkspaceSize(xa, 1, nullptr, 36, 32, 0, y1a, s1a,
                                                             size, e);
                },
                [](void* ws, uint64_t size, aclOpExecutor* e) {
                  return aclnnDynamicMxQuant(ws, size, e, nullptr);
                }),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(y1, ref1.y, "y (V1)");
  expect_same_bits(s1, ref1.s, "mxscale (V1)");
  // V3 into FLOAT4_E1M2 with "floor", the same strided x.
  Call ref4(filled(DType::kBFloat16, {4, 64}, 0.0, 30.0, 3), DType::kFloat4E1M2, -1, 32, 0);
  ref4.p.round_mode = mantissa::MxRoundMode::kFloor;
  ASSERT_TRUE(ref4.run().ok());
  HostTensor y4 = sentinel(DType::kFloat4E1M2, {4, 64}),
             s4 = sentinel(DType::kFloat8E8M0, {4, 1, 2});
  aclTensor* y4a = acl(view(y4));
  aclTensor* s4a = acl(view(s4));
  ASSERT_EQ(run_two_phases(
                [&](uint64_t* size, aclOpExecutor** e) {
                  return aclnnDynamicMxQuantV3GetWorkspaceSize(xa, -1, floor_mode, 41, 32, 0, 0.0,
                                                               0.0, y4a, s4a, size, e);
                },
                [](void* ws, uint64_t size, aclOpExecutor* e) {
                  return aclnnDynamicMxQuantV3(ws, size, e, nullptr);
                }),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(y4, ref4.y, "y (FLOAT4_E1M2)");
  expect_same_bits(s4, ref4.s, "mxscale (FLOAT4_E1M2)");
  aclDestroyTensor(y4a);
  aclDestroyTensor(s4a);
  // Refusals: nothing written.
  HostTensor y2 = sentinel(DType::kFloat8E5M2, {4, 64}),
             s2 = sentinel(DType::kFloat8E8M0, {4, 1, 2});
  aclTensor* y2a = acl(view(y2));
  aclTensor* s2a = acl(view(s2));
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnDynamicMxQuantV3GetWorkspaceSize(xa, -1, bogus, 35, 32, 0, 0.0, 0.0, y2a, s2a,
                                                  &size, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("nearest"), std::string::npos);
  EXPECT_EQ(aclnnDynamicMxQuantV3GetWorkspaceSize(xa, -1, floor_mode, 35, 32, 0, 0.0, 0.0, y2a, s2a,
                                                  &size, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(
      aclnnDynamicMxQuantV3GetWorkspaceSize(xa, -1, rint, 35, 32, 0, 0.0, 0.5, y2a, s2a, &size, &e),
      ACLNN_ERR_PARAM_INVALID);  // maxLowBound needs scaleAlg 1
  EXPECT_EQ(
      aclnnDynamicMxQuantV3GetWorkspaceSize(xa, -1, rint, 40, 32, 0, 0.0, 0.0, y2a, s2a, &size, &e),
      ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclnnDynamicMxQuantV3GetWorkspaceSize(nullptr, -1, rint, 35, 32, 0, 0.0, 0.0, y2a, s2a,
                                                  &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(untouched(y2));
  EXPECT_TRUE(untouched(s2));
  for (aclTensor* t : {xa, ya, sa, y1a, s1a, y2a, s2a}) aclDestroyTensor(t);
}

// By name: input x; outputs y and mxscale; attributes as in aclnn (round_mode a String).
TEST(DynamicMxQuantByName, InputsOutputsAndAttributes) {
  Call ref(filled(DType::kFloat16, {3, 70}, 0.0, 10.0, 8), DType::kFloat8E4M3FN, -1, 32, 0);
  ASSERT_TRUE(ref.run().ok());
  Call c(filled(DType::kFloat16, {3, 70}, 0.0, 10.0, 8), DType::kFloat8E4M3FN, -1, 32, 0);
  std::vector<int64_t> xs{3, 70}, ss{3, 2, 2};
  aclTensorDesc* in = aclCreateTensorDesc(ACL_FLOAT16, 2, xs.data(), ACL_FORMAT_ND);
  aclDataBuffer* ib = aclCreateDataBuffer(c.x.data(), c.x.bytes.size());
  aclTensorDesc* out[2] = {aclCreateTensorDesc(ACL_FLOAT8_E4M3FN, 2, xs.data(), ACL_FORMAT_ND),
                           aclCreateTensorDesc(ACL_FLOAT8_E8M0, 3, ss.data(), ACL_FORMAT_ND)};
  aclDataBuffer* ob[2] = {aclCreateDataBuffer(c.y.data(), c.y.bytes.size()),
                          aclCreateDataBuffer(c.s.data(), c.s.bytes.size())};
  aclopAttr* attr = aclopCreateAttr();
  ASSERT_EQ(aclopSetAttrInt(attr, "dst_type", ACL_FLOAT8_E4M3FN), ACL_SUCCESS);
  ASSERT_EQ(aclopSetAttrString(attr, "round_mode", "rint"), ACL_SUCCESS);
  ASSERT_EQ(aclopCompileAndExecuteV2("DynamicMxQuant", 1, &in, &ib, 2, out, ob, attr,
                                     ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, nullptr),
            ACL_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(c.y, ref.y, "y");
  expect_same_bits(c.s, ref.s, "mxscale");
  aclDestroyTensorDesc(in);
  aclDestroyDataBuffer(ib);
  for (int i = 0; i < 2; ++i) aclDestroyTensorDesc(out[i]), aclDestroyDataBuffer(ob[i]);
  aclopDestroyAttr(attr);
}

}  // namespace
}  // namespace mantissa::testing
