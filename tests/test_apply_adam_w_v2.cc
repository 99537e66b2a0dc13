// ApplyAdamWV2 through the C++ API: bits against the kit's golden32 on every SIMD target and
// thread count (every form and flag, sizes around the vector widths and the parallel grain,
// unaligned views, special values), the properties of the contract (maximize, amsgrad, the
// master-weight form, step dtypes), and every validation row with nothing written.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "mantissa/ops/apply_adam_w_v2.h"
#include "mantissa/runtime.h"
#include "op_test_support.h"

namespace mantissa {
namespace {

using Op = detail::ApplyAdamWV2Op;
using testing::apply_golden32;
using testing::first_bit_difference;
using testing::for_each_target_and_thread_count;

constexpr int64_t kGrain = 32768;  // the kernel's parallel grain

// A form: the state dtype (var, m, v, max_grad_norm) and the grad dtype.
struct Form {
  DType state, grad;
};
constexpr Form kForms[] = {{DType::kFloat32, DType::kFloat32},
                           {DType::kFloat16, DType::kFloat16},
                           {DType::kBFloat16, DType::kBFloat16},
                           {DType::kFloat32, DType::kFloat16},
                           {DType::kFloat32, DType::kBFloat16}};

std::string label(Form f, const ApplyAdamWV2Params& p) {
  return std::string(dtype_short_name(f.state)) + "/" + dtype_short_name(f.grad) +
         (p.amsgrad ? " amsgrad" : "") + (p.maximize ? " maximize" : "");
}

// Owned tensors of one call. Each buffer has one spare element in front (for unaligned views).
struct Problem {
  Form form;
  int64_t n;
  std::vector<uint8_t> var, m, v, max, grad;
  int64_t step_i64 = 9;
  float step_f32 = 9.0f;
  bool step_is_f32 = false;
  std::vector<int64_t> shape;

  Problem(Form f, int64_t count) : form(f), n(count), shape{count} {
    for (auto* b : {&var, &m, &v, &max}) b->assign((n + 1) * dtype_size(f.state), 0);
    grad.assign((n + 1) * dtype_size(f.grad), 0);
  }
  static void set(std::vector<uint8_t>& b, DType d, int64_t i, float x) {
    store_from_float(d, b.data(), static_cast<std::size_t>(i + 1), x);
  }
  static float get(const std::vector<uint8_t>& b, DType d, int64_t i) {
    return load_as_float(d, b.data(), static_cast<std::size_t>(i + 1));
  }
  // Realistic values: var ~ N(0, 1), m ~ N(0, 0.1), v and max near 0.5, grad ~ N(0, 0.3).
  void fill(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < n; ++i) {
      set(var, form.state, i, normal(rng));
      set(m, form.state, i, 0.1f * normal(rng));
      set(v, form.state, i, 0.5f + 0.05f * normal(rng));
      set(max, form.state, i, 0.5f + 0.05f * normal(rng));
      set(grad, form.grad, i, 0.3f * normal(rng));
    }
  }
  TensorView view(std::vector<uint8_t>& b, DType d, int offset = 1) {
    return TensorView(b.data() + offset * dtype_size(d), d, shape);
  }
  ApplyAdamWV2Tensors tensors(bool with_max) {
    ApplyAdamWV2Tensors t{.var = view(var, form.state),
                          .m = view(m, form.state),
                          .v = view(v, form.state),
                          .max_grad_norm = std::nullopt,
                          .grad = view(grad, form.grad),
                          .step = step_is_f32 ? TensorView(&step_f32, DType::kFloat32, {1})
                                              : TensorView(&step_i64, DType::kInt64, {1})};
    if (with_max) t.max_grad_norm = view(max, form.state);
    return t;
  }
};

// The reference: the kit's golden32 applied to a copy.
Problem reference(const Problem& p, const ApplyAdamWV2Params& params, bool with_max) {
  Problem r = p;
  apply_golden32<Op>(r.tensors(with_max), params);
  return r;
}

// "" when every written buffer of `got` has the bits of `want`.
std::string compare(const Problem& got, const Problem& want) {
  const std::pair<const char*, const std::vector<uint8_t> Problem::*> buffers[] = {
      {"var", &Problem::var}, {"m", &Problem::m}, {"v", &Problem::v}, {"max", &Problem::max}};
  for (const auto& [name, b] : buffers) {
    const int64_t i =
        first_bit_difference((got.*b).data(), (want.*b).data(), got.n + 1, got.form.state);
    if (i >= 0) {
      return std::string(name) + "[" + std::to_string(i - 1) +
             "]: " + std::to_string(Problem::get(got.*b, got.form.state, i - 1)) + " vs " +
             std::to_string(Problem::get(want.*b, want.form.state, i - 1));
    }
  }
  return "";
}

std::vector<ApplyAdamWV2Params> flag_sets() {
  std::vector<ApplyAdamWV2Params> sets;
  for (bool amsgrad : {false, true}) {
    for (bool maximize : {false, true}) {
      ApplyAdamWV2Params p;
      p.amsgrad = amsgrad;
      p.maximize = maximize;
      sets.push_back(p);
    }
  }
  return sets;
}

// ---------------------------------------------------------------------------------------------
// The worked example of docs/ops/apply_adam_w_v2.md: fp32, one element, the first step.

TEST(ApplyAdamWV2, WorkedExampleFromDocs) {
  Problem p({DType::kFloat32, DType::kFloat32}, 1);
  Problem::set(p.var, DType::kFloat32, 0, 1.0f);
  Problem::set(p.m, DType::kFloat32, 0, 0.2f);
  Problem::set(p.v, DType::kFloat32, 0, 0.01f);
  Problem::set(p.grad, DType::kFloat32, 0, 0.5f);
  p.step_i64 = 0;  // no step taken yet: t = 1
  ASSERT_TRUE(apply_adam_w_v2(p.tensors(false), {}).ok());
  auto bits = [&](const std::vector<uint8_t>& b) {
    return std::bit_cast<uint32_t>(Problem::get(b, DType::kFloat32, 0));
  };
  // Values computed independently (numpy float32 with the spec's grouping).
  EXPECT_EQ(bits(p.m), 0x3E6B8520u);    // 0.230000019
  EXPECT_EQ(bits(p.v), 0x3C27C5A9u);    // 0.0102399970
  EXPECT_EQ(bits(p.var), 0x3F7FD03Du);  // 0.999271214
  // The per-call constants, computed in double and rounded once.
  EXPECT_EQ(std::bit_cast<uint32_t>(static_cast<float>(1e-3f / (1.0 - std::pow(0.9f, 1.0)))),
            0x3C23D708u);  // step_size 0.00999999791
  EXPECT_EQ(
      std::bit_cast<uint32_t>(static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(0.999f, 1.0)))),
      0x41FCFBDDu);  // inv_bc2_sqrt 31.6229801
}

// The host constants come from double: with beta2 = 0.99999 at the tenth step, beta2^t rounded
// to fp32 leaves 1 - beta2^t with only a few correct bits, and the double form differs.
TEST(ApplyAdamWV2, HostConstantsAreComputedInDouble) {
  const float beta1 = 0.9f, beta2 = 0.99999f, lr = 1e-3f;
  const double t = 10.0;
  const auto in_double = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(double{beta2}, t)));
  const float in_float = 1.0f / std::sqrt(1.0f - std::pow(beta2, 10.0f));
  EXPECT_NE(in_double, in_float);  // what the choice changes
  Problem p({DType::kFloat32, DType::kFloat32}, 1);
  Problem::set(p.var, DType::kFloat32, 0, 1.0f);
  Problem::set(p.grad, DType::kFloat32, 0, 0.5f);
  p.step_i64 = 9;
  ApplyAdamWV2Params params;
  params.lr = lr;
  params.beta1 = beta1;
  params.beta2 = beta2;
  params.weight_decay = 0.0f;
  params.eps = 0.0f;
  ASSERT_TRUE(apply_adam_w_v2(p.tensors(false), params).ok());
  // By hand in the spec's grouping, with the double constants.
  const auto one_m_b1 = static_cast<float>(1.0 - double{beta1});
  const auto one_m_b2 = static_cast<float>(1.0 - double{beta2});
  const float m_new = 0.0f + ((0.5f - 0.0f) * one_m_b1);
  const float v_new = (0.0f * beta2) + ((0.5f * 0.5f) * one_m_b2);
  const float denom = (std::sqrt(v_new) * in_double) + 0.0f;
  const auto step_size = static_cast<float>(double{lr} / (1.0 - std::pow(double{beta1}, t)));
  const float decay = 1.0f;  // 1 - lr * 0
  const float var_new = (1.0f * decay) - ((m_new / denom) * step_size);
  EXPECT_EQ(Problem::get(p.var, DType::kFloat32, 0), var_new);
  // With the fp32 constant the result would differ.
  const float var_fp32 = 1.0f - ((m_new / ((std::sqrt(v_new) * in_float) + 0.0f)) * step_size);
  EXPECT_NE(var_fp32, var_new);
}

// ---------------------------------------------------------------------------------------------
// Bit for bit against golden32: every form x flags x size x target x thread count.

TEST(ApplyAdamWV2, BitExactOnEveryTargetThreadCountAndSize) {
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n <= 49; ++n) sizes.push_back(n);
  for (int64_t n : {63, 64, 65, 127, 129, 255, 1001}) sizes.push_back(n);
  sizes.push_back(3 * kGrain + 5);  // three full chunks and a tail
  uint64_t seed = 100;
  for (const Form& form : kForms) {
    for (const ApplyAdamWV2Params& params : flag_sets()) {
      for (int64_t n : sizes) {
        Problem p(form, n);
        p.fill(++seed);
        p.step_is_f32 = (n % 2) == 1;  // both step dtypes
        const Problem want = reference(p, params, params.amsgrad);
        for_each_target_and_thread_count([&](const std::string&, int) {
          Problem got = p;
          ASSERT_TRUE(apply_adam_w_v2(got.tensors(params.amsgrad), params).ok());
          ASSERT_EQ(compare(got, want), "") << label(form, params) << " n " << n;
        });
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// Views that start at an odd address offset (one element into the buffers) and at the start.
TEST(ApplyAdamWV2, UnalignedViewsGiveTheSameBits) {
  for (const Form& form : kForms) {
    for (const ApplyAdamWV2Params& params : flag_sets()) {
      Problem p(form, 3 * 16 + 5);
      p.fill(7);
      const Problem want = reference(p, params, params.amsgrad);
      testing::for_each_target([&](const std::string&) {
        Problem got = p;
        ASSERT_TRUE(apply_adam_w_v2(got.tensors(params.amsgrad), params).ok());
        EXPECT_EQ(compare(got, want), "") << label(form, params);
        // The element before the views is never written.
        EXPECT_EQ(got.var[0], 0);
        EXPECT_EQ(got.m[0], 0);
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Special values: every combination over (var, m, v, grad, max_grad_norm) on every target, with
// hyper-parameters at their edges; every bit equals golden32 (a computed NaN is canonical).

TEST(ApplyAdamWV2, SpecialValuesMatchGolden32) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<ApplyAdamWV2Params> hyper;
  for (const ApplyAdamWV2Params& flags : flag_sets()) {
    ApplyAdamWV2Params p = flags;
    hyper.push_back(p);
    p.eps = 0.0f;  // 0 / 0 where v and grad are zero
    hyper.push_back(p);
    ApplyAdamWV2Params q = flags;
    q.beta1 = 1.0f;  // 1 - beta1^t = 0: an infinite step size
    q.lr = inf;
    hyper.push_back(q);
    q = flags;
    q.beta2 = nan;
    q.weight_decay = 0.0f;
    hyper.push_back(q);
  }
  for (const Form& form : kForms) {
    const std::vector<uint32_t> s = testing::special_bits(form.state);
    const std::vector<uint32_t> g = testing::special_bits(form.grad);
    const auto k = static_cast<int64_t>(s.size());
    Problem p(form, k * k * k * k * 2);
    // Raw bits: var, m, v run through every combination; max and grad cycle.
    const std::size_t ss = dtype_size(form.state), gs = dtype_size(form.grad);
    for (int64_t i = 0; i < p.n; ++i) {
      const uint32_t bits[] = {s[static_cast<std::size_t>(i % k)],
                               s[static_cast<std::size_t>(i / k % k)],
                               s[static_cast<std::size_t>(i / (k * k) % k)],
                               s[static_cast<std::size_t>((i / 3 + i) % k)]};
      std::vector<uint8_t>* state[] = {&p.var, &p.m, &p.v, &p.max};
      for (int b = 0; b < 4; ++b) std::memcpy(state[b]->data() + (i + 1) * ss, &bits[b], ss);
      const uint32_t gb = g[static_cast<std::size_t>(i / (k * k * k) % g.size())];
      std::memcpy(p.grad.data() + (i + 1) * gs, &gb, gs);
    }
    for (const ApplyAdamWV2Params& params : hyper) {
      for (bool step_f32 : {false, true}) {
        p.step_is_f32 = step_f32;
        const Problem want = reference(p, params, true);
        testing::for_each_target([&](const std::string&) {
          Problem got = p;
          ASSERT_TRUE(apply_adam_w_v2(got.tensors(true), params).ok());
          EXPECT_EQ(compare(got, want), "")
              << label(form, params) << " lr " << params.lr << " beta1 " << params.beta1 << " eps "
              << params.eps << " beta2 " << params.beta2;
        });
      }
    }
  }
}

TEST(ApplyAdamWV2, ComputedNaNsAreCanonical) {
  for (const Form& form : kForms) {
    Problem p(form, 2);
    p.fill(3);
    // A signalling NaN with a payload in grad: every output of the element is the canonical NaN.
    const uint32_t snan = form.grad == DType::kFloat32   ? 0xFF800123u
                          : form.grad == DType::kFloat16 ? 0xFC21u
                                                         : 0xFF81u;
    std::memcpy(p.grad.data() + dtype_size(form.grad), &snan, dtype_size(form.grad));
    ApplyAdamWV2Params params;
    params.amsgrad = true;
    ASSERT_TRUE(apply_adam_w_v2(p.tensors(true), params).ok());
    const uint32_t canonical = form.state == DType::kFloat32   ? 0x7FC00000u
                               : form.state == DType::kFloat16 ? 0x7E00u
                                                               : 0x7FC0u;
    for (const auto* b : {&p.var, &p.m, &p.v, &p.max}) {
      uint32_t got = 0;
      std::memcpy(&got, b->data() + dtype_size(form.state), dtype_size(form.state));
      EXPECT_EQ(got, canonical) << dtype_name(form.state);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Properties of the contract.

TEST(ApplyAdamWV2, MaximizeIsTheStepOnTheNegatedGradient) {
  for (const Form& form : kForms) {
    Problem p(form, 301);
    p.fill(11);
    Problem negated = p;
    for (int64_t i = 0; i < p.n; ++i) {
      Problem::set(negated.grad, form.grad, i, -Problem::get(p.grad, form.grad, i));
    }
    ApplyAdamWV2Params params;
    params.maximize = true;
    ASSERT_TRUE(apply_adam_w_v2(p.tensors(false), params).ok());
    ASSERT_TRUE(apply_adam_w_v2(negated.tensors(false), {}).ok());
    EXPECT_EQ(compare(p, negated), "") << dtype_name(form.state);
  }
}

TEST(ApplyAdamWV2, AmsgradKeepsTheRunningMaximum) {
  for (const Form& form : kForms) {
    Problem p(form, 513);
    p.fill(12);
    const Problem before = p;
    ApplyAdamWV2Params params;
    params.amsgrad = true;
    ASSERT_TRUE(apply_adam_w_v2(p.tensors(true), params).ok());
    int raised = 0;
    for (int64_t i = 0; i < p.n; ++i) {
      const float old_max = Problem::get(before.max, form.state, i);
      const float v_new = Problem::get(p.v, form.state, i);
      const float max = Problem::get(p.max, form.state, i);
      EXPECT_EQ(max, std::max(old_max, v_new)) << dtype_name(form.state) << " " << i;
      raised += max != old_max;
    }
    EXPECT_GT(raised, 0);
    EXPECT_LT(raised, p.n);
    // Without amsgrad a given max_grad_norm is neither used nor written.
    Problem q = before, r = before;
    ASSERT_TRUE(apply_adam_w_v2(q.tensors(true), {}).ok());
    ASSERT_TRUE(apply_adam_w_v2(r.tensors(false), {}).ok());
    EXPECT_EQ(q.max, before.max);
    EXPECT_EQ(compare(q, r), "");
  }
}

// The master-weight form is the fp32 form on the exactly widened gradient.
TEST(ApplyAdamWV2, MasterWeightFormIsTheFp32FormOnTheWidenedGradient) {
  for (DType grad : {DType::kFloat16, DType::kBFloat16}) {
    for (const ApplyAdamWV2Params& params : flag_sets()) {
      Problem p({DType::kFloat32, grad}, 777);
      p.fill(13);
      Problem widened({DType::kFloat32, DType::kFloat32}, p.n);
      widened.var = p.var;
      widened.m = p.m;
      widened.v = p.v;
      widened.max = p.max;
      for (int64_t i = 0; i < p.n; ++i) {
        Problem::set(widened.grad, DType::kFloat32, i, Problem::get(p.grad, grad, i));
      }
      ASSERT_TRUE(apply_adam_w_v2(p.tensors(params.amsgrad), params).ok());
      ASSERT_TRUE(apply_adam_w_v2(widened.tensors(params.amsgrad), params).ok());
      EXPECT_EQ(compare(p, widened), "") << label({DType::kFloat32, grad}, params);
    }
  }
}

TEST(ApplyAdamWV2, Int64AndFp32StepsAgree) {
  for (int64_t step : {int64_t{0}, int64_t{1}, int64_t{9}, int64_t{1000}, int64_t{1} << 20}) {
    Problem a({DType::kFloat32, DType::kFloat32}, 99);
    a.fill(14);
    Problem b = a;
    a.step_i64 = step;
    b.step_is_f32 = true;
    b.step_f32 = static_cast<float>(step);
    ASSERT_TRUE(apply_adam_w_v2(a.tensors(false), {}).ok());
    ASSERT_TRUE(apply_adam_w_v2(b.tensors(false), {}).ok());
    EXPECT_EQ(compare(a, b), "") << "step " << step;
  }
}

TEST(ApplyAdamWV2, StepOfAnyOneElementShape) {
  Problem a({DType::kFloat32, DType::kFloat32}, 10);
  a.fill(15);
  Problem b = a;
  ASSERT_TRUE(apply_adam_w_v2(a.tensors(false), {}).ok());
  auto t = b.tensors(false);
  t.step = TensorView(&b.step_i64, DType::kInt64, {1, 1});
  ASSERT_TRUE(apply_adam_w_v2(t, {}).ok());
  EXPECT_EQ(compare(a, b), "");
  t.step = TensorView(&b.step_i64, DType::kInt64, std::span<const int64_t>());  // rank 0
  EXPECT_TRUE(apply_adam_w_v2_validate(t, {}).ok());
}

TEST(ApplyAdamWV2, EmptyTensorsSucceedAndTouchNothing) {
  for (const Form& form : kForms) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{0}, {4, 0}, {0, 3, 5}}) {
      ApplyAdamWV2Tensors t{.var = TensorView(nullptr, form.state, shape),
                            .m = TensorView(nullptr, form.state, shape),
                            .v = TensorView(nullptr, form.state, shape),
                            .max_grad_norm = TensorView(nullptr, form.state, shape),
                            .grad = TensorView(nullptr, form.grad, shape),
                            .step = TensorView(nullptr, DType::kInt64, {1})};
      int64_t step = 3;
      t.step.data = &step;
      ApplyAdamWV2Params params;
      params.amsgrad = true;
      EXPECT_TRUE(apply_adam_w_v2(t, params).ok());
      EXPECT_EQ(step, 3);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Validation: every row gives its status and a message naming the operator and the argument, and
// nothing is written.

class Validation {
 public:
  explicit Validation(Form form = {DType::kFloat32, DType::kFloat32}) : p_(form, 64) {
    p_.shape = {4, 16};
    p_.fill(21);
  }
  Problem& problem() { return p_; }
  ApplyAdamWV2Tensors tensors(bool with_max = true) { return p_.tensors(with_max); }
  void expect(const ApplyAdamWV2Tensors& t, const ApplyAdamWV2Params& params, StatusCode code,
              const std::string& what, const std::string& names = "") {
    const Problem before = p_;
    const Status v = apply_adam_w_v2_validate(t, params);
    const Status s = apply_adam_w_v2(t, params);
    EXPECT_EQ(v.code(), code) << what << ": " << v.message();
    EXPECT_EQ(s.code(), code) << what << ": " << s.message();
    if (code == StatusCode::kSuccess) return;
    EXPECT_NE(s.message().find("ApplyAdamWV2"), std::string::npos) << s.message();
    if (!names.empty()) {
      EXPECT_NE(s.message().find(names), std::string::npos) << s.message();
    }
    EXPECT_EQ(p_.var, before.var) << what;
    EXPECT_EQ(p_.m, before.m) << what;
    EXPECT_EQ(p_.v, before.v) << what;
    EXPECT_EQ(p_.max, before.max) << what;
  }
  void expect(const ApplyAdamWV2Tensors& t, StatusCode code, const std::string& what,
              const std::string& names = "") {
    for (const ApplyAdamWV2Params& params : flag_sets()) {
      if (!t.max_grad_norm && params.amsgrad) continue;
      expect(t, params, code, what, names);
    }
  }

 private:
  Problem p_;
};

using T = ApplyAdamWV2Tensors;
struct Member {
  const char* name;
  TensorView T::*view;  // nullptr: max_grad_norm
};
constexpr Member kMembers[] = {{"var", &T::var},           {"m", &T::m},       {"v", &T::v},
                               {"max_grad_norm", nullptr}, {"grad", &T::grad}, {"step", &T::step}};
TensorView& member(T& t, const Member& k) { return k.view ? t.*k.view : *t.max_grad_norm; }

TEST(ApplyAdamWV2Validation, ValidCallsSucceed) {
  for (const Form& form : kForms) {
    Validation f(form);
    f.expect(f.tensors(), StatusCode::kSuccess, "all given");
    f.expect(f.tensors(false), StatusCode::kSuccess, "max_grad_norm left out");
  }
  Validation f;
  auto t = f.tensors();
  t.step = TensorView(f.problem().grad.data() + 4, DType::kFloat32, {1});
  f.expect(t, StatusCode::kSuccess, "step inside grad (both read only)");
}

TEST(ApplyAdamWV2Validation, NullIs161001) {
  for (const Member& k : kMembers) {
    Validation f;
    auto t = f.tensors();
    member(t, k).data = nullptr;
    f.expect(t, StatusCode::kParamNullptr, std::string("null ") + k.name, k.name);
  }
  // max_grad_norm left out: fine without amsgrad, 161001 with it.
  Validation f;
  ApplyAdamWV2Params amsgrad;
  amsgrad.amsgrad = true;
  f.expect(f.tensors(false), amsgrad, StatusCode::kParamNullptr, "amsgrad without max_grad_norm",
           "max_grad_norm is required when amsgrad is set");
  f.expect(f.tensors(false), {}, StatusCode::kSuccess, "no amsgrad, no max_grad_norm");
  // Presence is checked before anything else.
  auto t = f.tensors(false);
  t.m.dtype = DType::kInt32;
  f.expect(t, amsgrad, StatusCode::kParamNullptr, "missing max_grad_norm before a bad dtype");
}

TEST(ApplyAdamWV2Validation, DtypeRowsAre161002) {
  for (DType bad : {DType::kInt32, DType::kFloat64, DType::kInt8, DType::kUndefined}) {
    for (const Member& k : kMembers) {
      Validation f;
      auto t = f.tensors();
      member(t, k).dtype = bad;
      f.expect(t, StatusCode::kParamInvalid, std::string(k.name) + " " + dtype_name(bad), k.name);
    }
  }
  // State tensors differing from var's dtype.
  for (const Form& form : kForms) {
    for (const Member& k : {kMembers[1], kMembers[2], kMembers[3]}) {
      for (DType other : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
        if (other == form.state) continue;
        Validation f(form);
        auto t = f.tensors();
        member(t, k).dtype = other;
        f.expect(t, StatusCode::kParamInvalid, std::string(k.name) + " dtype differs", k.name);
      }
    }
  }
  // grad: var's dtype, or fp16/bf16 with fp32 state; nothing else.
  const std::pair<DType, DType> bad_pairs[] = {{DType::kFloat16, DType::kFloat32},
                                               {DType::kFloat16, DType::kBFloat16},
                                               {DType::kBFloat16, DType::kFloat32},
                                               {DType::kBFloat16, DType::kFloat16}};
  for (const auto& [state, grad] : bad_pairs) {
    Validation f({state, state});
    auto t = f.tensors();
    t.grad.dtype = grad;
    f.expect(t, StatusCode::kParamInvalid,
             std::string("grad ") + dtype_name(grad) + " with state " + dtype_name(state),
             "grad dtype");
  }
  // step: INT64 or FLOAT only.
  for (DType bad : {DType::kInt32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    Validation f;
    auto t = f.tensors();
    t.step.dtype = bad;
    f.expect(t, StatusCode::kParamInvalid, std::string("step ") + dtype_name(bad), "step dtype");
  }
}

TEST(ApplyAdamWV2Validation, RankRowsAre161002) {
  const std::vector<int64_t> nine(9, 1);
  for (const Member& k : kMembers) {
    if (k.view == &T::step) continue;
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{}, nine}) {
      Validation f;
      auto t = f.tensors();
      TensorView& x = member(t, k);
      x = TensorView(x.data, x.dtype, std::span<const int64_t>(shape));
      f.expect(t, StatusCode::kParamInvalid,
               std::string(k.name) + " rank " + std::to_string(shape.size()), k.name);
    }
  }
  // Rank 8 is fine.
  Validation f;
  auto t = f.tensors();
  const std::vector<int64_t> eight{1, 1, 1, 1, 1, 1, 4, 16};
  for (const Member& k : kMembers) {
    if (k.view == &T::step) continue;
    TensorView& x = member(t, k);
    x = TensorView(x.data, x.dtype, std::span<const int64_t>(eight));
  }
  f.expect(t, StatusCode::kSuccess, "rank 8");
}

TEST(ApplyAdamWV2Validation, ShapeRowsAre161002) {
  for (const Member& k : kMembers) {
    if (k.view == &T::var || k.view == &T::step) continue;
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{4, 15}, {64}, {16, 4}}) {
      Validation f;
      auto t = f.tensors();
      TensorView& x = member(t, k);
      x = TensorView(x.data, x.dtype, std::span<const int64_t>(shape));
      f.expect(t, StatusCode::kParamInvalid, std::string(k.name) + " shape", k.name);
    }
  }
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2}, {0}, {1, 0}}) {
    Validation f;
    auto t = f.tensors();
    t.step = TensorView(t.step.data, t.step.dtype, std::span<const int64_t>(shape));
    f.expect(t, StatusCode::kParamInvalid, "step not one element", "step");
  }
}

TEST(ApplyAdamWV2Validation, NonContiguousIs161002) {
  for (const Member& k : kMembers) {
    if (k.view == &T::step) continue;
    Validation f;
    auto t = f.tensors();
    TensorView& x = member(t, k);
    const int64_t dims[] = {4, 16}, strides[] = {1, 4};  // column-major
    x = TensorView(x.data, x.dtype, dims, strides);
    f.expect(t, StatusCode::kParamInvalid, std::string(k.name) + " not contiguous", k.name);
  }
}

TEST(ApplyAdamWV2Validation, AliasingRules) {
  // A written tensor (var, m, v, max_grad_norm) shares no byte with any other tensor.
  for (const Member& w : {kMembers[0], kMembers[1], kMembers[2], kMembers[3]}) {
    for (const Member& other : kMembers) {
      if (std::string(other.name) == w.name) continue;
      Validation f;
      auto t = f.tensors();
      const TensorView& x = member(t, other);
      TensorView& o = member(t, w);
      o.data = x.data;  // on the other tensor's memory (step: overlapping its one element)
      f.expect(t, StatusCode::kParamInvalid, std::string(w.name) + " on " + other.name);
    }
  }
  {  // var shifted by one element over m.
    Validation f;
    auto t = f.tensors();
    t.var.data = static_cast<float*>(t.m.data) + 1;
    f.expect(t, StatusCode::kParamInvalid, "var overlapping m by all but one element");
  }
  {  // step inside v.
    Validation f;
    auto t = f.tensors();
    t.step = TensorView(static_cast<float*>(t.v.data) + 5, DType::kFloat32, {1});
    f.expect(t, StatusCode::kParamInvalid, "step inside v");
  }
}

}  // namespace
}  // namespace mantissa
