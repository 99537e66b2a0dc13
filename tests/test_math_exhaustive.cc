// core/math over all 2^32 fp32 inputs: the maximum ulp error of Exp, Log, Erf and Tanh against
// fp64 (std::exp / std::log / std::erf / std::tanh in double) on the default SIMD target, asserted against the bounds of
// docs/math.md and printed; and the same bits on every target for a 1-in-251 sample.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "mantissa/math.h"
#include "math_support.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

constexpr double kExpMaxUlp = 1.0;
constexpr double kLogMaxUlp = 0.85;
constexpr double kErfMaxUlp = 0.5001;
constexpr double kTanhMaxUlp = 0.5001;

using Fn = void (*)(const float*, float*, int64_t);

struct Worst {
  double ulp = 0.0;
  uint32_t input = 0;
};

// All 2^32 inputs in 2 threads; chunk results merged by input order, so the report is stable.
Worst sweep(Fn fn, double (*ref)(double)) {
  constexpr int kThreads = 2;
  Worst worst[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      constexpr uint64_t kChunk = 1 << 16;
      std::vector<float> in(kChunk), out(kChunk);
      for (uint64_t base = uint64_t(t) * kChunk; base < (uint64_t{1} << 32);
           base += kThreads * kChunk) {
        for (uint64_t i = 0; i < kChunk; ++i) in[i] = std::bit_cast<float>(uint32_t(base + i));
        fn(in.data(), out.data(), kChunk);
        for (uint64_t i = 0; i < kChunk; ++i) {
          const double e = ulp_error(out[i], ref(in[i]));
          if (e > worst[t].ulp) worst[t] = {e, uint32_t(base + i)};
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  Worst w;
  for (const Worst& x : worst) {
    if (x.ulp > w.ulp) w = x;
  }
  return w;
}

TEST(MathExhaustive, ExpAllInputs) {
  const Worst w = sweep(exp_f32, [](double x) { return std::exp(x); });
  std::printf("exp: max error %.4f ulp at x = %.9g (0x%08x)\n", w.ulp,
              std::bit_cast<float>(w.input), w.input);
  EXPECT_LE(w.ulp, kExpMaxUlp);
}

TEST(MathExhaustive, LogAllInputs) {
  const Worst w = sweep(log_f32, [](double x) { return std::log(x); });
  std::printf("log: max error %.4f ulp at x = %.9g (0x%08x)\n", w.ulp,
              std::bit_cast<float>(w.input), w.input);
  EXPECT_LE(w.ulp, kLogMaxUlp);
}

TEST(MathExhaustive, ErfAllInputs) {
  const Worst w = sweep(erf_f32, [](double x) { return std::erf(x); });
  std::printf("erf: max error %.6f ulp at x = %.9g (0x%08x)\n", w.ulp,
              std::bit_cast<float>(w.input), w.input);
  EXPECT_LE(w.ulp, kErfMaxUlp);
}

TEST(MathExhaustive, TanhAllInputs) {
  const Worst w = sweep(tanh_f32, [](double x) { return std::tanh(x); });
  std::printf("tanh: max error %.6f ulp at x = %.9g (0x%08x)\n", w.ulp,
              std::bit_cast<float>(w.input), w.input);
  EXPECT_LE(w.ulp, kTanhMaxUlp);
}

TEST(MathExhaustive, SameBitsOnEveryTarget) {
  const std::vector<float> in = math_sample_inputs(251);
  for (Fn fn : {Fn{exp_f32}, Fn{log_f32}, Fn{erf_f32}, Fn{tanh_f32}}) {
    std::vector<float> reference;
    for_each_target([&](const std::string& target) {
      std::vector<float> out(in.size());
      fn(in.data(), out.data(), static_cast<int64_t>(in.size()));
      if (reference.empty()) reference = out;
      for (std::size_t i = 0; i < in.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(reference[i]))
            << target << " input 0x" << std::hex << std::bit_cast<uint32_t>(in[i]);
      }
    });
  }
}

}  // namespace

}  // namespace mantissa::testing
