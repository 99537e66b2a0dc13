// core/math: Exp, Log, Erf and Tanh give the same bits on every SIMD target (a strided sample of
// all 2^32 inputs plus the special ranges), stay within the documented ulp bound on that sample,
// and follow the IEEE special cases; the fp64 Erf, Erfc and Tanh stay within their relative
// bound of long-double references and give the same bits on every target.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "mantissa/math.h"
#include "math_support.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

// The bounds of docs/math.md, measured over all 2^32 inputs by test_math_exhaustive.
constexpr double kExpMaxUlp = 1.0;
constexpr double kLogMaxUlp = 0.85;
constexpr double kErfMaxUlp = 0.5001;  // fp64 steps rounded once
constexpr double kTanhMaxUlp = 0.5001;

using Fn = void (*)(const float*, float*, int64_t);

void expect_same_bits_on_every_target(Fn fn, const char* name) {
  const std::vector<float> in = math_sample_inputs(4099);
  std::vector<float> reference;
  std::string reference_target;
  for_each_target([&](const std::string& target) {
    // Odd lengths and offsets, so the one-lane tail handles part of the inputs.
    std::vector<float> out(in.size());
    fn(in.data(), out.data(), static_cast<int64_t>(in.size()));
    std::vector<float> tail(in.size());
    for (std::size_t i = 0; i < in.size(); i += 7) {
      const std::size_t n = std::min<std::size_t>(7, in.size() - i);
      fn(in.data() + i, tail.data() + i, static_cast<int64_t>(n));
    }
    if (reference.empty()) {
      reference = out;
      reference_target = target;
    }
    int mismatches = 0;
    for (std::size_t i = 0; i < in.size() && mismatches < 10; ++i) {
      const uint32_t want = std::bit_cast<uint32_t>(reference[i]);
      if (std::bit_cast<uint32_t>(out[i]) != want || std::bit_cast<uint32_t>(tail[i]) != want) {
        ADD_FAILURE() << name << "(" << in[i] << " = 0x" << std::hex
                      << std::bit_cast<uint32_t>(in[i]) << "): " << target << " gives 0x"
                      << std::bit_cast<uint32_t>(out[i]) << " (tail 0x"
                      << std::bit_cast<uint32_t>(tail[i]) << "), " << reference_target
                      << " gives 0x" << want;
        ++mismatches;
      }
    }
  });
}

TEST(Math, ExpSameBitsOnEveryTarget) { expect_same_bits_on_every_target(exp_f32, "exp"); }
TEST(Math, LogSameBitsOnEveryTarget) { expect_same_bits_on_every_target(log_f32, "log"); }
TEST(Math, ErfSameBitsOnEveryTarget) { expect_same_bits_on_every_target(erf_f32, "erf"); }
TEST(Math, TanhSameBitsOnEveryTarget) { expect_same_bits_on_every_target(tanh_f32, "tanh"); }

void expect_within_bound(Fn fn, double (*ref)(double), double bound, const char* name) {
  const std::vector<float> in = math_sample_inputs(4099);
  std::vector<float> out(in.size());
  fn(in.data(), out.data(), static_cast<int64_t>(in.size()));
  double worst = 0.0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double e = ulp_error(out[i], ref(in[i]));
    if (e > bound) {
      ADD_FAILURE() << name << "(" << in[i] << "): " << out[i] << ", fp64 " << ref(in[i]) << ", "
                    << e << " ulp";
      return;
    }
    worst = std::max(worst, e);
  }
  std::printf("%s: max error on the sample %.3f ulp\n", name, worst);
}

TEST(Math, ExpWithinBound) {
  expect_within_bound(
      exp_f32, [](double x) { return std::exp(x); }, kExpMaxUlp, "exp");
}
TEST(Math, LogWithinBound) {
  expect_within_bound(
      log_f32, [](double x) { return std::log(x); }, kLogMaxUlp, "log");
}

TEST(Math, ErfWithinBound) {
  expect_within_bound(
      erf_f32, [](double x) { return std::erf(x); }, kErfMaxUlp, "erf");
}
TEST(Math, TanhWithinBound) {
  expect_within_bound(
      tanh_f32, [](double x) { return std::tanh(x); }, kTanhMaxUlp, "tanh");
}

// The fp64 functions: relative error against long double on 2^16 points of each range that
// matters (erfc to 27, where it leaves fp64's range), normal results, and the same bits on
// every target.
TEST(Math, Fp64ErfErfcTanhWithinBoundOnEveryTarget) {
  using Fn64 = void (*)(const double*, double*, int64_t);
  struct Case {
    const char* name;
    Fn64 fn;
    long double (*ref)(long double);
    double lo, hi, bound;
  };
  const Case cases[] = {
      {"erf", erf_f64, [](long double x) { return std::erf(x); }, -6.0, 6.0, 1e-15},
      {"erfc", erfc_f64, [](long double x) { return std::erfc(x); }, -6.0, 6.0, 4e-15},
      // The exponent's rounding: up to x^2 * 2^-53 relative in the far tail.
      {"erfc tail", erfc_f64, [](long double x) { return std::erfc(x); }, 6.0, 27.0, 1.5e-13},
      {"tanh", tanh_f64, [](long double x) { return std::tanh(x); }, -20.0, 20.0, 1e-15},
      {"tanh near 0", tanh_f64, [](long double x) { return std::tanh(x); }, -0.1, 0.1, 1e-15}};
  for (const Case& f : cases) {
    std::vector<double> in;
    for (int i = 0; i <= 65536; ++i) in.push_back(f.lo + (f.hi - f.lo) * i / 65536.0);
    in.push_back(1e-300);
    in.push_back(-3e-310);
    std::vector<double> reference;
    for_each_target([&](const std::string& target) {
      std::vector<double> out(in.size());
      f.fn(in.data(), out.data(), static_cast<int64_t>(in.size()));
      if (reference.empty()) {
        reference = out;
        double worst = 0.0, worst_at = 0.0;
        for (std::size_t i = 0; i < in.size(); ++i) {
          const long double want = f.ref(in[i]);
          // Normal results (a subnormal one carries fewer significant bits by construction).
          if (std::fabs(want) < std::numeric_limits<double>::min()) continue;
          const double rel = static_cast<double>(std::fabs((out[i] - want) / want));
          if (rel > worst) worst = rel, worst_at = in[i];
        }
        EXPECT_LE(worst, f.bound) << f.name << " at " << worst_at;
        std::printf("%s (fp64): max relative error %.3g at %.17g on [%g, %g]\n", f.name, worst,
                    worst_at, f.lo, f.hi);
      }
      for (std::size_t i = 0; i < in.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint64_t>(out[i]), std::bit_cast<uint64_t>(reference[i]))
            << f.name << "(" << in[i] << ") on " << target;
      }
    });
  }
}

float exp1(float x) {
  float y;
  exp_f32(&x, &y, 1);
  return y;
}
float log1(float x) {
  float y;
  log_f32(&x, &y, 1);
  return y;
}

TEST(Math, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const uint32_t canonical = 0x7FC00000u;
  for_each_target([&](const std::string&) {
    EXPECT_EQ(std::bit_cast<uint32_t>(exp1(0.0f)), std::bit_cast<uint32_t>(1.0f));
    EXPECT_EQ(std::bit_cast<uint32_t>(exp1(-0.0f)), std::bit_cast<uint32_t>(1.0f));
    EXPECT_EQ(std::bit_cast<uint32_t>(exp1(-inf)), 0u);
    EXPECT_EQ(exp1(inf), inf);
    EXPECT_EQ(exp1(88.8f), inf);
    EXPECT_TRUE(std::isfinite(exp1(88.72283f)));  // just below log(FLT_MAX)
    EXPECT_GT(exp1(88.72283f), 3.4e38f);
    EXPECT_EQ(std::bit_cast<uint32_t>(exp1(-103.98f)), 0u);
    EXPECT_EQ(std::bit_cast<uint32_t>(exp1(-103.27893f)), 1u);  // smallest subnormal
    EXPECT_EQ(std::bit_cast<uint32_t>(exp1(std::bit_cast<float>(0xFFC12345u))), canonical);
    EXPECT_EQ(std::bit_cast<uint32_t>(exp1(std::bit_cast<float>(0x7F800001u))), canonical);
    EXPECT_EQ(exp1(std::bit_cast<float>(1u)), 1.0f);  // subnormal input
    EXPECT_EQ(std::bit_cast<uint32_t>(log1(1.0f)), 0u);
    EXPECT_EQ(log1(0.0f), -inf);
    EXPECT_EQ(log1(-0.0f), -inf);
    EXPECT_EQ(log1(inf), inf);
    EXPECT_EQ(std::bit_cast<uint32_t>(log1(-1.0f)), canonical);
    EXPECT_EQ(std::bit_cast<uint32_t>(log1(-inf)), canonical);
    EXPECT_EQ(std::bit_cast<uint32_t>(log1(std::bit_cast<float>(0x80000001u))), canonical);
    EXPECT_EQ(std::bit_cast<uint32_t>(log1(std::bit_cast<float>(0x7FA00000u))), canonical);
    EXPECT_EQ(log1(std::bit_cast<float>(1u)), -103.27893f);  // smallest subnormal
    EXPECT_EQ(log1(std::bit_cast<float>(0x7F7FFFFFu)), 88.72284f);
    // erf and tanh: odd, +-0 kept, +-inf to +-1, NaN canonical, tiny inputs (subnormal results
    // rounded once).
    for (Fn fn : {Fn{erf_f32}, Fn{tanh_f32}}) {
      const auto one = [&](float x) {
        float y;
        fn(&x, &y, 1);
        return y;
      };
      EXPECT_EQ(std::bit_cast<uint32_t>(one(0.0f)), 0u);
      EXPECT_EQ(std::bit_cast<uint32_t>(one(-0.0f)), 0x80000000u);
      EXPECT_EQ(one(inf), 1.0f);
      EXPECT_EQ(one(-inf), -1.0f);
      EXPECT_EQ(one(30.0f), 1.0f);
      EXPECT_EQ(std::bit_cast<uint32_t>(one(std::bit_cast<float>(0xFFC12345u))), canonical);
      EXPECT_EQ(std::bit_cast<uint32_t>(one(std::bit_cast<float>(0x7F800001u))), canonical);
      EXPECT_EQ(one(-2.5f), -one(2.5f));
    }
    float y;
    const float tiny = std::bit_cast<float>(0x00000100u);  // subnormal
    tanh_f32(&tiny, &y, 1);
    EXPECT_EQ(y, tiny);
    erf_f32(&tiny, &y, 1);
    EXPECT_EQ(y, static_cast<float>(2.0 / std::sqrt(3.14159265358979323846) * tiny));
  });
}

}  // namespace

}  // namespace mantissa::testing
