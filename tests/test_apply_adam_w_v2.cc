// ApplyAdamWV2 through the C++ API: bits against the kit's golden32 on every SIMD target and
// thread count (every form and flag, sizes around the vector widths and the parallel grain,
// unaligned views, special values), the properties of the contract (maximize, amsgrad, the
// master-weight form, step dtypes), and every validation row with nothing written.
//
// Below the C++ API's tests: the aclnn two-phase entry and op-by-name (aclopCompileAndExecuteV2),
// each section headed "// ====".

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

#include "acl/acl.h"
#include "aclnnop/aclnn_apply_adam_w_v2.h"
#include "aclop_support.h"
#include "mantissa/dtype.h"
#include "mantissa/ops/apply_adam_w_v2.h"
#include "mantissa/runtime.h"
#include "op_support.h"

namespace mantissa::testing {

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

// A step whose t = step + 1 is not positive (or NaN) is refused and nothing is written; a
// fractional fp32 step above -1 is computed with, as upstream does.
TEST(ApplyAdamWV2, StepsWhoseCountIsNotPositiveAreRefused) {
  const std::vector<std::pair<bool, double>> steps{
      {false, -1.0}, {false, -1000.0}, {true, -1.0}, {true, -2.5}, {true, std::nan("")}};
  for (const auto& [f32, step] : steps) {
    SCOPED_TRACE(step);
    Problem a({DType::kFloat32, DType::kFloat32}, 12);
    a.fill(16);
    const Problem before = a;
    a.step_is_f32 = f32;
    a.step_f32 = static_cast<float>(step);
    a.step_i64 = static_cast<int64_t>(f32 ? 0 : step);
    const Status st = apply_adam_w_v2(a.tensors(false), {});
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
    EXPECT_NE(st.message().find("t = step + 1 must be positive"), std::string::npos)
        << st.message();
    EXPECT_EQ(compare(a, before), "");
  }
  Problem ok({DType::kFloat32, DType::kFloat32}, 12);
  ok.fill(16);
  ok.step_is_f32 = true;
  ok.step_f32 = -0.5f;
  EXPECT_TRUE(apply_adam_w_v2(ok.tensors(false), {}).ok());
  // The fused list form takes an integer count of steps taken: negative is refused.
  Problem l({DType::kFloat32, DType::kFloat32}, 12);
  l.fill(16);
  const auto t = l.tensors(false);
  const AdamWParamTensors one{.var = t.var,
                              .m = t.m,
                              .v = t.v,
                              .max_grad_norm = std::nullopt,
                              .grad = t.grad,
                              .working = std::nullopt,
                              .compensation = std::nullopt};
  MultiAdamWParams hp;
  hp.step = -1;
  const Status st = multi_tensor_adam_w({&one, 1}, hp);
  EXPECT_NE(st.message().find("step is -1, but it counts the steps already taken"),
            std::string::npos)
      << st.message();
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

// ==== The aclnn entry: =======================================================
// aclnnApplyAdamWV2 through the C API: in-place updates with the C++ API's bits; strided
// (padded, transposed, reversed) tensors staged through the workspace give the same bits and
// leave the bytes around their views alone; a null maxGradNormOptionalRef; validation rows with
// their status codes and nothing written.

namespace aclnn {

namespace {

using mantissa::DType;

std::string recent() { return aclGetRecentErrMsg(); }
DType dt(aclDataType d) { return static_cast<DType>(d); }
size_t esize(aclDataType d) { return mantissa::dtype_size(dt(d)); }

constexpr uint8_t kSentinel = 0xA7;
constexpr int kRows = 4, kCols = 16, kN = kRows * kCols;

enum class Layout { kContiguous, kPadded, kTransposed, kReversed };
constexpr Layout kLayouts[] = {Layout::kContiguous, Layout::kPadded, Layout::kTransposed,
                               Layout::kReversed};

struct Geometry {
  std::vector<int64_t> dims, strides, storage;
  int64_t offset = 0;
  int64_t storage_elems() const {
    int64_t n = 1;
    for (int64_t d : storage) n *= d;
    return n;
  }
  int64_t at(int i, int j) const { return offset + i * strides[0] + j * strides[1]; }
};

Geometry geometry(Layout l) {
  switch (l) {
    case Layout::kContiguous: return {{kRows, kCols}, {kCols, 1}, {kRows, kCols}, 0};
    case Layout::kPadded: return {{kRows, kCols}, {40, 1}, {kRows + 1, 40}, 3};
    case Layout::kTransposed: return {{kRows, kCols}, {1, kRows}, {kCols, kRows}, 0};
    case Layout::kReversed: return {{kRows, kCols}, {kCols, -1}, {kN}, kCols - 1};
  }
  return {};
}

// A [kRows, kCols] tensor of the call: its storage (sentinel-filled) and the aclTensor over it.
struct Tensor {
  aclDataType dtype = ACL_FLOAT;
  Geometry g;
  std::vector<uint8_t> bytes;
  aclTensor* t = nullptr;

  Tensor() = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor() {
    if (t != nullptr) aclDestroyTensor(t);
  }
  void make(aclDataType d, Geometry geo) {
    dtype = d;
    g = std::move(geo);
    bytes.assign(static_cast<size_t>(g.storage_elems()) * esize(d), kSentinel);
    if (t != nullptr) aclDestroyTensor(t);
    t = aclCreateTensor(g.dims.data(), g.dims.size(), dtype, g.strides.data(), g.offset,
                        ACL_FORMAT_ND, g.storage.data(), g.storage.size(), bytes.data());
    ASSERT_NE(t, nullptr) << recent();
  }
  // Logical element k (row-major) <-> storage.
  int64_t index(int k) const { return g.at(k / kCols, k % kCols); }
  void set(int k, float f) {
    mantissa::store_from_float(dt(dtype), bytes.data(), static_cast<size_t>(index(k)), f);
  }
  uint32_t bits(int k) const {
    uint32_t u = 0;
    std::memcpy(&u, bytes.data() + index(k) * esize(dtype), esize(dtype));
    return u;
  }
};

// The step: one int64 or fp32 element.
struct Step {
  int64_t i64 = 9;
  float f32 = 9.0f;
  aclTensor* t = nullptr;
  explicit Step(aclDataType d = ACL_INT64) {
    const int64_t dims[] = {1}, strides[] = {1};
    t = aclCreateTensor(dims, 1, d, strides, 0, ACL_FORMAT_ND, dims, 1,
                        d == ACL_INT64 ? static_cast<void*>(&i64) : static_cast<void*>(&f32));
  }
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;
  ~Step() { aclDestroyTensor(t); }
};

struct Values {
  std::vector<float> var, m, v, max, grad;
};

Values make_values(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  Values x;
  for (int k = 0; k < kN; ++k) {
    x.var.push_back(n(rng));
    x.m.push_back(0.1f * n(rng));
    x.v.push_back(0.5f + 0.05f * n(rng));
    x.max.push_back(0.5f + 0.05f * n(rng));
    x.grad.push_back(0.3f * n(rng));
  }
  return x;
}

// The C++ API on contiguous buffers: the reference bits of var, m, v, max (row-major).
struct Bits {
  std::vector<uint32_t> var, m, v, max;
};

Bits cpp_reference(aclDataType state, aclDataType grad, const Values& x,
                   const mantissa::ApplyAdamWV2Params& p) {
  auto buffer = [&](aclDataType d, const std::vector<float>& f) {
    std::vector<uint8_t> b(kN * esize(d));
    for (int k = 0; k < kN; ++k) mantissa::store_from_float(dt(d), b.data(), k, f[k]);
    return b;
  };
  std::vector<uint8_t> var = buffer(state, x.var), m = buffer(state, x.m), v = buffer(state, x.v),
                       max = buffer(state, x.max), g = buffer(grad, x.grad);
  int64_t step = 9;
  const std::vector<int64_t> shape{kRows, kCols};
  mantissa::ApplyAdamWV2Tensors t{
      .var = {var.data(), dt(state), shape},
      .m = {m.data(), dt(state), shape},
      .v = {v.data(), dt(state), shape},
      .max_grad_norm = mantissa::TensorView(max.data(), dt(state), shape),
      .grad = {g.data(), dt(grad), shape},
      .step = {&step, DType::kInt64, {1}}};
  EXPECT_TRUE(mantissa::apply_adam_w_v2(t, p).ok());
  auto bits = [&](const std::vector<uint8_t>& b) {
    std::vector<uint32_t> out(kN);
    for (int k = 0; k < kN; ++k) std::memcpy(&out[k], b.data() + k * esize(state), esize(state));
    return out;
  };
  return {bits(var), bits(m), bits(v), bits(max)};
}

// One two-phase call; returns phase one's status (phase two must succeed when it does).
aclnnStatus call(aclTensor* var, aclTensor* m, aclTensor* v, aclTensor* max, aclTensor* grad,
                 aclTensor* step, const mantissa::ApplyAdamWV2Params& p,
                 uint64_t* workspace_size = nullptr) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus s = aclnnApplyAdamWV2GetWorkspaceSize(var, m, v, max, grad, step, p.lr, p.beta1,
                                                          p.beta2, p.weight_decay, p.eps, p.amsgrad,
                                                          p.maximize, &size, &executor);
  if (s != ACLNN_SUCCESS) return s;
  if (workspace_size) *workspace_size = size;
  std::vector<uint64_t> ws((size + 7) / 8);
  EXPECT_EQ(aclnnApplyAdamWV2(ws.empty() ? nullptr : ws.data(), size, executor, nullptr),
            ACLNN_SUCCESS)
      << recent();
  return s;
}

struct Form {
  aclDataType state, grad;
};
constexpr Form kForms[] = {{ACL_FLOAT, ACL_FLOAT},
                           {ACL_FLOAT16, ACL_FLOAT16},
                           {ACL_BF16, ACL_BF16},
                           {ACL_FLOAT, ACL_FLOAT16},
                           {ACL_FLOAT, ACL_BF16}};

TEST(AclnnApplyAdamWV2, StridedInPlaceGivesTheCppApiBits) {
  uint32_t seed = 1;
  for (const Form& form : kForms) {
    for (bool amsgrad : {false, true}) {
      for (bool maximize : {false, true}) {
        mantissa::ApplyAdamWV2Params p;
        p.amsgrad = amsgrad;
        p.maximize = maximize;
        const Values x = make_values(++seed);
        const Bits want = cpp_reference(form.state, form.grad, x, p);
        for (Layout l : kLayouts) {
          // All contiguous, or each tensor in its own strided layout (rotated), so different
          // layouts meet in one call.
          Tensor var, m, v, max, grad;
          Tensor* all[] = {&var, &m, &v, &max, &grad};
          const std::vector<float>* vals[] = {&x.var, &x.m, &x.v, &x.max, &x.grad};
          for (int k = 0; k < 5; ++k) {
            const Layout lk =
                l == Layout::kContiguous ? l : kLayouts[1 + (static_cast<int>(l) - 1 + k) % 3];
            all[k]->make(k == 4 ? form.grad : form.state, geometry(lk));
            for (int e = 0; e < kN; ++e) all[k]->set(e, (*vals[k])[e]);
          }
          const std::vector<uint8_t> grad_before = grad.bytes, max_before = max.bytes;
          Step step;
          uint64_t size = 0;
          ASSERT_EQ(call(var.t, m.t, v.t, max.t, grad.t, step.t, p, &size), ACLNN_SUCCESS)
              << recent();
          if (l == Layout::kContiguous) {
            EXPECT_EQ(size, 0u) << "contiguous in-place needs no workspace";
          }
          for (int e = 0; e < kN; ++e) {
            ASSERT_EQ(var.bits(e), want.var[e]) << e;
            ASSERT_EQ(m.bits(e), want.m[e]) << e;
            ASSERT_EQ(v.bits(e), want.v[e]) << e;
            if (amsgrad) {
              ASSERT_EQ(max.bits(e), want.max[e]) << e;
            }
          }
          if (!amsgrad) {
            EXPECT_EQ(max.bytes, max_before) << "max_grad_norm written";
          }
          EXPECT_EQ(grad.bytes, grad_before) << "grad written";
          // Bytes outside the views keep the sentinel.
          for (Tensor* t : {&var, &m, &v}) {
            std::vector<bool> in_view(t->bytes.size() / esize(t->dtype), false);
            for (int e = 0; e < kN; ++e) in_view[static_cast<size_t>(t->index(e))] = true;
            for (size_t i = 0; i < in_view.size(); ++i) {
              if (in_view[i]) continue;
              for (size_t b = 0; b < esize(t->dtype); ++b) {
                ASSERT_EQ(t->bytes[i * esize(t->dtype) + b], kSentinel) << "padding written";
              }
            }
          }
        }
      }
    }
  }
}

TEST(AclnnApplyAdamWV2, NullMaxGradNormWithoutAmsgrad) {
  const Values x = make_values(50);
  const Bits want = cpp_reference(ACL_FLOAT, ACL_FLOAT, x, {});
  Tensor var, m, v, grad;
  Tensor* all[] = {&var, &m, &v, &grad};
  const std::vector<float>* vals[] = {&x.var, &x.m, &x.v, &x.grad};
  for (int k = 0; k < 4; ++k) {
    all[k]->make(ACL_FLOAT, geometry(Layout::kPadded));
    for (int e = 0; e < kN; ++e) all[k]->set(e, (*vals[k])[e]);
  }
  Step step(ACL_FLOAT);
  ASSERT_EQ(call(var.t, m.t, v.t, nullptr, grad.t, step.t, {}), ACLNN_SUCCESS) << recent();
  for (int e = 0; e < kN; ++e) ASSERT_EQ(var.bits(e), want.var[e]);
}

// ---- Validation rows ------------------------------------------------------------------------

struct Call {
  Tensor var, m, v, max, grad;
  Step step;
  Call(Form form = {ACL_FLOAT, ACL_FLOAT}) {
    for (Tensor* t : {&var, &m, &v, &max}) t->make(form.state, geometry(Layout::kContiguous));
    grad.make(form.grad, geometry(Layout::kContiguous));
    const Values x = make_values(7);
    for (int e = 0; e < kN; ++e) {
      var.set(e, x.var[e]);
      m.set(e, x.m[e]);
      v.set(e, x.v[e]);
      max.set(e, x.max[e]);
      grad.set(e, x.grad[e]);
    }
  }
  // Calls with the given handles and checks the status, the message and that nothing changed.
  void expect(aclTensor* a, aclTensor* b, aclTensor* c, aclTensor* d, aclTensor* g, aclTensor* s,
              const mantissa::ApplyAdamWV2Params& p, aclnnStatus code, const std::string& what,
              const std::string& name) {
    const auto before = std::vector<std::vector<uint8_t>>{var.bytes, m.bytes, v.bytes, max.bytes};
    EXPECT_EQ(call(a, b, c, d, g, s, p), code) << what << ": " << recent();
    if (code == ACLNN_SUCCESS) return;
    const std::string msg = recent();
    EXPECT_NE(msg.find("ApplyAdamWV2"), std::string::npos) << msg;
    EXPECT_NE(msg.find(name), std::string::npos) << what << ": " << msg;
    const auto after = std::vector<std::vector<uint8_t>>{var.bytes, m.bytes, v.bytes, max.bytes};
    EXPECT_EQ(before, after) << what << ": a tensor was written";
  }
};

TEST(AclnnApplyAdamWV2Validation, NullsAre161001) {
  mantissa::ApplyAdamWV2Params amsgrad;
  amsgrad.amsgrad = true;
  for (int k = 0; k < 6; ++k) {
    if (k == 3) continue;
    Call c;
    aclTensor* h[] = {c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, c.step.t};
    const char* names[] = {"varRef", "mRef", "vRef", "maxGradNormOptionalRef", "grad", "step"};
    h[k] = nullptr;
    c.expect(h[0], h[1], h[2], h[3], h[4], h[5], {}, ACLNN_ERR_PARAM_NULLPTR, names[k], names[k]);
  }
  Call c;
  c.expect(c.var.t, c.m.t, c.v.t, nullptr, c.grad.t, c.step.t, amsgrad, ACLNN_ERR_PARAM_NULLPTR,
           "null maxGradNormOptionalRef with amsgrad", "maxGradNormOptionalRef");
  // Null out-pointers.
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnApplyAdamWV2GetWorkspaceSize(c.var.t, c.m.t, c.v.t, nullptr, c.grad.t, c.step.t,
                                              1e-3f, 0.9f, 0.999f, 0.01f, 1e-8f, false, false,
                                              nullptr, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
}

TEST(AclnnApplyAdamWV2Validation, InvalidAre161002) {
  mantissa::ApplyAdamWV2Params amsgrad;
  amsgrad.amsgrad = true;
  {  // A state tensor of another dtype.
    Call c;
    c.m.make(ACL_FLOAT16, geometry(Layout::kContiguous));
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, c.step.t, {}, ACLNN_ERR_PARAM_INVALID,
             "m fp16 with var fp32", "m");
  }
  {  // fp32 grad with fp16 state.
    Call c({ACL_FLOAT16, ACL_FLOAT});
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, c.step.t, {}, ACLNN_ERR_PARAM_INVALID,
             "grad fp32 with var fp16", "grad");
  }
  {  // max_grad_norm in grad's dtype in the master-weight form (the spec: fp32 state).
    Call c({ACL_FLOAT, ACL_BF16});
    c.max.make(ACL_BF16, geometry(Layout::kContiguous));
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, c.step.t, amsgrad, ACLNN_ERR_PARAM_INVALID,
             "max_grad_norm bf16 with var fp32", "max_grad_norm");
  }
  {  // step int32; step of two elements.
    Call c;
    int32_t s32 = 3;
    const int64_t one[] = {1}, two[] = {2}, strides[] = {1};
    aclTensor* step32 = aclCreateTensor(one, 1, ACL_INT32, strides, 0, ACL_FORMAT_ND, one, 1, &s32);
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, step32, {}, ACLNN_ERR_PARAM_INVALID,
             "step int32", "step");
    aclDestroyTensor(step32);
    int64_t s64[2] = {3, 4};
    aclTensor* step2 = aclCreateTensor(two, 1, ACL_INT64, strides, 0, ACL_FORMAT_ND, two, 1, s64);
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, step2, {}, ACLNN_ERR_PARAM_INVALID,
             "step of two elements", "step");
    aclDestroyTensor(step2);
  }
  {  // Shape mismatch: v of [16, 4].
    Call c;
    Geometry g{{kCols, kRows}, {kRows, 1}, {kCols, kRows}, 0};
    c.v.make(ACL_FLOAT, g);
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, c.step.t, {}, ACLNN_ERR_PARAM_INVALID,
             "v shape", "v");
  }
  {  // A state tensor sharing storage with another (strided views over the same bytes).
    Call c;
    aclTensor* alias =
        aclCreateTensor(c.var.g.dims.data(), 2, ACL_FLOAT, c.var.g.strides.data(), 0, ACL_FORMAT_ND,
                        c.var.g.storage.data(), 2, c.var.bytes.data());
    c.expect(c.var.t, alias, c.v.t, c.max.t, c.grad.t, c.step.t, {}, ACLNN_ERR_PARAM_INVALID,
             "m on var's memory", "overlaps");
    aclDestroyTensor(alias);
  }
}

}  // namespace

}  // namespace aclnn

// ==== Op-by-name: ============================================================
// ApplyAdamWV2 by name (aclopCompileAndExecuteV2): the graph's inputs (var, m, v, grad, step,
// max_grad_norm; no outputs: the state is updated in place) and attributes give the C++ API's
// bits; an unused max_grad_norm is CANN's absent-input descriptor; attributes left out take the
// graph's defaults; rejected calls write nothing.

namespace aclop {

namespace {

using mantissa::testing::aclop_support::Arg;
using mantissa::testing::aclop_support::Call;
using mantissa::testing::aclop_support::expect_rejected_untouched;

constexpr aclError kNullptr = 161001;
constexpr aclError kInvalid = 161002;
enum { kVar, kM, kV, kGrad, kStep, kMax };  // the graph's input order

const std::vector<int64_t> kDims{5, 13};

// A call in the graph's order; max_grad_norm given, or CANN's absent-input form.
Call make_call(aclDataType state, aclDataType grad, bool with_max, aclDataType step = ACL_INT64) {
  Call c("ApplyAdamWV2");
  for (int i = 0; i < 3; ++i) c.add_in(state, kDims);
  c.add_in(grad, kDims);
  c.add_in(step, {1});
  if (with_max) {
    c.add_in(state, kDims);
  } else {
    Arg& a = c.add_in(ACL_DT_UNDEFINED, {});
    a.format = ACL_FORMAT_UNDEFINED;
    a.null_data = true;
    a.buffer_size = 0;
  }
  return c;
}

void set_attrs(Call& c, const mantissa::ApplyAdamWV2Params& p) {
  c.set_float("lr", p.lr);
  c.set_float("beta1", p.beta1);
  c.set_float("beta2", p.beta2);
  c.set_float("weight_decay", p.weight_decay);
  c.set_float("eps", p.eps);
  c.set_bool("amsgrad", p.amsgrad);
  c.set_bool("maximize", p.maximize);
}

// Realistic values in the call's memory (v and max positive), step 9.
void fill(Call& c, bool with_max, uint32_t seed) {
  c.allocate();
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const int count = kDims[0] * kDims[1];
  for (int i = 0; i < count; ++i) {
    c.in(kVar).set(i, n(rng));
    c.in(kM).set(i, 0.1f * n(rng));
    c.in(kV).set(i, 0.5f + 0.05f * n(rng));
    c.in(kGrad).set(i, 0.3f * n(rng));
    if (with_max) c.in(kMax).set(i, 0.5f + 0.05f * n(rng));
  }
  if (c.in(kStep).dtype == ACL_INT64) {
    const int64_t step = 9;
    std::memcpy(c.in(kStep).mem.data(), &step, 8);
  } else {
    c.in(kStep).set(0, 9.0f);
  }
}

// The C++ API on copies of the call's memory: the expected state afterwards.
std::vector<std::vector<uint8_t>> expected(Call& c, bool with_max,
                                           const mantissa::ApplyAdamWV2Params& p) {
  std::vector<Arg> a = c.ins();
  mantissa::ApplyAdamWV2Tensors t{.var = a[kVar].view(),
                                  .m = a[kM].view(),
                                  .v = a[kV].view(),
                                  .max_grad_norm = std::nullopt,
                                  .grad = a[kGrad].view(),
                                  .step = a[kStep].view()};
  if (with_max) t.max_grad_norm = a[kMax].view();
  EXPECT_TRUE(mantissa::apply_adam_w_v2(t, p).ok());
  return {a[kVar].mem, a[kM].mem, a[kV].mem, a[kMax].mem};
}

struct Form {
  aclDataType state, grad;
};
constexpr Form kForms[] = {{ACL_FLOAT, ACL_FLOAT},
                           {ACL_FLOAT16, ACL_FLOAT16},
                           {ACL_BF16, ACL_BF16},
                           {ACL_FLOAT, ACL_FLOAT16},
                           {ACL_FLOAT, ACL_BF16}};

TEST(AclopApplyAdamWV2, SameBitsAsTheCppApi) {
  uint32_t seed = 0;
  for (const Form& f : kForms) {
    for (bool amsgrad : {false, true}) {
      for (bool maximize : {false, true}) {
        for (bool with_max : {true, false}) {
          if (amsgrad && !with_max) continue;
          for (aclDataType step : {ACL_INT64, ACL_FLOAT}) {
            mantissa::ApplyAdamWV2Params p;
            p.amsgrad = amsgrad;
            p.maximize = maximize;
            Call c = make_call(f.state, f.grad, with_max, step);
            set_attrs(c, p);
            fill(c, with_max, ++seed);
            const auto want = expected(c, with_max, p);
            ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
            EXPECT_EQ(c.in(kVar).mem, want[0]);
            EXPECT_EQ(c.in(kM).mem, want[1]);
            EXPECT_EQ(c.in(kV).mem, want[2]);
            EXPECT_EQ(c.in(kMax).mem, want[3]);  // unchanged without amsgrad
          }
        }
      }
    }
  }
}

// Attributes left out take the graph's defaults: 0.1 for every float, false for the flags.
TEST(AclopApplyAdamWV2, AttributesLeftOutTakeTheGraphDefaults) {
  Call c = make_call(ACL_FLOAT, ACL_FLOAT, false);
  fill(c, false, 99);
  mantissa::ApplyAdamWV2Params graph_defaults{.lr = 0.1f,
                                              .beta1 = 0.1f,
                                              .beta2 = 0.1f,
                                              .weight_decay = 0.1f,
                                              .eps = 0.1f,
                                              .amsgrad = false,
                                              .maximize = false};
  const auto want = expected(c, false, graph_defaults);
  ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(c.in(kVar).mem, want[0]);
  EXPECT_EQ(c.in(kM).mem, want[1]);
}

TEST(AclopApplyAdamWV2, RejectedCallsWriteNothing) {
  {  // amsgrad with max_grad_norm left out.
    Call c = make_call(ACL_FLOAT, ACL_FLOAT, false);
    c.set_bool("amsgrad", true);
    expect_rejected_untouched(c, kNullptr, "amsgrad without max_grad_norm",
                              "max_grad_norm is required when amsgrad is set");
  }
  {  // The absent form only for the optional input.
    Call c = make_call(ACL_FLOAT, ACL_FLOAT, true);
    c.in(kGrad).dtype = ACL_DT_UNDEFINED;
    c.in(kGrad).format = ACL_FORMAT_UNDEFINED;
    expect_rejected_untouched(c, kInvalid, "grad left out", "grad");
  }
  {  // Five inputs: the placeholder of an unused optional input is still passed.
    Call c = make_call(ACL_FLOAT, ACL_FLOAT, true);
    c.ins().pop_back();
    expect_rejected_untouched(c, kInvalid, "five inputs", "numInputs");
  }
  {  // An output where the graph has none.
    Call c = make_call(ACL_FLOAT, ACL_FLOAT, true);
    c.add_out(ACL_FLOAT, kDims);
    expect_rejected_untouched(c, kInvalid, "an output", "numOutputs");
  }
  {  // The aclnn order (max_grad_norm fourth, step last) is not the graph's: the int64 step
     // lands on max_grad_norm.
    Call c("ApplyAdamWV2");
    for (int i = 0; i < 4; ++i) c.add_in(ACL_FLOAT, kDims);
    c.add_in(ACL_FLOAT, kDims);
    c.add_in(ACL_INT64, {1});
    expect_rejected_untouched(c, kInvalid, "aclnn order", "max_grad_norm dtype INT64");
  }
  {  // grad dtype not allowed with the state's.
    Call c = make_call(ACL_FLOAT16, ACL_BF16, true);
    expect_rejected_untouched(c, kInvalid, "bf16 grad with fp16 state", "grad dtype");
  }
  {  // step int32.
    Call c = make_call(ACL_FLOAT, ACL_FLOAT, true, ACL_INT32);
    expect_rejected_untouched(c, kInvalid, "int32 step", "step dtype");
  }
  {  // An attribute of the wrong type.
    Call c = make_call(ACL_FLOAT, ACL_FLOAT, true);
    c.set_int("lr", 1);
    expect_rejected_untouched(c, kInvalid, "int lr", "lr");
  }
  {  // m on var's memory.
    Call c = make_call(ACL_FLOAT, ACL_FLOAT, true);
    c.allocate();
    c.in(kM).alias_input = kVar;
    expect_rejected_untouched(c, kInvalid, "m on var", "m");
  }
}

}  // namespace

}  // namespace aclop

}  // namespace mantissa::testing
