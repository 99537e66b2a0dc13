// Operators compute in the default floating-point environment whatever the caller set (flush-
// to-zero, denormals-are-zero, a directed rounding mode), on the calling thread and on the
// pool's workers, and leave the caller's environment as they found it.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "mantissa/ops/foreach_non_finite_check_and_unscale.h"
#include "mantissa/ops/softmax.h"
#include "mantissa/runtime.h"
#include "target_sweep.h"

namespace {

using mantissa::DType;
using mantissa::TensorView;

// Gradients whose unscaled values are subnormal (FTZ would flush them), some subnormal inputs
// (DAZ would read them as 0), products that round differently in each rounding mode.
std::vector<float> inputs(std::size_t n = 100000) {
  std::vector<float> g(n);
  for (std::size_t i = 0; i < g.size(); ++i) {
    g[i] = (i % 3 == 0) ? 1.7e-41f * static_cast<float>(i % 7 + 1)
                        : 1.1e-30f * static_cast<float>(i % 1000 + 1) / 3.0f;
  }
  return g;
}

std::vector<float> unscale(std::vector<float> g) {
  float found = 0.0f, inv = 1.0f / 3.0e9f;
  const TensorView view(g.data(), DType::kFloat32, {static_cast<int64_t>(g.size())});
  mantissa::ForeachNonFiniteCheckAndUnscaleTensors t;
  t.scaled_grads = std::span<const TensorView>(&view, 1);
  t.found_inf = TensorView(&found, DType::kFloat32, {1});
  t.inv_scale = TensorView(&inv, DType::kFloat32, {1});
  EXPECT_TRUE(mantissa::foreach_non_finite_check_and_unscale(t).ok());
  return g;
}

std::vector<float> softmax(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  const int64_t rows = 100, n = static_cast<int64_t>(x.size()) / rows;
  std::vector<float> shifted(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) shifted[i] = x[i] * 1e30f * 90.0f;  // exp underflows
  EXPECT_TRUE(mantissa::softmax({TensorView(shifted.data(), DType::kFloat32, {rows, n}),
                                 TensorView(y.data(), DType::kFloat32, {rows, n})},
                                {})
                  .ok());
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

struct Env {
  const char* name;
  int rounding;
  bool ftz_daz;
};

void set_env(const Env& e) {
  std::fesetround(e.rounding);
#if defined(__x86_64__) || defined(__i386__)
  if (e.ftz_daz) _mm_setcsr(_mm_getcsr() | 0x8040u);
#endif
}

void reset_env() { std::fesetenv(FE_DFL_ENV); }

TEST(FpEnv, OperatorsIgnoreAndRestoreTheCallersEnvironment) {
  mantissa::testing::ThreadCountGuard guard;
  const std::vector<float> g = inputs();
  reset_env();
  const std::vector<float> want_unscale = unscale(g);
  const std::vector<float> want_softmax = softmax(g);
  const Env envs[] = {{"FTZ+DAZ", FE_TONEAREST, true},
                      {"upward", FE_UPWARD, false},
                      {"downward", FE_DOWNWARD, false},
                      {"toward zero", FE_TOWARDZERO, true}};
  for (const Env& e : envs) {
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::string(e.name) + ", threads " + std::to_string(threads));
      ASSERT_TRUE(mantissa::set_num_threads(threads).ok());
      set_env(e);
#if defined(__x86_64__) || defined(__i386__)
      const unsigned csr = _mm_getcsr() & ~0x3Fu;
#endif
      const std::vector<float> got_unscale = unscale(g);
      const std::vector<float> got_softmax = softmax(g);
      // The caller's environment is untouched.
      EXPECT_EQ(std::fegetround(), e.rounding);
#if defined(__x86_64__) || defined(__i386__)
      EXPECT_EQ(_mm_getcsr() & ~0x3Fu, csr);
#endif
      reset_env();
      EXPECT_TRUE(same_bits(got_unscale, want_unscale));
      EXPECT_TRUE(same_bits(got_softmax, want_softmax));
    }
  }
  // The environment really changes the arithmetic here (so the test can fail).
  set_env(envs[0]);
  volatile float tiny = 1.1e-30f, inv = 1.0f / 3.0e9f;
  const float flushed = tiny * inv;
  reset_env();
  EXPECT_EQ(flushed, 0.0f);
  EXPECT_NE(tiny * inv, 0.0f);
}

// Workers created while the caller ran under FTZ must not keep it for later calls.
TEST(FpEnv, WorkersDoNotInheritTheCreatorsEnvironment) {
  mantissa::testing::ThreadCountGuard guard;
  const std::vector<float> g = inputs(1 << 22);  // 128 chunks: the workers take some
  reset_env();
  const std::vector<float> want = unscale(g);
  ASSERT_TRUE(mantissa::set_num_threads(4).ok());
  set_env({"FTZ+DAZ", FE_TONEAREST, true});
  (void)unscale(g);  // may start workers under FTZ
  reset_env();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(same_bits(unscale(g), want));
}

}  // namespace
