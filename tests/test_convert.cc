// fp16/bf16 conversions: scalar and SIMD against the independent reference on special values
// and a few million random inputs, on every SIMD target and several thread counts.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "conversion_support.h"
#include "mantissa/convert.h"
#include "mantissa/dtype.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

using testing::reference_bf16_to_fp32_bits;
using testing::reference_fp16_to_fp32_bits;
using testing::reference_fp32_to_bf16;
using testing::reference_fp32_to_fp16;

std::vector<float> interesting_inputs() {
  std::vector<uint32_t> bits = {
      0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x3F800000,
      0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
      0x7F800001, 0xFF800001, 0x7FBFFFFF, 0x7FFFFFFF, 0x477FE000, 0x477FEFFF, 0x477FF000,
      0x477FF001, 0x47800000, 0x38800000, 0x387FFFFF, 0x387FF000, 0x33000000, 0x33000001,
      0x32FFFFFF, 0x33800000, 0x33C00000, 0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001,
      0x7F7F8000, 0x7F7F7FFF, 0x00008000, 0x00018000, 0x00007FFF, 0x3FFFF000, 0x3FFFE000};
  // Every tie and near-tie around each fp16 exponent.
  for (uint32_t e = 100; e < 145; ++e) {
    for (uint32_t low : {0x0FFFu, 0x1000u, 0x1001u, 0x2FFFu, 0x3000u, 0x3001u, 0x7FFFu, 0x8000u}) {
      bits.push_back((e << 23) | low);
      bits.push_back(0x80000000u | (e << 23) | low);
    }
  }
  std::vector<float> out;
  for (uint32_t b : bits) out.push_back(std::bit_cast<float>(b));
  return out;
}

TEST(Convert, ScalarNarrowingMatchesReferenceOnSpecialValues) {
  for (float x : interesting_inputs()) {
    EXPECT_EQ(float_to_fp16_bits(x), reference_fp32_to_fp16(x))
        << std::hex << std::bit_cast<uint32_t>(x);
    EXPECT_EQ(float_to_bf16_bits(x), reference_fp32_to_bf16(x))
        << std::hex << std::bit_cast<uint32_t>(x);
  }
}

TEST(Convert, KnownValues) {
  EXPECT_EQ(float_to_fp16_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16_bits(65519.996f), 0x7BFF);
  EXPECT_EQ(float_to_fp16_bits(65520.0f), 0x7C00);  // tie rounds to even: up to inf
  EXPECT_EQ(float_to_fp16_bits(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even (0)
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp -> 2
  EXPECT_EQ(float_to_fp16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie to even
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(3.0f, -8)), 0x3F82);  // tie to even (up)
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);
  // NaN: stays NaN, quiet, sign and top payload bits kept.
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0xFF800001u)), 0xFFC0);
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x7FA50000u)), 0x7FE5);
  EXPECT_EQ(float_to_fp16_bits(std::bit_cast<float>(0x7F800001u)), 0x7E00);
  EXPECT_EQ(float_to_fp16_bits(std::bit_cast<float>(0xFFA02000u)), 0xFF01);
  EXPECT_TRUE(std::isnan(fp16_bits_to_float(0x7C01)));
  EXPECT_EQ(std::bit_cast<uint32_t>(fp16_bits_to_float(0x7C01)), 0x7FC02000u);
  EXPECT_EQ(fp16_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(bf16_bits_to_float(0x0001), std::ldexp(1.0f, -133));
}

TEST(Convert, ScalarWideningMatchesReferenceForAll65536Values) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto h16 = static_cast<uint16_t>(h);
    ASSERT_EQ(std::bit_cast<uint32_t>(fp16_bits_to_float(h16)), reference_fp16_to_fp32_bits(h16))
        << std::hex << h;
    ASSERT_EQ(std::bit_cast<uint32_t>(bf16_bits_to_float(h16)), reference_bf16_to_fp32_bits(h16))
        << std::hex << h;
  }
}

// Every target and several thread counts: SIMD narrowing of special values plus random bit
// patterns, and widening of all 65536 values.
TEST(Convert, SimdMatchesReferenceOnEveryTargetAndThreadCount) {
  std::vector<float> in = interesting_inputs();
  std::mt19937 rng(1234);
  for (int i = 0; i < 300000; ++i) in.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  std::vector<uint16_t> want16(in.size()), wantbf(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    want16[i] = reference_fp32_to_fp16(in[i]);
    wantbf[i] = reference_fp32_to_bf16(in[i]);
  }
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  testing::ThreadCountGuard guard;
  testing::for_each_target([&](const std::string&) {
    for (int threads : {1, 2, 3, 7}) {
      ASSERT_TRUE(set_num_threads(threads).ok());
      // Offsets exercise unaligned starts and every tail length.
      for (size_t offset : {0u, 1u, 5u}) {
        const size_t n = in.size() - offset;
        std::vector<uint16_t> got(n);
        convert_fp32_to_fp16(in.data() + offset, got.data(), n);
        ASSERT_EQ(0, std::memcmp(got.data(), want16.data() + offset, n * 2)) << threads;
        convert_fp32_to_bf16(in.data() + offset, got.data(), n);
        ASSERT_EQ(0, std::memcmp(got.data(), wantbf.data() + offset, n * 2)) << threads;
      }
      std::vector<float> wide(65536);
      convert_fp16_to_fp32(all.data(), wide.data(), all.size());
      for (uint32_t h = 0; h < 65536; ++h) {
        ASSERT_EQ(std::bit_cast<uint32_t>(wide[h]),
                  reference_fp16_to_fp32_bits(static_cast<uint16_t>(h)))
            << std::hex << h;
      }
      convert_bf16_to_fp32(all.data(), wide.data(), all.size());
      for (uint32_t h = 0; h < 65536; ++h) {
        ASSERT_EQ(std::bit_cast<uint32_t>(wide[h]),
                  reference_bf16_to_fp32_bits(static_cast<uint16_t>(h)))
            << std::hex << h;
      }
    }
  });
}

TEST(Convert, SmallSizesUseTheSameBitsAsLargeOnes) {
  std::vector<float> in = interesting_inputs();
  testing::for_each_target([&](const std::string&) {
    for (size_t n = 0; n <= 70 && n <= in.size(); ++n) {
      std::vector<uint16_t> got(n + 1, 0xABCD);
      convert_fp32_to_fp16(in.data(), got.data(), n);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], reference_fp32_to_fp16(in[i]));
      ASSERT_EQ(got[n], 0xABCD) << "wrote past the end, n=" << n;
    }
  });
}

// The AVX512-BF16 narrowing (AVX3_BF16) hands whole vectors to the integer rounding when one
// lane is subnormal; the convert API keeps NaN payloads either way. One rare lane at every
// position of two full vectors and a tail, on every target.
TEST(Convert, Bf16RareLanesAtEveryPosition) {
  const uint32_t rare[] = {0x00000001, 0x807FFFFF, 0x007F8000, 0x00008000, 0x00018000,
                           0x7F800001, 0xFFBFFFFF, 0x7FC00000, 0xFFE12345};
  constexpr size_t n = 2 * 16 + 7;
  testing::for_each_target([&](const std::string& target) {
    for (uint32_t bits : rare) {
      for (size_t k = 0; k < n; ++k) {
        std::vector<float> in(n);
        for (size_t i = 0; i < n; ++i) in[i] = 1.0f + static_cast<float>(i) / 1024.0f;
        in[k] = std::bit_cast<float>(bits);
        std::vector<uint16_t> got(n);
        convert_fp32_to_bf16(in.data(), got.data(), n);
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[i], reference_fp32_to_bf16(in[i]))
              << target << " rare 0x" << std::hex << bits << " at " << std::dec << k << ", lane "
              << i;
        }
      }
    }
  });
}

}  // namespace

}  // namespace mantissa::testing
