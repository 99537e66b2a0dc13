// Low-precision formats: every code of every format widened, every rounding tie (and its
// neighbours) narrowed, special values and random inputs, scalar and SIMD on every target,
// against the independent references of lowp_support.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "lowp_support.h"
#include "mantissa/lowp.h"
#include "mantissa/runtime.h"
#include "mantissa/tensor.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

using testing::kLowpFormats;
using testing::LowpFormat;

// Widened fp32 bits the library must give for a code.
uint32_t expected_widened(const LowpFormat& f, uint32_t code) {
  const double v = testing::ref_decode(f, code);
  if (std::isnan(v)) return testing::ref_nan_bits(f, code);
  return std::bit_cast<uint32_t>(static_cast<float>(v));  // exact: few significant bits
}

// Inputs that exercise every rounding decision: every code's value, every midpoint between
// neighbouring codes (the ties, including the one past max), one fp32 ulp either side of each,
// both signs; zeros, infinities, NaNs with payloads, the fp32 extremes; random values.
std::vector<float> narrowing_inputs(const LowpFormat& f) {
  std::vector<double> mags;
  std::vector<double> values;
  for (uint32_t c = 0; c < f.sign_bit(); ++c) {
    const double v = testing::ref_decode(f, c);
    if (std::isfinite(v)) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.push_back(f.max + (f.max - values[values.size() - 2]));  // the virtual code past max
  for (std::size_t i = 0; i < values.size(); ++i) {
    mags.push_back(values[i]);
    if (i + 1 < values.size()) mags.push_back((values[i] + values[i + 1]) / 2);  // a tie
  }
  mags.push_back(values.back() * 4);
  std::vector<float> out;
  for (double m : mags) {
    const float x = static_cast<float>(m);
    EXPECT_EQ(static_cast<double>(x), m);  // ties are exact in fp32
    for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, INFINITY)}) {
      out.push_back(y);
      out.push_back(-y);
    }
  }
  for (uint32_t b : {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFA00000u,
                     0x7FE00000u, 0x7F900000u, 0x00000001u, 0x80000001u, 0x007FFFFFu, 0x7F7FFFFFu,
                     0xFF7FFFFFu, 0x00800000u}) {
    out.push_back(std::bit_cast<float>(b));
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(-30.0, 20.0);
  for (int i = 0; i < 20000; ++i) {
    const double v = std::exp2(exponent(rng)) * (rng() & 1 ? -1 : 1);
    out.push_back(static_cast<float>(v));
  }
  return out;
}

TEST(Lowp, EveryCodeWidensToItsValue) {
  for (const LowpFormat& f : kLowpFormats) {
    const MiniFloat& mf = *minifloat_of(f.dtype);
    const uint32_t count = 1u << f.code_bits();
    for (uint32_t c = 0; c < count; ++c) {
      EXPECT_EQ(std::bit_cast<uint32_t>(minifloat_to_float(mf, c)), expected_widened(f, c))
          << f.name << " code 0x" << std::hex << c;
    }
  }
}

TEST(Lowp, EveryFiniteCodeRoundTrips) {
  for (const LowpFormat& f : kLowpFormats) {
    const MiniFloat& mf = *minifloat_of(f.dtype);
    for (uint32_t c = 0; c < (1u << f.code_bits()); ++c) {
      const float v = minifloat_to_float(mf, c);
      if (!std::isfinite(v)) continue;
      EXPECT_EQ(float_to_minifloat(mf, v, true), c) << f.name << " code 0x" << std::hex << c;
      EXPECT_EQ(float_to_minifloat(mf, v, false), c) << f.name << " code 0x" << std::hex << c;
    }
  }
}

TEST(Lowp, ScalarNarrowingMatchesBothReferences) {
  for (const LowpFormat& f : kLowpFormats) {
    const MiniFloat& mf = *minifloat_of(f.dtype);
    for (float x : narrowing_inputs(f)) {
      for (bool sat : {true, false}) {
        const uint32_t want = testing::ref_encode_brute(f, x, sat);
        ASSERT_EQ(float_to_minifloat(mf, x, sat), want)
            << f.name << " sat " << sat << " input 0x" << std::hex << std::bit_cast<uint32_t>(x);
        ASSERT_EQ(testing::ref_encode_nearbyint(f, x, sat), want)
            << f.name << " references disagree at 0x" << std::hex << std::bit_cast<uint32_t>(x);
      }
    }
  }
}

TEST(Lowp, KnownValuesAndTies) {
  // E4M3: max 448; 464 is the tie between 448 (mantissa 110) and 480 (would be 111): even wins.
  EXPECT_EQ(float_to_minifloat(kE4M3, 448.0f, false), 0x7Eu);
  EXPECT_EQ(float_to_minifloat(kE4M3, 464.0f, false), 0x7Eu);
  EXPECT_EQ(float_to_minifloat(kE4M3, 464.0001f, false), 0x7Fu);  // NaN
  EXPECT_EQ(float_to_minifloat(kE4M3, 464.0001f, true), 0x7Eu);
  EXPECT_EQ(float_to_minifloat(kE4M3, -INFINITY, true), 0xFEu);
  EXPECT_EQ(float_to_minifloat(kE4M3, -INFINITY, false), 0xFFu);
  EXPECT_EQ(float_to_minifloat(kE4M3, std::ldexp(1.0f, -9), true), 0x01u);   // min subnormal
  EXPECT_EQ(float_to_minifloat(kE4M3, std::ldexp(1.0f, -10), true), 0x00u);  // tie to 0
  EXPECT_EQ(float_to_minifloat(kE4M3, std::ldexp(3.0f, -10), true), 0x02u);  // tie to 2
  // E5M2: 61440 ties between max 57344 (mantissa 11) and 65536 (even): overflow.
  EXPECT_EQ(float_to_minifloat(kE5M2, 61440.0f, false), 0x7Cu);  // +inf
  EXPECT_EQ(float_to_minifloat(kE5M2, 61439.996f, false), 0x7Bu);
  EXPECT_EQ(float_to_minifloat(kE5M2, 61440.0f, true), 0x7Bu);
  EXPECT_EQ(float_to_minifloat(kE5M2, -INFINITY, false), 0xFCu);
  EXPECT_EQ(float_to_minifloat(kE5M2, std::bit_cast<float>(0xFFA00000u), false), 0xFFu);
  EXPECT_EQ(float_to_minifloat(kE5M2, std::bit_cast<float>(0xFF800001u), false), 0xFEu);
  // FP4 E2M1 values 0, 0.5, 1, 1.5, 2, 3, 4, 6: ties 0.25 -> 0, 0.75 -> 1, 2.5 -> 2, 5 -> 4.
  EXPECT_EQ(float_to_minifloat(kE2M1, 0.25f, true), 0x0u);
  EXPECT_EQ(float_to_minifloat(kE2M1, 0.75f, true), 0x2u);
  EXPECT_EQ(float_to_minifloat(kE2M1, 2.5f, true), 0x4u);
  EXPECT_EQ(float_to_minifloat(kE2M1, 5.0f, true), 0x6u);
  EXPECT_EQ(float_to_minifloat(kE2M1, 7.0f, false), 0x7u);  // saturates: no NaN or inf
  EXPECT_EQ(float_to_minifloat(kE2M1, -NAN, false), 0xFu);
  EXPECT_EQ(minifloat_to_float(kE2M3, 0x1F), 7.5f);
  EXPECT_EQ(minifloat_to_float(kE3M2, 0x1F), 28.0f);
  EXPECT_EQ(minifloat_to_float(kE3M2, 0x01), 0.0625f);
  // E8M0.
  EXPECT_EQ(float_to_e8m0(1.0f, true), 127);
  EXPECT_EQ(float_to_e8m0(1.5f, true), 128);  // tie: to the even exponent code
  EXPECT_EQ(float_to_e8m0(3.0f, true), 128);  // tie between 128 and 129: even
  EXPECT_EQ(float_to_e8m0(1.4999999f, true), 127);
  EXPECT_EQ(float_to_e8m0(0.0f, true), 0);
  EXPECT_EQ(float_to_e8m0(-1.0f, true), 0xFF);
  EXPECT_EQ(float_to_e8m0(INFINITY, true), 0xFE);
  EXPECT_EQ(float_to_e8m0(INFINITY, false), 0xFF);
  EXPECT_EQ(e8m0_to_float(127), 1.0f);
  EXPECT_EQ(e8m0_to_float(0), std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isnan(e8m0_to_float(0xFF)));
  // INT4 nibbles.
  EXPECT_EQ(int4_from_nibble(0x7), 7);
  EXPECT_EQ(int4_from_nibble(0x8), -8);
  EXPECT_EQ(int4_from_nibble(0xF), -1);
  uint8_t packed[2] = {0, 0};
  set_packed_nibble(packed, 0, 0x3);
  set_packed_nibble(packed, 1, 0xC);
  set_packed_nibble(packed, 2, 0x9);
  EXPECT_EQ(packed[0], 0xC3);
  EXPECT_EQ(packed[1], 0x09);
  EXPECT_EQ(packed_nibble(packed, 1), 0xCu);
}

// The branch-free E2M1 rounding (DynamicMxQuant's and NVFP4's element rule) against the general
// minifloat rounding: every midpoint and its neighbours, and a sweep of one fp32 pattern in 251
// below +inf (all 2^31 of them agreed when it was written).
TEST(Lowp, E2M1ComparisonRoundingIsTheMinifloatRounding) {
  auto check = [](float a) {
    ASSERT_EQ(e2m1_magnitude_rne(a), float_to_minifloat(kE2M1, a, true)) << a;
  };
  for (float mid : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 0.5f, 1.0f, 4.0f}) {
    check(mid);
    check(std::nextafter(mid, 0.0f));
    check(std::nextafter(mid, 100.0f));
  }
  check(0.0f);
  check(std::numeric_limits<float>::denorm_min());
  check(std::numeric_limits<float>::max());
  for (uint32_t b = 0; b < 0x7F800000u; b += 251) check(std::bit_cast<float>(b));
}

TEST(Lowp, E8M0EveryCodeAndTie) {
  for (uint32_t c = 0; c < 256; ++c) {
    const double v = testing::ref_e8m0_decode(c);
    const float w = e8m0_to_float(static_cast<uint8_t>(c));
    if (std::isnan(v)) {
      EXPECT_EQ(std::bit_cast<uint32_t>(w), 0x7FC00000u);
      continue;
    }
    EXPECT_EQ(static_cast<double>(w), v) << c;
    EXPECT_EQ(float_to_e8m0(w, true), c);
  }
  std::vector<float> inputs;
  for (int e = -130; e <= 128; ++e) {
    for (double mant : {1.0, 1.5}) {
      const auto x = static_cast<float>(std::ldexp(mant, e));
      for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, INFINITY)}) {
        inputs.push_back(y);
        inputs.push_back(-y);
      }
    }
  }
  for (uint32_t b : {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x00000000u, 0x80000000u, 0x00000001u,
                     0x7F7FFFFFu}) {
    inputs.push_back(std::bit_cast<float>(b));
  }
  for (float x : inputs) {
    for (bool sat : {true, false}) {
      ASSERT_EQ(float_to_e8m0(x, sat), testing::ref_e8m0_encode(x, sat))
          << "sat " << sat << " input 0x" << std::hex << std::bit_cast<uint32_t>(x);
    }
  }
}

// The SIMD bulk conversions, on every target and several thread counts, against the scalar ones
// (checked above against the references), over the same inputs.
TEST(Lowp, BulkConversionsMatchScalarOnEveryTarget) {
  testing::ThreadCountGuard guard;
  for (const LowpFormat& f : kLowpFormats) {
    const MiniFloat& mf = *minifloat_of(f.dtype);
    const std::vector<float> in = narrowing_inputs(f);
    const std::size_t n = in.size();
    const bool packed = f.dtype == DType::kFloat4E2M1;
    // Codes: every code, repeated to fill many vectors and the tails.
    std::vector<uint8_t> codes(4099);
    for (std::size_t i = 0; i < codes.size(); ++i) {
      codes[i] = static_cast<uint8_t>(i % (1u << f.code_bits()));
    }
    std::vector<uint8_t> code_bytes = codes;
    if (packed) {
      code_bytes.assign((codes.size() + 1) / 2, 0);
      for (std::size_t i = 0; i < codes.size(); ++i)
        set_packed_nibble(code_bytes.data(), i, codes[i]);
    }
    for (int threads : {1, 3}) {
      ASSERT_TRUE(set_num_threads(threads).ok());
      testing::for_each_target([&](const std::string& target) {
        for (bool sat : {true, false}) {
          std::vector<uint8_t> out(packed ? (n + 1) / 2 : n, 0xAA);
          ASSERT_TRUE(convert_fp32_to_lowp(f.dtype, in.data(), out.data(), n, sat));
          for (std::size_t i = 0; i < n; ++i) {
            const uint32_t got = packed ? packed_nibble(out.data(), i) : out[i];
            // FP4 always saturates.
            const uint32_t want = float_to_minifloat(mf, in[i], sat || packed);
            ASSERT_EQ(got, want) << target << " " << f.name << " sat " << sat << " input 0x"
                                 << std::hex << std::bit_cast<uint32_t>(in[i]);
          }
        }
        std::vector<float> wide(codes.size());
        ASSERT_TRUE(convert_lowp_to_fp32(f.dtype, code_bytes.data(), wide.data(), codes.size()));
        for (std::size_t i = 0; i < codes.size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(wide[i]), expected_widened(f, codes[i]))
              << target << " " << f.name << " code 0x" << std::hex << int{codes[i]};
        }
      });
    }
  }
  // E8M0 both ways.
  std::vector<float> in;
  for (int e = -130; e <= 129; ++e) {
    for (double mant : {1.0, 1.25, 1.5, 1.75}) {
      in.push_back(static_cast<float>(std::ldexp(mant, e)));
      in.push_back(-in.back());
    }
  }
  in.push_back(NAN);
  in.push_back(INFINITY);
  in.push_back(0.0f);
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<uint8_t>(c);
  testing::for_each_target([&](const std::string& target) {
    for (bool sat : {true, false}) {
      std::vector<uint8_t> out(in.size());
      ASSERT_TRUE(convert_fp32_to_lowp(DType::kFloat8E8M0, in.data(), out.data(), in.size(), sat));
      for (std::size_t i = 0; i < in.size(); ++i) {
        ASSERT_EQ(out[i], float_to_e8m0(in[i], sat)) << target << " " << in[i];
      }
    }
    std::vector<float> wide(256);
    ASSERT_TRUE(convert_lowp_to_fp32(DType::kFloat8E8M0, codes.data(), wide.data(), 256));
    for (int c = 0; c < 256; ++c) {
      ASSERT_EQ(std::bit_cast<uint32_t>(wide[c]),
                std::bit_cast<uint32_t>(e8m0_to_float(static_cast<uint8_t>(c))))
          << target << " " << c;
    }
  });
}

TEST(Lowp, BulkRejectsOtherDtypes) {
  float x = 1.0f;
  uint8_t y = 0x5A;
  EXPECT_FALSE(convert_fp32_to_lowp(DType::kInt8, &x, &y, 1, true));
  EXPECT_FALSE(convert_fp32_to_lowp(DType::kHiFloat8, &x, &y, 1, true));
  EXPECT_FALSE(convert_lowp_to_fp32(DType::kInt4, &y, &x, 1));
  EXPECT_EQ(y, 0x5A);
  EXPECT_EQ(x, 1.0f);
}

TEST(Lowp, DtypeSizesAndNames) {
  EXPECT_EQ(dtype_size(DType::kFloat8E4M3FN), 1u);
  EXPECT_EQ(dtype_size(DType::kInt4), 0u);  // packed: no byte size per element
  EXPECT_EQ(dtype_bits(DType::kInt4), 4u);
  EXPECT_EQ(dtype_bits(DType::kFloat4E2M1), 4u);
  EXPECT_EQ(dtype_bits(DType::kFloat6E3M2), 8u);
  EXPECT_EQ(dtype_bits(DType::kFloat32), 32u);
  EXPECT_STREQ(dtype_name(DType::kFloat8E4M3FN), "FLOAT8_E4M3FN");
  EXPECT_EQ(dtype_from_name("fp8_e5m2"), DType::kFloat8E5M2);
  EXPECT_EQ(dtype_from_name("HIFLOAT8"), DType::kHiFloat8);
  int8_t storage[4] = {};
  const TensorView odd(storage, DType::kInt4, {7});
  EXPECT_EQ(odd.nbytes(), 4);
  const TensorView fp8(storage, DType::kFloat8E5M2, {2, 2});
  EXPECT_EQ(fp8.nbytes(), 4);
}

}  // namespace

}  // namespace mantissa::testing
