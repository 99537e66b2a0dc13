// core/math: Exp and Log give the same bits on every SIMD target (a strided sample of all 2^32
// inputs plus the special ranges), stay within the documented ulp bound on that sample, and
// follow the IEEE special cases.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
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
  });
}

}  // namespace

}  // namespace mantissa::testing
