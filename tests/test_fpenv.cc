// Operators compute in the default floating-point environment whatever the caller set (flush-
// to-zero, denormals-are-zero, a directed rounding mode), on the calling thread and on the
// pool's workers, and leave the caller's environment as they found it.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "mantissa/ops/foreach_non_finite_check_and_unscale.h"
#include "mantissa/ops/softmax.h"
#include "mantissa/reduce.h"
#include "mantissa/runtime.h"
#include "precision/kit.h"
#include "target_support.h"

namespace mantissa::testing {

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

// Every listed operator, on the inputs of its shipped case sets (subnormals, specials, ties; up
// to 2^20 elements), gives the default environment's bits under each environment a caller may
// set, through the C++ API, aclnn and op-by-name, and leaves that environment as it found it.
TEST(FpEnv, EveryOperatorOnItsShippedCases) {
  namespace pk = mantissa::precision;
  const char* src = std::getenv("MANTISSA_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "MANTISSA_SOURCE_DIR must name the source tree";
  const std::vector<pk::LoadedCase> cases = pk::load_case_dir(std::string(src) + "/cases");
  const Env envs[] = {{"FTZ+DAZ", FE_TONEAREST, true},
                      {"upward", FE_UPWARD, false},
                      {"toward zero, FTZ+DAZ", FE_TOWARDZERO, true}};
  int checked = 0;
  std::set<std::string> ops;
  for (const pk::LoadedCase& lc : cases) {
    if (!lc.spec) continue;
    const pk::OpEntry* entry = pk::find_op(lc.spec->op);
    ASSERT_NE(entry, nullptr) << lc.spec->op;
    // An operator with list inputs is instantiated for the case's list lengths.
    std::vector<int64_t> list_sizes;
    const pk::OpEntry instance = entry->instantiate(*lc.spec, list_sizes);
    const pk::OpEntry* op = &instance;
    pk::OpInputs in;
    ASSERT_EQ(pk::generate_inputs(*lc.spec, *op, 0, in), "") << lc.id;
    in.list_sizes = list_sizes;
    int64_t elements = 0;
    for (const pk::HostTensor& t : in.tensors) elements += t.numel();
    if (elements > (int64_t{1} << 20)) continue;  // the long-row cases: time, not coverage
    // Float attributes rounded to fp32 here, in the default environment: the harness converts
    // them to the operators' float parameters inside each call, and a caller's rounding mode
    // changes that conversion (the caller's own arithmetic, not the library's).
    for (pk::AttrValue& a : in.attrs) {
      if (a.kind == pk::AttrKind::kFloat) a.f = static_cast<float>(a.f);
    }
    for (const auto& [backend, run] : op->backends) {
      SCOPED_TRACE(lc.spec->op + " " + lc.id + " " + pk::backend_name(backend));
      reset_env();
      std::vector<pk::HostTensor> want;
      ASSERT_EQ(run(in, want), "");
      for (const Env& e : envs) {
        SCOPED_TRACE(e.name);
        set_env(e);
#if defined(__x86_64__) || defined(__i386__)
        const unsigned csr = _mm_getcsr() & ~0x3Fu;
#endif
        std::vector<pk::HostTensor> got;
        const std::string err = run(in, got);
        EXPECT_EQ(std::fegetround(), e.rounding);
#if defined(__x86_64__) || defined(__i386__)
        EXPECT_EQ(_mm_getcsr() & ~0x3Fu, csr);
#endif
        reset_env();
        ASSERT_EQ(err, "");
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t k = 0; k < got.size(); ++k) {
          EXPECT_TRUE(got[k].bytes == want[k].bytes) << "output " << k << " differs";
        }
      }
      ++checked;
    }
    ops.insert(lc.spec->op);
  }
  EXPECT_GT(checked, 100);
  EXPECT_GE(ops.size(), 15u);
}

// The reductions of the C++ API likewise.
TEST(FpEnv, ReductionsIgnoreTheCallersEnvironment) {
  const std::vector<float> g = inputs();
  const TensorView x(const_cast<float*>(g.data()), DType::kFloat32,
                     {static_cast<int64_t>(g.size())});
  reset_env();
  double want_sum = 0, want_dot = 0;
  ASSERT_TRUE(mantissa::sum(x, &want_sum).ok());
  ASSERT_TRUE(mantissa::dot(x, x, &want_dot).ok());
  for (const Env& e : {Env{"FTZ+DAZ", FE_TONEAREST, true}, Env{"downward", FE_DOWNWARD, false}}) {
    set_env(e);
    double s = 0, d = 0;
    const bool ok = mantissa::sum(x, &s).ok() && mantissa::dot(x, x, &d).ok();
    reset_env();
    ASSERT_TRUE(ok);
    EXPECT_EQ(std::memcmp(&s, &want_sum, sizeof s), 0) << e.name;
    EXPECT_EQ(std::memcmp(&d, &want_dot, sizeof d), 0) << e.name;
  }
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

}  // namespace mantissa::testing
