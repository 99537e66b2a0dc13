// The multi-tensor SGD, ApplyAdamD and AdamW steps: bitwise equal to the single-tensor operator
// on each parameter (fp32, fp16, bf16, master weights with and without a working copy) on every
// SIMD target and at 1, 2, 3 and 7 threads, for lists of 1, 3 and 300 parameters of mixed sizes
// (0 and 1 included); grad_scale and clip_coef against the documented grouping; found_inf != 0
// writes nothing; the grads are never written.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "multi_tensor_support.h"
#include "op_support.h"

namespace mantissa::testing {

namespace {

using testing::Algo;
using testing::Form;
using testing::Hyper;
using testing::ParamList;

constexpr DType kF32 = DType::kFloat32;
constexpr DType kF16 = DType::kFloat16;
constexpr DType kBF16 = DType::kBFloat16;

std::vector<Hyper> hypers(Algo algo) {
  std::vector<Hyper> out;
  if (algo == Algo::kSgd) {
    Hyper a;
    a.sgd = {0.01f, 0.9f, 0.1f, 1e-4f, false};
    Hyper b;
    b.sgd = {0.05f, 0.8f, 0.0f, 0.0f, true};
    Hyper c;
    c.sgd = {0.1f, 0.0f, 0.25f, 0.0f, false};  // momentum 0: accum and stat not written
    out = {a, b, c};
  } else if (algo == Algo::kAdamD) {
    Hyper a;
    a.adam_d = {0.729f, 0.997003f, 0.001f, 0.9f, 0.999f, 1e-7f, false};
    Hyper b = a;
    b.adam_d.use_nesterov = true;
    out = {a, b};
  } else {
    Hyper a;
    a.adam_w.step = 4;
    Hyper b;
    b.adam_w.step = 0;
    b.adam_w.hyper = {2e-3f, 0.8f, 0.99f, 0.1f, 1e-6f, true, true};
    out = {a, b};
  }
  return out;
}

const std::vector<Form>& all_forms() {
  static const std::vector<Form> forms{{kF32, kF32, std::nullopt},   {kF16, kF16, std::nullopt},
                                       {kBF16, kBF16, std::nullopt}, {kF32, kF16, std::nullopt},
                                       {kF32, kBF16, std::nullopt},  {kF32, kBF16, kBF16},
                                       {kF32, kF16, kF16},           {kF32, kF32, kBF16}};
  return forms;
}

const char* name(Algo a) {
  return a == Algo::kSgd ? "SGD" : a == Algo::kAdamD ? "ApplyAdamD" : "AdamW";
}

// multi == single on each tensor, every target and thread count.
void check_bitwise(Algo algo, std::size_t count, const std::vector<Form>& forms) {
  int h_index = 0;
  for (const Hyper& h : hypers(algo)) {
    SCOPED_TRACE(std::string(name(algo)) + " hyper-parameter set " + std::to_string(h_index++) +
                 ", " + std::to_string(count) + " parameters");
    const ParamList start = testing::make_list(count, forms, algo, 1000 + count);
    ParamList want = start;
    testing::reference_step(algo, want, h);
    if (::testing::Test::HasFatalFailure()) return;
    testing::for_each_target_and_thread_count([&](const std::string&, int) {
      ParamList got = start;
      ASSERT_TRUE(testing::multi_step(algo, got, h).ok());
      const std::string diff = testing::first_difference(got, want);
      ASSERT_EQ(diff, "") << "differs from the single-tensor operator";
    });
  }
}

TEST(MultiTensorOptim, SgdEqualsSingleTensorOperator) {
  for (std::size_t count : {1u, 3u, 300u}) check_bitwise(Algo::kSgd, count, all_forms());
}

TEST(MultiTensorOptim, ApplyAdamDEqualsSingleTensorOperator) {
  for (std::size_t count : {1u, 3u, 300u}) check_bitwise(Algo::kAdamD, count, all_forms());
}

TEST(MultiTensorOptim, AdamWEqualsSingleTensorOperator) {
  for (std::size_t count : {1u, 3u, 300u}) check_bitwise(Algo::kAdamW, count, all_forms());
}

// Each dtype alone as well (one form per list).
TEST(MultiTensorOptim, OneDtypeListsEqualSingleTensorOperator) {
  for (Algo algo : {Algo::kSgd, Algo::kAdamD, Algo::kAdamW}) {
    for (const Form& f : all_forms()) check_bitwise(algo, 3, {f});
  }
}

// Special values (+-0, +-inf, NaN with payloads, subnormals, the largest finite) in every
// tensor: still the single operator's bits (canonical NaNs, IEEE propagation).
TEST(MultiTensorOptim, SpecialValuesEqualSingleTensorOperator) {
  for (Algo algo : {Algo::kSgd, Algo::kAdamD, Algo::kAdamW}) {
    for (const Hyper& h : hypers(algo)) {
      ParamList start = testing::make_list(60, all_forms(), algo, 77);
      std::mt19937_64 rng(5);
      for (auto& p : start.params) {
        for (testing::Buf* b : {&p.var, &p.s0, &p.s1, &p.s2, &p.grad}) {
          const std::vector<uint32_t> specials = testing::special_bits(b->dtype);
          for (int64_t i = 0; i < p.n; ++i) {
            if (rng() % 10 == 0) {
              const uint32_t bits = specials[rng() % specials.size()];
              std::memcpy(b->bytes.data() + i * dtype_size(b->dtype), &bits, dtype_size(b->dtype));
            }
          }
        }
      }
      ParamList want = start;
      testing::reference_step(algo, want, h);
      testing::for_each_target_and_thread_count(
          [&](const std::string&, int) {
            ParamList got = start;
            ASSERT_TRUE(testing::multi_step(algo, got, h).ok());
            ASSERT_EQ(testing::first_difference(got, want), "") << name(algo);
          },
          {1, 3});
    }
  }
}

// The working copy is RNE(new master) bit for bit (checked directly, not only against the
// reference's rounding).
TEST(MultiTensorOptim, WorkingCopyIsRoundedMaster) {
  for (Algo algo : {Algo::kSgd, Algo::kAdamD, Algo::kAdamW}) {
    ParamList l = testing::make_list(40, {{kF32, kBF16, kBF16}, {kF32, kF16, kF16}}, algo, 7);
    ASSERT_TRUE(testing::multi_step(algo, l, hypers(algo)[0]).ok());
    for (auto& p : l.params) {
      for (int64_t i = 0; i < p.n; ++i) {
        const float master = p.var.get(i);
        const uint16_t want =
            p.working.dtype == kBF16 ? float_to_bf16_bits(master) : float_to_fp16_bits(master);
        uint16_t got;
        std::memcpy(&got, p.working.bytes.data() + 2 * i, 2);
        ASSERT_EQ(got, want) << name(algo) << " element " << i;
      }
    }
  }
}

// grad_scale and clip_coef: g = (fp32(grad) / grad_scale) * clip_coef, then the operator's
// math: equal to the single-tensor operator given that fp32 g (fp32 state; master weights).
TEST(MultiTensorOptim, GradScaleAndClipFollowTheDocumentedGrouping) {
  const std::vector<Form> forms{
      {kF32, kF32, std::nullopt}, {kF32, kBF16, kBF16}, {kF32, kF16, std::nullopt}};
  struct Case {
    std::optional<float> scale, clip;
  };
  for (const Case c : {Case{65536.0f, std::nullopt}, Case{std::nullopt, 0.37f}, Case{3.0f, 0.7f},
                       Case{0.1f, 0.3f}}) {
    for (Algo algo : {Algo::kSgd, Algo::kAdamD, Algo::kAdamW}) {
      SCOPED_TRACE(name(algo));
      const Hyper h = hypers(algo)[0];
      ParamList start = testing::make_list(300, forms, algo, 99);
      // Scaled grads: multiply by the scale so that the unscaled values are ordinary.
      for (auto& p : start.params) {
        for (int64_t i = 0; i < p.n; ++i) p.grad.set(i, p.grad.get(i) * c.scale.value_or(1.0f));
      }
      ParamList want = start;
      testing::reference_step(algo, want, h, c.scale, c.clip);
      testing::for_each_target_and_thread_count(
          [&](const std::string&, int) {
            ParamList got = start;
            float scale = c.scale.value_or(1.0f), found = 0.0f;
            FusedStepOptions o;
            if (c.scale) o.grad_scale = TensorView(&scale, kF32, {1});
            o.found_inf = TensorView(&found, kF32, {});
            o.clip_coef = c.clip;
            ASSERT_TRUE(testing::multi_step(algo, got, h, o).ok());
            ASSERT_EQ(testing::first_difference(got, want), "");
            // The grads are read only.
            for (std::size_t k = 0; k < got.params.size(); ++k) {
              ASSERT_EQ(got.params[k].grad.bytes, start.params[k].grad.bytes);
            }
          },
          {1, 3});
    }
  }
}

// found_inf != 0 (1, inf, NaN, -0.5): nothing at all is written.
TEST(MultiTensorOptim, FoundInfWritesNothing) {
  for (Algo algo : {Algo::kSgd, Algo::kAdamD, Algo::kAdamW}) {
    for (float found : {1.0f, std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(), -0.5f}) {
      ParamList l = testing::make_list(300, all_forms(), algo, 5);
      const std::vector<uint8_t> before = l.snapshot();
      float scale = 1024.0f, f = found;
      FusedStepOptions o;
      o.grad_scale = TensorView(&scale, kF32, {1});
      o.found_inf = TensorView(&f, kF32, {1});
      ASSERT_TRUE(testing::multi_step(algo, l, hypers(algo)[0], o).ok());
      ASSERT_EQ(l.snapshot(), before) << name(algo) << " found_inf " << found;
      ASSERT_EQ(scale, 1024.0f);
    }
    // found_inf == -0.0 is zero: the step runs.
    ParamList l = testing::make_list(3, all_forms(), algo, 5);
    const std::vector<uint8_t> before = l.snapshot();
    float f = -0.0f;
    FusedStepOptions o;
    o.found_inf = TensorView(&f, kF32, {1});
    ASSERT_TRUE(testing::multi_step(algo, l, hypers(algo)[0], o).ok());
    ASSERT_NE(l.snapshot(), before);
  }
}

// SGD's momentum is read in each parameter's dtype: 1e-30 is non-zero in fp32 and bf16 (accum
// and stat written), zero in fp16 (not written), as the single operator reads it.
TEST(MultiTensorOptim, SgdScalarsAreReadInEachParametersDtype) {
  Hyper h;
  h.sgd = {0.1f, 1e-30f, 0.0f, 0.0f, false};
  const ParamList start = testing::make_list(
      3, {{kF32, kF32, std::nullopt}, {kF16, kF16, std::nullopt}, {kBF16, kBF16, std::nullopt}},
      Algo::kSgd, 3);
  ParamList want = start, got = start;
  testing::reference_step(Algo::kSgd, want, h);
  ASSERT_TRUE(testing::multi_step(Algo::kSgd, got, h).ok());
  ASSERT_EQ(testing::first_difference(got, want), "");
  // The fp16 parameter (index 1, one element) kept its stat; fp32 (index 0) cleared it.
  ASSERT_EQ(got.params[1].s1.bytes, start.params[1].s1.bytes);
}

// An empty list and a list of empty tensors succeed and touch nothing.
TEST(MultiTensorOptim, EmptyLists) {
  ParamList l;
  ASSERT_TRUE(testing::multi_step(Algo::kAdamW, l, hypers(Algo::kAdamW)[0]).ok());
  std::mt19937_64 rng(1);
  l.params.push_back(testing::make_param({0}, {kF32, kF32, std::nullopt}, Algo::kAdamW, rng));
  l.params.push_back(testing::make_param({4, 0}, {kBF16, kBF16, std::nullopt}, Algo::kAdamW, rng));
  for (Algo algo : {Algo::kSgd, Algo::kAdamD, Algo::kAdamW}) {
    ASSERT_TRUE(testing::multi_step(algo, l, hypers(algo)[0]).ok());
  }
}

}  // namespace

}  // namespace mantissa::testing
