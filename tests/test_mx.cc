// MX block quantize/dequantize against a reference written here in double (frexp for the shared
// exponent, the nearbyint element reference of lowp_support.h), on normal, heavy-tailed,
// outlier, tiny and non-finite data, odd row lengths, several thread counts and every target.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "lowp_support.h"
#include "mantissa/lowp.h"
#include "mantissa/mx.h"
#include "mantissa/runtime.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

constexpr MxFormat kFormats[] = {MxFormat::kFp8E4M3, MxFormat::kFp8E5M2, MxFormat::kFp6E3M2,
                                 MxFormat::kFp6E2M3, MxFormat::kFp4E2M1, MxFormat::kInt8};

const testing::LowpFormat* ref_format(MxFormat f) {
  switch (f) {
    case MxFormat::kFp8E4M3: return &testing::kLowpFormats[0];
    case MxFormat::kFp8E5M2: return &testing::kLowpFormats[1];
    case MxFormat::kFp6E3M2: return &testing::kLowpFormats[2];
    case MxFormat::kFp6E2M3: return &testing::kLowpFormats[3];
    case MxFormat::kFp4E2M1: return &testing::kLowpFormats[4];
    case MxFormat::kInt8: break;
  }
  return nullptr;
}

struct Quantized {
  std::vector<uint32_t> codes;  // one per element, unpacked
  std::vector<uint8_t> scales;
};

// The reference: the rule of the OCP MX spec computed in double.
Quantized reference_quantize(MxFormat f, const std::vector<float>& x, int64_t rows, int64_t cols) {
  const testing::LowpFormat* ef = ref_format(f);
  int emax = 0;
  if (ef != nullptr) emax = std::ilogb(ef->max);
  Quantized q;
  q.codes.assign(static_cast<std::size_t>(rows * cols), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c0 = 0; c0 < cols; c0 += 32) {
      const int64_t c1 = std::min(cols, c0 + 32);
      double amax = 0;
      bool finite = true;
      for (int64_t c = c0; c < c1; ++c) {
        const double v = x[static_cast<std::size_t>(r * cols + c)];
        finite = finite && std::isfinite(v);
        if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
      }
      if (!finite) {
        q.scales.push_back(0xFF);
        continue;
      }
      int e = 0;
      std::frexp(std::max(amax, std::ldexp(1.0, -126)), &e);  // amax in [2^(e-1), 2^e)
      const int shared = std::max(-127, e - 1 - emax);
      q.scales.push_back(static_cast<uint8_t>(shared + 127));
      for (int64_t c = c0; c < c1; ++c) {
        const double v =
            std::ldexp(static_cast<double>(x[static_cast<std::size_t>(r * cols + c)]), -shared);
        uint32_t code;
        if (ef != nullptr) {
          // v is exact in double; below 2^-126 it is far under every element step.
          const double vv = std::fabs(v) < std::ldexp(1.0, -126) ? std::copysign(0.0, v) : v;
          code = testing::ref_encode_nearbyint(*ef, static_cast<float>(vv), true);
        } else {
          const double n = std::clamp(std::nearbyint(v * 64), -127.0, 127.0);
          code = static_cast<uint8_t>(static_cast<int8_t>(n));
        }
        q.codes[static_cast<std::size_t>(r * cols + c)] = code;
      }
    }
  }
  return q;
}

std::vector<float> make_data(int kind, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::student_t_distribution<double> heavy(2.0);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (kind) {
      case 0: v = normal(rng); break;
      case 1: v = heavy(rng); break;
      case 2: v = normal(rng) * (i % 97 == 0 ? 1e4 : 1.0); break;  // outliers
      case 3: v = normal(rng) * 1e-39; break;                      // fp32 subnormals
      case 4: v = normal(rng) * 1e36; break;                       // near fp32 max
      default: v = i % 50 == 3 ? std::numeric_limits<double>::infinity() : normal(rng);
    }
    x[static_cast<std::size_t>(i)] = static_cast<float>(v);
  }
  if (kind == 5 && n > 70) x[70] = NAN;
  if (n > 40) std::fill(x.begin() + 32, x.begin() + std::min<int64_t>(n, 64), 0.0f);  // all zero
  return x;
}

uint32_t code_at(MxFormat f, const std::vector<uint8_t>& elements, int64_t cols, int64_t r,
                 int64_t c) {
  if (f == MxFormat::kFp4E2M1) {
    return packed_nibble(elements.data() + r * ((cols + 1) / 2), static_cast<std::size_t>(c));
  }
  return elements[static_cast<std::size_t>(r * cols + c)];
}

TEST(Mx, QuantizeAndDequantizeMatchTheReference) {
  testing::ThreadCountGuard guard;
  for (MxFormat f : kFormats) {
    for (int kind = 0; kind < 6; ++kind) {
      for (auto [rows, cols] :
           {std::pair<int64_t, int64_t>{3, 1}, {5, 31}, {4, 33}, {7, 96}, {64, 257}}) {
        const std::vector<float> x =
            make_data(kind, rows * cols, 11u + static_cast<uint32_t>(kind));
        const Quantized want = reference_quantize(f, x, rows, cols);
        SCOPED_TRACE(std::string(mx_format_name(f)) + " data " + std::to_string(kind) + " " +
                     std::to_string(rows) + "x" + std::to_string(cols));
        for (int threads : {1, 2, 7}) {
          ASSERT_TRUE(set_num_threads(threads).ok());
          std::vector<uint8_t> elements(static_cast<std::size_t>(mx_element_bytes(f, rows, cols)),
                                        0xAA);
          std::vector<uint8_t> scales(static_cast<std::size_t>(mx_scale_count(rows, cols)));
          ASSERT_TRUE(mx_quantize(f, x.data(), rows, cols, elements.data(), scales.data()).ok());
          ASSERT_EQ(scales, want.scales);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
              if (want.scales[static_cast<std::size_t>(r * ((cols + 31) / 32) + c / 32)] == 0xFF) {
                continue;  // elements of a NaN-scaled block are not specified beyond "0"
              }
              ASSERT_EQ(code_at(f, elements, cols, r, c),
                        want.codes[static_cast<std::size_t>(r * cols + c)])
                  << "row " << r << " col " << c << " x "
                  << x[static_cast<std::size_t>(r * cols + c)];
            }
            if (f == MxFormat::kFp4E2M1 && cols % 2 == 1) {
              ASSERT_EQ(code_at(f, elements, cols, r, cols), 0u);  // the padding nibble
            }
          }
          // Dequantize: element value * 2^(scale - 127) in double, rounded once to fp32.
          std::vector<float> back(x.size());
          ASSERT_TRUE(
              mx_dequantize(f, elements.data(), scales.data(), rows, cols, back.data()).ok());
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
              const uint8_t s = scales[static_cast<std::size_t>(r * ((cols + 31) / 32) + c / 32)];
              const float got = back[static_cast<std::size_t>(r * cols + c)];
              if (s == 0xFF) {
                ASSERT_TRUE(std::isnan(got));
                continue;
              }
              const uint32_t code = code_at(f, elements, cols, r, c);
              const testing::LowpFormat* ef = ref_format(f);
              const double ev =
                  ef ? testing::ref_decode(*ef, code) : std::ldexp(static_cast<int8_t>(code), -6);
              const auto want_v = static_cast<float>(std::ldexp(ev, s - 127));
              ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want_v))
                  << "row " << r << " col " << c;
            }
          }
        }
      }
    }
  }
}

TEST(Mx, SameBitsOnEveryTarget) {
  const std::vector<float> x = make_data(2, 40 * 100, 5);
  for (MxFormat f : kFormats) {
    std::vector<uint8_t> first;
    testing::for_each_target([&](const std::string&) {
      std::vector<uint8_t> elements(static_cast<std::size_t>(mx_element_bytes(f, 40, 100)));
      std::vector<uint8_t> scales(static_cast<std::size_t>(mx_scale_count(40, 100)));
      ASSERT_TRUE(mx_quantize(f, x.data(), 40, 100, elements.data(), scales.data()).ok());
      elements.insert(elements.end(), scales.begin(), scales.end());
      if (first.empty()) first = elements;
      ASSERT_EQ(elements, first);
    });
  }
}

TEST(Mx, Arguments) {
  float x = 1.0f;
  uint8_t e = 0, s = 0;
  EXPECT_EQ(mx_quantize(MxFormat::kInt8, nullptr, 1, 1, &e, &s).code(), StatusCode::kParamNullptr);
  EXPECT_EQ(mx_quantize(MxFormat::kInt8, &x, -1, 1, &e, &s).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(mx_dequantize(static_cast<MxFormat>(9), &e, &s, 1, 1, &x).code(),
            StatusCode::kParamInvalid);
  EXPECT_TRUE(mx_quantize(MxFormat::kInt8, nullptr, 0, 5, nullptr, nullptr).ok());
  EXPECT_EQ(mx_element_bytes(MxFormat::kFp4E2M1, 3, 5), 9);
  EXPECT_EQ(mx_scale_count(3, 65), 9);
  // One block: amax 1.0 -> shared exponent 0 - 8 for E4M3, code 119.
  std::vector<float> one(32, 0.25f);
  one[3] = -1.0f;
  std::vector<uint8_t> codes(32), scale(1);
  ASSERT_TRUE(mx_quantize(MxFormat::kFp8E4M3, one.data(), 1, 32, codes.data(), scale.data()).ok());
  EXPECT_EQ(scale[0], 119);
  EXPECT_EQ(codes[3], float_to_minifloat(kE4M3, -256.0f, true));
  EXPECT_EQ(codes[0], float_to_minifloat(kE4M3, 64.0f, true));
}

}  // namespace

}  // namespace mantissa::testing
