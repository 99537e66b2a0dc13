// SGD through the C++ API: bit-exact against a scalar golden for every dtype, attribute
// combination, momentum class, SIMD target, thread count and size around the vector width;
// special values in every input; the momentum == 0 write mask; in place against a separate
// parameters_out; the documented worked examples; every validation row.
//
// Below the C++ API's tests: op-by-name (aclopCompileAndExecuteV2), each section headed "// ====".

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "aclop_support.h"
#include "core/parallel.h"
#include "core/prefetch.h"
#include "mantissa/ops/sgd.h"
#include "mantissa/runtime.h"
#include "sgd_support.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

using mantissa::testing::sgd_support::Buffer;
using mantissa::testing::sgd_support::Case;
using mantissa::testing::sgd_support::describe;
using testing::ThreadCountGuard;

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

class SgdDType : public ::testing::TestWithParam<DType> {};

// Sizes 1 .. 3x the widest vector (16 fp32 lanes) and one more, odd sizes, one size that spans
// several parallel chunks with a ragged end, so thread counts really split the work, and one
// just past the size from which 16-bit calls prefetch their streams (core/prefetch.h: four
// streams of 2 bytes), whose prefetches run past the end of every buffer.
std::vector<size_t> sweep_sizes() {
  std::vector<size_t> sizes;
  for (size_t n = 1; n <= 49; ++n) sizes.push_back(n);
  for (size_t n : {63, 65, 127, 255, 1001}) sizes.push_back(n);
  sizes.push_back(static_cast<size_t>(3 * detail::kDefaultGrain + 13));
  sizes.push_back(static_cast<size_t>(detail::kPrefetchMinBytes / 8 + 37));
  return sizes;
}

TEST_P(SgdDType, MatchesGoldenOnEveryTargetThreadCountAndSize) {
  ThreadCountGuard guard;
  const DType dt = GetParam();
  uint64_t seed = 1000;
  for (const SgdParams& prm : mantissa::testing::sgd_support::attribute_combinations()) {
    for (const auto& mom : mantissa::testing::sgd_support::momentum_values(dt)) {
      SCOPED_TRACE(std::string(describe(prm)) + " momentum " + mom.name);
      for (size_t n : sweep_sizes()) {
        const Case input =
            mantissa::testing::sgd_support::random_case(dt, n, ++seed, 0.0625f, mom.bits);
        mantissa::testing::sgd_support::check_against_golden(input, prm, {1, 2, 3, 7});
        if (HasFailure()) return;
      }
    }
  }
}

// One rare input (NaN, infinity, a subnormal) among ordinary values, at every position of two
// two-vector blocks, the one-vector remainder and the tail (83 elements): the 16-bit kernels
// handle two vectors at a time (bf16 as even and odd elements), and a rare lane sends its pair
// to the integer rounding.
TEST_P(SgdDType, OneRareInputAtEveryPosition) {
  ThreadCountGuard guard;
  const DType dt = GetParam();
  const mantissa::testing::sgd_support::Specials sp =
      mantissa::testing::sgd_support::specials_of(dt);
  SgdParams prm;
  prm.dampening = 0.25f;
  prm.weight_decay = 0.5f;
  const uint32_t momentum_0_9 = mantissa::testing::sgd_support::momentum_values(dt)[3].bits;
  const Case base =
      mantissa::testing::sgd_support::random_case(dt, 83, 4242, 0.0625f, momentum_0_9, 0);
  for (uint32_t rare : {sp.qnan_payload, sp.pos_inf, sp.min_sub}) {
    for (size_t pos = 0; pos < base.n; ++pos) {
      Case input = base;
      input.g.set_bits(pos, rare);
      SCOPED_TRACE("rare 0x" + std::to_string(rare) + " at " + std::to_string(pos));
      mantissa::testing::sgd_support::check_against_golden(input, prm, {1});
      if (HasFailure()) return;
    }
  }
}

// Every combination of special values in parameters, gradient, accum and stat, for each
// momentum class and learning rates 0.01 and +inf.
TEST_P(SgdDType, SpecialValuesInEveryInput) {
  ThreadCountGuard guard;
  const DType dt = GetParam();
  const std::vector<uint32_t> sp = mantissa::testing::sgd_support::special_list(dt);
  const size_t k = sp.size();
  Case base(dt, k * k * k * k);
  size_t i = 0;
  for (uint32_t p : sp)
    for (uint32_t g : sp)
      for (uint32_t a : sp)
        for (uint32_t s : sp) {
          base.p.set_bits(i, p);
          base.g.set_bits(i, g);
          base.a.set_bits(i, a);
          base.s.set_bits(i, s);
          ++i;
        }
  for (float lr : {0.01f, std::numeric_limits<float>::infinity(), -0.0f,
                   std::numeric_limits<float>::quiet_NaN()}) {
    for (const SgdParams& prm : mantissa::testing::sgd_support::attribute_combinations()) {
      for (const auto& mom : mantissa::testing::sgd_support::momentum_values(dt)) {
        SCOPED_TRACE(std::string(describe(prm)) + " momentum " + mom.name);
        Case input = base;
        input.lr.set(0, lr);
        input.m.set_bits(0, mom.bits);
        mantissa::testing::sgd_support::check_against_golden(input, prm, {1});
        if (HasFailure()) return;
      }
    }
  }
}

// Unusual attribute values the contract accepts: NaN, infinite and negative dampening, infinite
// and subnormal weight decay, -0.0 for both (which counts as zero and skips the term).
TEST_P(SgdDType, SpecialAttributeValues) {
  ThreadCountGuard guard;
  const DType dt = GetParam();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float tiny = std::numeric_limits<float>::denorm_min();
  uint64_t seed = 300;
  for (float d : {nan, inf, -0.5f, -0.0f, tiny}) {
    for (float wd : {0.0f, -0.0f, inf, tiny, 3.0f}) {
      for (const auto& mom : mantissa::testing::sgd_support::momentum_values(dt)) {
        const SgdParams prm{d, wd, false};
        SCOPED_TRACE(describe(prm) + " momentum " + mom.name);
        const Case input =
            mantissa::testing::sgd_support::random_case(dt, 67, ++seed, 0.25f, mom.bits);
        mantissa::testing::sgd_support::check_against_golden(input, prm, {1});
        if (HasFailure()) return;
      }
    }
  }
  for (float wd : {-0.0f, inf, tiny}) {  // nesterov with dampening -0.0 (== 0)
    const Case input = mantissa::testing::sgd_support::random_case(dt, 67, ++seed, 0.25f, 0);
    mantissa::testing::sgd_support::check_against_golden(input, {-0.0f, wd, true}, {1});
  }
}

// The spec's example: accum = +inf with momentum 0 gives inf * 0 = NaN, which reaches the
// parameters, while accum and stat keep every bit.
TEST_P(SgdDType, InfiniteAccumWithZeroMomentumGivesNaNParameters) {
  const DType dt = GetParam();
  const mantissa::testing::sgd_support::Specials sp =
      mantissa::testing::sgd_support::specials_of(dt);
  for (const SgdParams& prm : mantissa::testing::sgd_support::attribute_combinations()) {
    for (uint32_t zero : {0u, sp.neg_zero}) {
      Case c(dt, 3);
      for (size_t i = 0; i < 3; ++i) {
        c.p.set(i, 1.0f);
        c.g.set(i, 0.5f);
        c.s.set(i, 1.0f);
      }
      c.a.set_bits(0, sp.pos_inf);
      c.a.set_bits(1, sp.neg_inf);
      c.a.set_bits(2, sp.qnan_payload);
      c.lr.set(0, 0.125f);
      c.m.set_bits(0, zero);
      const Case before = c;
      ASSERT_TRUE(sgd(c.tensors(), prm).ok());
      for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(c.p.is_nan(i)) << describe(prm) << " i=" << i;
      EXPECT_TRUE(c.a.same_bytes(before.a));
      EXPECT_TRUE(c.s.same_bytes(before.s));
    }
  }
}

// momentum == 0 (and -0.0): accum and stat are never written, whatever they hold.
TEST_P(SgdDType, ZeroMomentumLeavesAccumAndStatBitIdentical) {
  const DType dt = GetParam();
  const std::vector<uint32_t> sp = mantissa::testing::sgd_support::special_list(dt);
  for (const SgdParams& prm : mantissa::testing::sgd_support::attribute_combinations()) {
    for (uint32_t zero : {0u, mantissa::testing::sgd_support::specials_of(dt).neg_zero}) {
      Case c = mantissa::testing::sgd_support::random_case(dt, 301, 77, 0.5f, zero, 30);
      for (size_t i = 0; i < sp.size(); ++i) {  // every special value in both, at the start
        c.a.set_bits(i, sp[i]);
        c.s.set_bits(sp.size() - 1 - i, sp[i]);
      }
      const Case before = c;
      Case want = c;
      mantissa::testing::sgd_support::golden_sgd(want, prm);
      ASSERT_TRUE(sgd(c.tensors(), prm).ok());
      EXPECT_EQ(std::memcmp(c.a.data(), before.a.data(), c.a.bytes()), 0) << describe(prm);
      EXPECT_EQ(std::memcmp(c.s.data(), before.s.data(), c.s.bytes()), 0) << describe(prm);
      EXPECT_EQ(mantissa::testing::sgd_support::first_difference(c.p, want.p),
                mantissa::testing::sgd_support::kNoDifference);
    }
  }
}

// Any non-zero momentum, however tiny, and NaN, writes accum_t and +0.0 to every stat element.
TEST_P(SgdDType, NonZeroMomentumWritesAccumAndPositiveZeroStat) {
  const DType dt = GetParam();
  for (const auto& mom : mantissa::testing::sgd_support::momentum_values(dt)) {
    Buffer mb(dt, 1);
    mb.set_bits(0, mom.bits);
    if (mb.get(0) == 0.0f) continue;
    for (const SgdParams& prm : mantissa::testing::sgd_support::attribute_combinations()) {
      Case c = mantissa::testing::sgd_support::random_case(dt, 77, 5, 0.25f, mom.bits, 20);
      Case want = c;
      mantissa::testing::sgd_support::golden_sgd(want, prm);
      ASSERT_TRUE(sgd(c.tensors(), prm).ok());
      for (size_t i = 0; i < c.n; ++i) ASSERT_EQ(c.s.bits(i), 0u) << mom.name << " i=" << i;
      EXPECT_EQ(mantissa::testing::sgd_support::first_difference(c.a, want.a),
                mantissa::testing::sgd_support::kNoDifference)
          << mom.name;
      if (std::isnan(mb.get(0))) {
        for (size_t i = 0; i < c.n; ++i) EXPECT_TRUE(c.p.is_nan(i) && c.a.is_nan(i));
      }
    }
  }
}

// A separate parameters_out gets the in-place result's bits and parameters is left as it was;
// parameters_out given as the very same view as parameters is the in-place form.
TEST_P(SgdDType, SeparateOutputEqualsInPlace) {
  const DType dt = GetParam();
  for (const SgdParams& prm : mantissa::testing::sgd_support::attribute_combinations()) {
    for (const auto& mom : mantissa::testing::sgd_support::momentum_values(dt)) {
      const Case input =
          mantissa::testing::sgd_support::random_case(dt, 1003, 9, 0.03125f, mom.bits);
      Case in_place = input;
      ASSERT_TRUE(sgd(in_place.tensors(), prm).ok());

      Case separate = input;
      Buffer out(dt, input.n);
      std::memset(out.data(), 0xA5, out.words.size() * 4);
      SgdTensors t = separate.tensors();
      t.parameters_out = out.view();
      ASSERT_TRUE(sgd(t, prm).ok());
      EXPECT_TRUE(out.same_bytes(in_place.p)) << describe(prm) << " " << mom.name;
      EXPECT_TRUE(separate.p.same_bytes(input.p)) << "parameters changed";
      EXPECT_TRUE(separate.a.same_bytes(in_place.a));
      EXPECT_TRUE(separate.s.same_bytes(in_place.s));

      Case same_view = input;
      SgdTensors t2 = same_view.tensors();
      t2.parameters_out = t2.parameters;
      ASSERT_TRUE(sgd(t2, prm).ok());
      EXPECT_TRUE(same_view.p.same_bytes(in_place.p));
      EXPECT_TRUE(same_view.a.same_bytes(in_place.a));
      EXPECT_TRUE(same_view.s.same_bytes(in_place.s));
    }
  }
}

// Read-only tensors may overlap: gradient may be parameters itself when parameters_out is
// separate, and learning_rate and momentum may be one element.
TEST_P(SgdDType, ReadOnlyTensorsMayOverlap) {
  const DType dt = GetParam();
  const SgdParams prm{0.0f, 0.0f, false};
  Case c = mantissa::testing::sgd_support::random_case(dt, 40, 3, 0.5f, 0);
  c.g = c.p;
  Case want = c;
  mantissa::testing::sgd_support::golden_sgd(want, prm);
  Buffer out(dt, c.n);
  SgdTensors t = c.tensors();
  t.gradient = t.parameters;  // the very same memory
  t.parameters_out = out.view();
  const Status st = sgd(t, prm);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(mantissa::testing::sgd_support::first_difference(out, want.p),
            mantissa::testing::sgd_support::kNoDifference);

  Case c2 = mantissa::testing::sgd_support::random_case(dt, 40, 4, 0.5f, 0);
  c2.m.set(0, 0.5f);
  Case want2 = c2;
  mantissa::testing::sgd_support::golden_sgd(want2, prm);
  SgdTensors t2 = c2.tensors();
  t2.momentum = t2.learning_rate;  // lr == momentum == 0.5
  ASSERT_TRUE(sgd(t2, prm).ok());
  EXPECT_EQ(mantissa::testing::sgd_support::first_difference(c2.p, want2.p),
            mantissa::testing::sgd_support::kNoDifference);
  EXPECT_EQ(mantissa::testing::sgd_support::first_difference(c2.a, want2.a),
            mantissa::testing::sgd_support::kNoDifference);
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, SgdDType, ::testing::ValuesIn(kDTypes),
                         [](const ::testing::TestParamInfo<DType>& p) {
                           return std::string(dtype_short_name(p.param));
                         });

// The worked example of the operator's documentation (fp32):
// p = 1, g = 0.5, accum = 0.25, stat = 0, lr = 0.1, m = 0.9, dampening = 0.1, wd = 0.01.
TEST(SgdWorkedExample, DocumentedNumbers) {
  float p = 1.0f, g = 0.5f, a = 0.25f, s = 0.0f, lr = 0.1f, m = 0.9f;
  SgdTensors t{TensorView(&p, DType::kFloat32, {1}),
               TensorView(&g, DType::kFloat32, {1}),
               TensorView(&lr, DType::kFloat32, {1}),
               TensorView(&a, DType::kFloat32, {1}),
               TensorView(&m, DType::kFloat32, {1}),
               TensorView(&s, DType::kFloat32, {1}),
               std::nullopt};
  ASSERT_TRUE(sgd(t, {0.1f, 0.01f, false}).ok());
  EXPECT_EQ(std::bit_cast<uint32_t>(a), 0x3F2F1AA0u) << a;  // 0.684000015
  EXPECT_EQ(std::bit_cast<uint32_t>(p), 0x3F6E7D56u) << p;  // 0.931599975
  EXPECT_EQ(std::bit_cast<uint32_t>(s), 0u);
}

// Nesterov: the documented grouping grad*lr + (accum_t*m)*lr differs from the upstream device
// kernel's (grad + accum_t*m)*lr by one ulp on p = 1, g = 0.243, accum = 0.716, m = 0.9,
// lr = 0.1.
TEST(SgdWorkedExample, NesterovGroupingDiffersFromUpstreamByOneUlp) {
  float p = 1.0f, g = 0.243f, a = 0.716f, s = 1.0f, lr = 0.1f, m = 0.9f;
  SgdTensors t{TensorView(&p, DType::kFloat32, {1}),
               TensorView(&g, DType::kFloat32, {1}),
               TensorView(&lr, DType::kFloat32, {1}),
               TensorView(&a, DType::kFloat32, {1}),
               TensorView(&m, DType::kFloat32, {1}),
               TensorView(&s, DType::kFloat32, {1}),
               std::nullopt};
  ASSERT_TRUE(sgd(t, {0.0f, 0.0f, true}).ok());
  EXPECT_EQ(std::bit_cast<uint32_t>(a), 0x3F632CA6u) << a;  // 0.716*0.9 + 0.243 = 0.887400031
  EXPECT_EQ(std::bit_cast<uint32_t>(p), 0x3F655560u) << p;  // 0.895833969
  const float accum_t = 0.716f * 0.9f + 0.243f;
  const float upstream = 1.0f - (0.243f + accum_t * 0.9f) * 0.1f;
  EXPECT_EQ(std::bit_cast<uint32_t>(upstream), 0x3F655561u) << upstream;  // 0.895834029
}

// The documented PyTorch difference: momentum 0, dampening 0.1, stat 0 steps by
// (0.5 - 0.5*0.1)*0.1 = 0.045 where torch.optim.SGD steps by 0.05; accum and stat stay.
TEST(SgdWorkedExample, ZeroMomentumDampeningExample) {
  float p = 1.0f, g = 0.5f, a = 0.25f, s = 0.0f, lr = 0.1f, m = 0.0f;
  SgdTensors t{TensorView(&p, DType::kFloat32, {1}),
               TensorView(&g, DType::kFloat32, {1}),
               TensorView(&lr, DType::kFloat32, {1}),
               TensorView(&a, DType::kFloat32, {1}),
               TensorView(&m, DType::kFloat32, {1}),
               TensorView(&s, DType::kFloat32, {1}),
               std::nullopt};
  ASSERT_TRUE(sgd(t, {0.1f, 0.0f, false}).ok());
  EXPECT_EQ(std::bit_cast<uint32_t>(p), 0x3F747AE1u) << p;  // 0.954999983
  EXPECT_EQ(a, 0.25f);
  EXPECT_EQ(std::bit_cast<uint32_t>(s), 0u);
  const float torch_p = 1.0f + (-0.1f) * 0.5f;  // PyTorch ignores dampening at momentum 0
  EXPECT_EQ(std::bit_cast<uint32_t>(torch_p), 0x3F733333u) << torch_p;  // 0.949999988
}

// ------------------------------------------------------------------------------------------
// Validation: every row of the contract, through the C++ API, with nothing written.

class SgdValidation : public ::testing::Test {
 public:
  // One arena holds every tensor, so overlapping views can be built; it is filled with a
  // pattern and compared byte for byte after each rejected call.
  static constexpr int64_t kP = 0, kG = 16, kA = 32, kS = 48, kLr = 64, kM = 65, kOut = 80;
  std::vector<float> arena = std::vector<float>(128);
  SgdParams params{};

  void SetUp() override {
    for (size_t i = 0; i < arena.size(); ++i) arena[i] = 0.25f + static_cast<float>(i);
  }
  TensorView at(int64_t offset, std::initializer_list<int64_t> dims = {2, 3},
                DType dt = DType::kFloat32) {
    return TensorView(arena.data() + offset, dt, dims);
  }
  SgdTensors valid() {
    return {at(kP), at(kG), at(kLr, {1}), at(kA), at(kM, {1}), at(kS), std::nullopt};
  }
  SgdTensors valid_with_out() {
    SgdTensors t = valid();
    t.parameters_out = at(kOut);
    return t;
  }

  // Expects `code` from both sgd_validate and sgd, a message naming the op and `needle`, and
  // no byte of the arena changed.
  void expect_rejected(const SgdTensors& t, const SgdParams& p, StatusCode code,
                       const std::string& needle) {
    const std::vector<float> before = arena;
    const Status v = sgd_validate(t, p);
    const Status s = sgd(t, p);
    EXPECT_EQ(v.raw_code(), static_cast<int32_t>(code)) << v.message();
    EXPECT_EQ(s.raw_code(), static_cast<int32_t>(code)) << s.message();
    EXPECT_EQ(s.message(), v.message());
    EXPECT_EQ(s.message().rfind("SGD: ", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(needle), std::string::npos)
        << "message '" << s.message() << "' does not name '" << needle << "'";
    EXPECT_EQ(std::memcmp(before.data(), arena.data(), arena.size() * sizeof(float)), 0)
        << "a rejected call wrote: " << s.message();
  }
  void expect_accepted(const SgdTensors& t, const SgdParams& p) {
    const Status s = sgd(t, p);
    EXPECT_TRUE(s.ok()) << s.message();
  }
};

TEST_F(SgdValidation, ValidCallsPassAndValidateWritesNothing) {
  const std::vector<float> before = arena;
  EXPECT_TRUE(sgd_validate(valid(), params).ok());
  EXPECT_TRUE(sgd_validate(valid_with_out(), params).ok());
  EXPECT_EQ(std::memcmp(before.data(), arena.data(), arena.size() * sizeof(float)), 0);
  expect_accepted(valid(), params);
  expect_accepted(valid_with_out(), params);
}

TEST_F(SgdValidation, NullData) {
  const char* names[] = {"parameters", "gradient", "learning_rate", "accum",
                         "momentum",   "stat",     "parameters_out"};
  for (int k = 0; k < 7; ++k) {
    SgdTensors t = valid_with_out();
    TensorView* views[] = {&t.parameters, &t.gradient, &t.learning_rate,  &t.accum,
                           &t.momentum,   &t.stat,     &*t.parameters_out};
    views[k]->data = nullptr;
    expect_rejected(t, params, StatusCode::kParamNullptr, names[k]);
  }
  // A rank-0 scalar has one element, so a null pointer there is missing data too.
  SgdTensors t = valid();
  t.learning_rate = TensorView(nullptr, DType::kFloat32, {});
  expect_rejected(t, params, StatusCode::kParamNullptr, "learning_rate");
  // Null is reported before any other problem.
  t = valid();
  t.parameters = TensorView(nullptr, DType::kInt32, {0, 3});
  t.parameters.shape[0] = 2;
  expect_rejected(t, params, StatusCode::kParamNullptr, "parameters");
}

TEST_F(SgdValidation, DTypes) {
  for (DType bad :
       {DType::kInt32, DType::kFloat64, DType::kBool, DType::kInt8, DType::kUndefined}) {
    SgdTensors t = valid();
    t.parameters.dtype = bad;
    expect_rejected(t, params, StatusCode::kParamInvalid, "parameters dtype");
  }
  const char* names[] = {"gradient", "learning_rate", "accum",
                         "momentum", "stat",          "parameters_out"};
  for (int k = 0; k < 6; ++k) {
    for (DType other : {DType::kFloat16, DType::kBFloat16, DType::kInt32}) {
      SgdTensors t = valid_with_out();
      TensorView* views[] = {&t.gradient, &t.learning_rate, &t.accum,
                             &t.momentum, &t.stat,          &*t.parameters_out};
      views[k]->dtype = other;
      expect_rejected(t, params, StatusCode::kParamInvalid, std::string(names[k]) + " dtype");
    }
  }
}

TEST_F(SgdValidation, RankAndEmptyAndOverflow) {
  SgdTensors t = valid();
  t.parameters = at(kP, {});
  t.gradient = at(kG, {});
  t.accum = at(kA, {});
  t.stat = at(kS, {});
  expect_rejected(t, params, StatusCode::kParamInvalid, "parameters rank 0");

  t = valid();
  const std::vector<int64_t> nine(9, 1);
  t.parameters = TensorView(arena.data(), DType::kFloat32, nine);
  t.gradient = TensorView(arena.data() + kG, DType::kFloat32, nine);
  t.accum = TensorView(arena.data() + kA, DType::kFloat32, nine);
  t.stat = TensorView(arena.data() + kS, DType::kFloat32, nine);
  expect_rejected(t, params, StatusCode::kParamInvalid, "parameters rank 9");

  for (auto dims : {std::vector<int64_t>{2, 0}, std::vector<int64_t>{0}}) {
    t = valid();
    t.parameters = TensorView(arena.data(), DType::kFloat32, dims);
    t.gradient = TensorView(arena.data() + kG, DType::kFloat32, dims);
    t.accum = TensorView(arena.data() + kA, DType::kFloat32, dims);
    t.stat = TensorView(arena.data() + kS, DType::kFloat32, dims);
    expect_rejected(t, params, StatusCode::kParamInvalid, "parameters shape");
  }
  // Empty with null data is still an empty tensor (161002), not missing data.
  t = valid();
  t.parameters = TensorView(nullptr, DType::kFloat32, {0, 3});
  expect_rejected(t, params, StatusCode::kParamInvalid, "parameters shape [0, 3]");
  t = valid();
  t.parameters.shape[1] = -3;
  expect_rejected(t, params, StatusCode::kParamInvalid, "parameters shape");

  // Element count overflowing int64, and a byte size overflowing int64.
  for (auto dims :
       {std::vector<int64_t>{int64_t{1} << 62, 4}, std::vector<int64_t>{int64_t{1} << 62}}) {
    t = valid();
    t.parameters = TensorView(arena.data(), DType::kFloat32, dims);
    t.gradient = TensorView(arena.data() + kG, DType::kFloat32, dims);
    t.accum = TensorView(arena.data() + kA, DType::kFloat32, dims);
    t.stat = TensorView(arena.data() + kS, DType::kFloat32, dims);
    expect_rejected(t, params, StatusCode::kParamInvalid, "overflows");
  }
}

TEST_F(SgdValidation, Shapes) {
  const char* names[] = {"gradient", "accum", "stat", "parameters_out"};
  for (int k = 0; k < 4; ++k) {
    for (auto dims : {std::vector<int64_t>{3, 2}, std::vector<int64_t>{1, 3},
                      std::vector<int64_t>{6}, std::vector<int64_t>{2, 3, 1}}) {
      SgdTensors t = valid_with_out();
      TensorView* views[] = {&t.gradient, &t.accum, &t.stat, &*t.parameters_out};
      *views[k] = TensorView(views[k]->data, DType::kFloat32, dims);
      expect_rejected(t, params, StatusCode::kParamInvalid, std::string(names[k]) + " shape");
    }
  }
  for (auto dims : {std::vector<int64_t>{2}, std::vector<int64_t>{1, 2}, std::vector<int64_t>{0}}) {
    SgdTensors t = valid();
    t.learning_rate = TensorView(t.learning_rate.data, DType::kFloat32, dims);
    expect_rejected(t, params, StatusCode::kParamInvalid, "learning_rate must hold exactly one");
    t = valid();
    t.momentum = TensorView(t.momentum.data, DType::kFloat32, dims);
    expect_rejected(t, params, StatusCode::kParamInvalid, "momentum must hold exactly one");
  }
  // One element in any shape is accepted.
  SgdTensors t = valid();
  t.learning_rate = at(kLr, {});
  t.momentum = at(kM, {1, 1, 1});
  expect_accepted(t, params);
}

TEST_F(SgdValidation, Attributes) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (float d : {0.5f, -0.1f, nan, inf}) {
    expect_rejected(valid(), {d, 0.0f, true}, StatusCode::kParamInvalid, "nesterov");
  }
  for (float wd : {-1e-3f, -inf, nan, -std::numeric_limits<float>::denorm_min()}) {
    expect_rejected(valid(), {0.0f, wd, false}, StatusCode::kParamInvalid, "weight_decay");
  }
  expect_accepted(valid(), {-0.0f, 0.0f, true});  // -0.0 == 0
  expect_accepted(valid(), {0.0f, -0.0f, false});
  expect_accepted(valid(), {0.5f, 0.25f, false});
}

TEST_F(SgdValidation, Contiguity) {
  const int64_t dims[] = {2, 3};
  const int64_t transposed[] = {1, 2};
  const int64_t gapped[] = {4, 1};
  const char* names[] = {"parameters", "gradient", "accum", "stat", "parameters_out"};
  for (const int64_t* strides : {transposed, gapped}) {
    for (int k = 0; k < 5; ++k) {
      SgdTensors t = valid_with_out();
      TensorView* views[] = {&t.parameters, &t.gradient, &t.accum, &t.stat, &*t.parameters_out};
      *views[k] =
          TensorView(views[k]->data, DType::kFloat32, dims, std::span<const int64_t>(strides, 2));
      expect_rejected(t, params, StatusCode::kParamInvalid,
                      std::string(names[k]) + " is not contiguous");
    }
  }
}

TEST_F(SgdValidation, Aliasing) {
  struct Row {
    const char* what;
    void (*mutate)(SgdValidation&, SgdTensors&);
    const char* needle;
  };
  const Row rows[] = {
      {"accum is gradient", [](SgdValidation& f, SgdTensors& t) { t.accum = f.at(kG); }, "accum"},
      {"accum partially overlaps parameters",
       [](SgdValidation& f, SgdTensors& t) { t.accum = f.at(kP + 3); }, "overlaps"},
      {"stat is accum", [](SgdValidation& f, SgdTensors& t) { t.stat = f.at(kA); }, "stat"},
      {"stat covers momentum",
       [](SgdValidation& f, SgdTensors& t) { t.momentum = f.at(kS + 2, {1}); }, "momentum"},
      {"gradient is parameters (in place)",
       [](SgdValidation& f, SgdTensors& t) { t.gradient = f.at(kP); }, "gradient"},
      {"gradient partially overlaps parameters (in place)",
       [](SgdValidation& f, SgdTensors& t) { t.gradient = f.at(kP + 1); }, "gradient"},
      {"learning_rate inside parameters (in place)",
       [](SgdValidation& f, SgdTensors& t) { t.learning_rate = f.at(kP + 5, {1}); },
       "learning_rate"},
      {"parameters_out partially overlaps parameters",
       [](SgdValidation& f, SgdTensors& t) { t.parameters_out = f.at(kP + 1); }, "parameters_out"},
      {"parameters_out is gradient",
       [](SgdValidation& f, SgdTensors& t) { t.parameters_out = f.at(kG); }, "gradient"},
      {"parameters_out is accum",
       [](SgdValidation& f, SgdTensors& t) { t.parameters_out = f.at(kA); }, "accum"},
      {"parameters_out covers learning_rate",
       [](SgdValidation& f, SgdTensors& t) { t.parameters_out = f.at(kLr - 2); }, "learning_rate"},
      {"accum overlaps separate parameters",
       [](SgdValidation& f, SgdTensors& t) { t.accum = f.at(kP + 2); }, "accum"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    SgdTensors t = valid_with_out();
    if (std::string(row.what).find("(in place)") != std::string::npos) t.parameters_out.reset();
    row.mutate(*this, t);
    expect_rejected(t, params, StatusCode::kParamInvalid, row.needle);
  }
  // parameters_out starting at parameters' data is the in-place form, even when its strides
  // of size-1 dimensions differ (the layout is the same).
  SgdTensors t = valid();
  t.parameters = at(kP, {2, 1, 3});
  t.gradient = at(kG, {2, 1, 3});
  t.accum = at(kA, {2, 1, 3});
  t.stat = at(kS, {2, 1, 3});
  t.parameters_out = at(kP, {2, 1, 3});
  t.parameters_out->strides[1] = 1000;
  expect_accepted(t, params);
}

}  // namespace

// ==== Op-by-name: ============================================================
// SGD through op-by-name execution: bit-identity with the C++ API for every dtype and variant,
// in place and with a separate output buffer, and every validation row with nothing written.

namespace aclop {

namespace {

using mantissa::testing::aclop_support::Call;
using mantissa::testing::aclop_support::expect_rejected_untouched;

constexpr aclError kInvalid = 161002;

struct Variant {
  float momentum;
  float dampening;
  float weight_decay;
  bool nesterov;
};

std::string describe(aclDataType dt, const Variant& v) {
  return "dtype " + std::to_string(dt) + " momentum " + std::to_string(v.momentum) + " dampening " +
         std::to_string(v.dampening) + " weight_decay " + std::to_string(v.weight_decay) +
         " nesterov " + std::to_string(v.nesterov);
}

// An SGD call on `dims`; the output is the parameters' buffer when in place, else its own.
Call make_call(aclDataType dt, const std::vector<int64_t>& dims, const Variant& v, bool in_place) {
  Call c("SGD");
  c.add_in(dt, dims);  // parameters
  c.add_in(dt, dims);  // gradient
  c.add_in(dt, {1});   // learning_rate
  c.add_in(dt, dims);  // accum
  c.add_in(dt, {});    // momentum
  c.add_in(dt, dims);  // stat
  c.add_out(dt, dims, in_place ? 0 : -1);
  c.set_float("dampening", v.dampening);
  c.set_float("weight_decay", v.weight_decay);
  c.set_bool("nesterov", v.nesterov);
  return c;
}

// Values of every kind: normal, tiny, large, signed zeros, a few non-finite; stat is 0 or 1.
void fill(Call& c, const Variant& v, uint32_t seed) {
  c.allocate(0xC3);
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t n = mantissa::testing::aclop_support::count_of(c.in(0).dims);
  for (int k : {0, 1, 3}) {
    for (size_t i = 0; i < n; ++i) {
      float x = normal(gen);
      if (i % 53 == 7) x = 1e-39f;
      if (i % 61 == 11) x = -0.0f;
      if (i % 97 == 13) x = 3e4f;
      c.in(k).set(i, x);
    }
  }
  for (size_t i = 0; i < n; ++i) c.in(5).set(i, (gen() & 1) ? 1.0f : 0.0f);
  c.in(2).set(0, 0.01f);
  c.in(4).set(0, v.momentum);
  // A non-finite accum element: with momentum 0 its inf*0 NaN reaches the parameters.
  c.in(3).set(n / 2, INFINITY);
}

// The C++ API on a fresh copy of the same inputs; returns the call holding its results
// (parameters_out in out(0), accum and stat updated in place).
Call run_cpp(aclDataType dt, const std::vector<int64_t>& dims, const Variant& v, uint32_t seed) {
  Call c = make_call(dt, dims, v, false);
  fill(c, v, seed);
  mantissa::SgdTensors t;
  t.parameters = c.in(0).view();
  t.gradient = c.in(1).view();
  t.learning_rate = c.in(2).view();
  t.accum = c.in(3).view();
  t.momentum = c.in(4).view();
  t.stat = c.in(5).view();
  t.parameters_out = c.out(0).view();
  mantissa::SgdParams p;
  p.dampening = v.dampening;
  p.weight_decay = v.weight_decay;
  p.nesterov = v.nesterov;
  const mantissa::Status s = mantissa::sgd(t, p);
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

bool bytes_equal(const mantissa::testing::aclop_support::Arg& a,
                 const mantissa::testing::aclop_support::Arg& b) {
  return a.bytes() == b.bytes() &&
         std::equal(a.mem.begin(), a.mem.begin() + a.bytes(), b.mem.begin());
}

std::vector<Variant> all_variants() {
  std::vector<Variant> vs;
  for (float momentum : {0.0f, 0.9f, 1e-30f}) {
    for (float dampening : {0.0f, 0.25f}) {
      for (float weight_decay : {0.0f, 0.01f}) {
        for (bool nesterov : {false, true}) {
          if (nesterov && dampening != 0.0f) continue;  // rejected; see the validation test
          vs.push_back({momentum, dampening, weight_decay, nesterov});
        }
      }
    }
  }
  return vs;
}

TEST(AclopSgd, BitIdenticalToCppApiInPlace) {
  const std::vector<int64_t> dims{3, 37};
  uint32_t seed = 1;
  for (aclDataType dt : mantissa::testing::aclop_support::training_dtypes()) {
    for (const Variant& v : all_variants()) {
      ++seed;
      const Call expected = run_cpp(dt, dims, v, seed);
      Call c = make_call(dt, dims, v, true);
      fill(c, v, seed);
      ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
      Call e = expected;
      EXPECT_TRUE(bytes_equal(c.in(0), e.out(0))) << "parameters, " << describe(dt, v);
      EXPECT_TRUE(bytes_equal(c.in(3), e.in(3))) << "accum, " << describe(dt, v);
      EXPECT_TRUE(bytes_equal(c.in(5), e.in(5))) << "stat, " << describe(dt, v);
    }
  }
}

// A separate output buffer: the new parameters go there, the input parameters stay as they
// were, and accum and stat are updated through their input buffers.
TEST(AclopSgd, SeparateOutputLeavesParametersAndUpdatesState) {
  const std::vector<int64_t> dims{2, 5, 13};
  uint32_t seed = 100;
  for (aclDataType dt : mantissa::testing::aclop_support::training_dtypes()) {
    for (const Variant& v : all_variants()) {
      ++seed;
      Call e = run_cpp(dt, dims, v, seed);
      Call c = make_call(dt, dims, v, false);
      fill(c, v, seed);
      Call original = make_call(dt, dims, v, false);
      fill(original, v, seed);
      ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
      EXPECT_TRUE(bytes_equal(c.out(0), e.out(0))) << "parameters_out, " << describe(dt, v);
      EXPECT_TRUE(bytes_equal(c.in(0), original.in(0))) << "input parameters, " << describe(dt, v);
      EXPECT_FALSE(bytes_equal(c.out(0), original.in(0))) << "no step, " << describe(dt, v);
      EXPECT_TRUE(bytes_equal(c.in(3), e.in(3))) << "accum, " << describe(dt, v);
      EXPECT_TRUE(bytes_equal(c.in(5), e.in(5))) << "stat, " << describe(dt, v);
      if (original.in(4).get(0) != 0.0f) {  // momentum as stored: the state was updated
        EXPECT_FALSE(bytes_equal(c.in(3), original.in(3))) << describe(dt, v);
        EXPECT_FALSE(bytes_equal(c.in(5), original.in(5))) << describe(dt, v);
      } else {  // momentum 0: accum and stat are not written at all
        EXPECT_TRUE(bytes_equal(c.in(3), original.in(3))) << describe(dt, v);
        EXPECT_TRUE(bytes_equal(c.in(5), original.in(5))) << describe(dt, v);
      }
      // In place and separate give the same new parameters.
      Call in_place = make_call(dt, dims, v, true);
      fill(in_place, v, seed);
      ASSERT_EQ(in_place.run(), ACL_SUCCESS);
      EXPECT_TRUE(bytes_equal(in_place.in(0), c.out(0))) << describe(dt, v);
    }
  }
}

// The op-by-name results carry the operator's determinism: the same bits on every SIMD target
// and thread count (a size spanning several parallel chunks, with a vector tail).
TEST(AclopSgd, SameBitsOnEveryTargetAndThreadCount) {
  const std::vector<int64_t> dims{70001};
  const Variant v{0.9f, 0.25f, 0.01f, false};
  mantissa::testing::ThreadCountGuard guard;
  for (aclDataType dt : mantissa::testing::aclop_support::training_dtypes()) {
    const Call expected = run_cpp(dt, dims, v, 77);
    mantissa::testing::for_each_target([&](const std::string&) {
      for (int threads : {1, 3}) {
        ASSERT_TRUE(mantissa::set_num_threads(threads).ok());
        Call c = make_call(dt, dims, v, false);
        fill(c, v, 77);
        ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
        Call e = expected;
        EXPECT_TRUE(bytes_equal(c.out(0), e.out(0))) << "threads " << threads << " dtype " << dt;
        EXPECT_TRUE(bytes_equal(c.in(3), e.in(3))) << "threads " << threads << " dtype " << dt;
        EXPECT_TRUE(bytes_equal(c.in(5), e.in(5))) << "threads " << threads << " dtype " << dt;
      }
    });
  }
}

// Attribute defaults: dampening 0, weight_decay 0, nesterov false.
TEST(AclopSgd, AttributeDefaults) {
  const Variant v{0.9f, 0.0f, 0.0f, false};
  for (aclDataType dt : mantissa::testing::aclop_support::training_dtypes()) {
    Call e = run_cpp(dt, {41}, v, 9);
    for (bool pass_attr : {true, false}) {
      Call c = make_call(dt, {41}, v, false);
      c.attrs().clear();
      fill(c, v, 9);
      ASSERT_EQ(c.run(ACL_ENGINE_SYS, ACL_COMPILE_SYS, pass_attr), ACL_SUCCESS);
      EXPECT_TRUE(bytes_equal(c.out(0), e.out(0)));
      EXPECT_TRUE(bytes_equal(c.in(3), e.in(3)));
      EXPECT_TRUE(bytes_equal(c.in(5), e.in(5)));
    }
  }
}

// Every validation row of the operator, through op-by-name, on sentinel-filled memory.
TEST(AclopSgd, ValidationRowsWriteNothing) {
  const Variant ok{0.9f, 0.0f, 0.0f, false};
  const std::vector<int64_t> dims{4, 6};
  const char* names[] = {"parameters", "gradient", "learning_rate", "accum", "momentum", "stat"};
  for (aclDataType dt : mantissa::testing::aclop_support::training_dtypes()) {
    for (bool in_place : {false, true}) {
      auto base = [&] { return make_call(dt, dims, ok, in_place); };
      {  // the unmodified call succeeds, so every rejection below is the row's doing
        Call c = base();
        fill(c, ok, 1);
        ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
      }
      for (aclDataType bad : {ACL_INT32, ACL_DOUBLE, ACL_INT64, ACL_UINT8}) {
        Call c = base();
        for (auto& a : c.ins()) a.dtype = bad;
        c.out(0).dtype = bad;
        expect_rejected_untouched(c, kInvalid, "dtype", "parameters dtype");
      }
      const aclDataType other = dt == ACL_BF16 ? ACL_FLOAT16 : ACL_BF16;
      for (int k = 1; k < 6; ++k) {
        Call c = base();
        c.in(k).dtype = other;
        expect_rejected_untouched(c, kInvalid, names[k], std::string(names[k]) + " dtype");
      }
      if (!in_place) {
        Call c = base();
        c.out(0).dtype = other;
        expect_rejected_untouched(c, kInvalid, "output dtype", "parameters_out dtype");
      }
      // Rank of parameters outside [1, 8]: rank 0 and rank 9.
      for (const std::vector<int64_t>& bad :
           {std::vector<int64_t>{}, std::vector<int64_t>{1, 1, 2, 1, 1, 1, 3, 1, 1}}) {
        Call c = base();
        for (int k : {0, 1, 3, 5}) c.in(k).dims = bad;
        c.out(0).dims = bad;
        expect_rejected_untouched(c, kInvalid, "rank",
                                  "rank " + std::to_string(bad.size()) + " is outside [1, 8]");
      }
      {  // a zero dimension
        Call c = base();
        for (int k : {0, 1, 3, 5}) c.in(k).dims = {4, 0};
        c.out(0).dims = {4, 0};
        expect_rejected_untouched(c, kInvalid, "empty", "of size 0");
      }
      for (int k : {1, 3, 5}) {  // shape differs from parameters (no broadcasting)
        for (const std::vector<int64_t>& bad :
             {std::vector<int64_t>{4, 5}, std::vector<int64_t>{24}, std::vector<int64_t>{1, 6}}) {
          Call c = base();
          c.in(k).dims = bad;
          expect_rejected_untouched(c, kInvalid, names[k], std::string(names[k]) + " shape");
        }
      }
      if (!in_place) {
        Call c = base();
        c.out(0).dims = {6, 4};
        expect_rejected_untouched(c, kInvalid, "output shape", "parameters_out shape");
      }
      for (int k : {2, 4}) {  // learning_rate / momentum not holding exactly one element
        for (const std::vector<int64_t>& bad :
             {std::vector<int64_t>{2}, std::vector<int64_t>{0}, std::vector<int64_t>{1, 3}}) {
          Call c = base();
          c.in(k).dims = bad;
          expect_rejected_untouched(c, kInvalid, names[k], names[k]);
        }
      }
      for (float d : {0.5f, -0.5f, NAN}) {  // nesterov with dampening != 0
        Call c = base();
        c.attrs().clear();
        c.set_bool("nesterov", true);
        c.set_float("dampening", d);
        expect_rejected_untouched(c, kInvalid, "nesterov dampening",
                                  "nesterov requires dampening 0");
      }
      for (float wd : {-0.01f, -INFINITY, NAN}) {  // weight_decay < 0 or NaN
        Call c = base();
        c.remove_attr("weight_decay");
        c.set_float("weight_decay", wd);
        expect_rejected_untouched(c, kInvalid, "weight_decay", "weight_decay must be >= 0");
      }
      // Buffers that partially overlap: the output and the parameters, or a written tensor and
      // another argument.
      if (!in_place) {
        Call c = base();
        c.out(0).alias_input = 0;
        c.out(0).alias_offset = mantissa::testing::aclop_support::elem_size(dt);
        expect_rejected_untouched(c, kInvalid, "output overlaps parameters", "overlaps");
        Call g = base();
        g.out(0).alias_input = 1;  // the output is the gradient's buffer
        expect_rejected_untouched(g, kInvalid, "output is gradient", "overlaps");
      }
      {
        Call c = base();
        c.in(5).alias_input = 3;  // stat is accum's buffer
        expect_rejected_untouched(c, kInvalid, "stat is accum", "overlaps");
      }
      // Buffers smaller than their descriptors (the state updated in place included).
      for (int k = 0; k < 6; ++k) {
        Call c = base();
        c.in(k).buffer_size = c.in(k).bytes() - 1;
        expect_rejected_untouched(c, kInvalid, names[k], "holds");
      }
      if (!in_place) {
        Call c = base();
        c.out(0).buffer_size = 0;
        expect_rejected_untouched(c, kInvalid, "output size", "outputs[0] (parameters) holds 0");
      }
    }
  }
}

// Non-contiguous tensors cannot be described through aclTensorDesc (descriptors are always
// row-major), so that row is covered by the C++ API's own tests.

}  // namespace

}  // namespace aclop

}  // namespace mantissa::testing
