// ApplyAdamD through op-by-name execution: bit-identity with the C++ API for every dtype and
// use_nesterov, same and separate output buffers, and every validation row with nothing written.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "mantissa/ops/apply_adam_d.h"
#include "mantissa/runtime.h"
#include "target_sweep.h"
#include "test_aclop_common.h"

namespace {

using aclop_test::Call;
using aclop_test::expect_rejected_untouched;

constexpr aclError kInvalid = 161002;
const char* const kNames[] = {"var", "m",     "v",     "beta1_power", "beta2_power",
                              "lr",  "beta1", "beta2", "epsilon",     "grad"};

// An ApplyAdamD call on `dims`; in place means the outputs are the var, m, v buffers.
Call make_call(aclDataType dt, const std::vector<int64_t>& dims, bool nesterov, bool in_place) {
  Call c("ApplyAdamD");
  for (int i = 0; i < 3; ++i) c.add_in(dt, dims);
  for (int i = 0; i < 6; ++i)
    c.add_in(dt, i % 2 ? std::vector<int64_t>{1} : std::vector<int64_t>{});
  c.add_in(dt, dims);
  for (int i = 0; i < 3; ++i) c.add_out(dt, dims, in_place ? i : -1);
  c.set_bool("use_nesterov", nesterov);
  return c;
}

// The upstream ATK distributions (v strictly positive) and fixed scalars; a large step uses
// lr 0.5 and beta2_power 0.9 (bf16 rounds the ATK's 0.999 to 1, which makes lr_t 0).
void fill(Call& c, uint32_t seed, bool large_step = false) {
  c.allocate(0x3C);
  std::mt19937 gen(seed);
  std::normal_distribution<float> var(0.3f, 0.4f), m(-0.2f, 0.1f), v(0.7f, 0.03f), g(0.1f, 0.2f);
  const size_t n = aclop_test::count_of(c.in(0).dims);
  for (size_t i = 0; i < n; ++i) {
    c.in(0).set(i, var(gen));
    c.in(1).set(i, m(gen));
    c.in(2).set(i, std::abs(v(gen)));
    c.in(9).set(i, g(gen));
  }
  const std::array<float, 6> scalars{0.9f, 0.999f, 0.001f, 0.9f, 0.999f, 1e-7f};
  for (int k = 0; k < 6; ++k) c.in(3 + k).set(0, scalars[k]);
  if (large_step) {
    c.in(4).set(0, 0.9f);
    c.in(5).set(0, 0.5f);
  }
}

// The C++ API on a fresh copy of the same inputs, with separate outputs.
Call run_cpp(aclDataType dt, const std::vector<int64_t>& dims, bool nesterov, uint32_t seed,
             bool large_step) {
  Call c = make_call(dt, dims, nesterov, false);
  fill(c, seed, large_step);
  mantissa::ApplyAdamDTensors t;
  t.var = c.in(0).view();
  t.m = c.in(1).view();
  t.v = c.in(2).view();
  t.beta1_power = c.in(3).view();
  t.beta2_power = c.in(4).view();
  t.lr = c.in(5).view();
  t.beta1 = c.in(6).view();
  t.beta2 = c.in(7).view();
  t.epsilon = c.in(8).view();
  t.grad = c.in(9).view();
  t.var_out = c.out(0).view();
  t.m_out = c.out(1).view();
  t.v_out = c.out(2).view();
  mantissa::ApplyAdamDParams p;
  p.use_nesterov = nesterov;
  const mantissa::Status s = mantissa::apply_adam_d(t, p);
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

bool bytes_equal(const aclop_test::Arg& a, const aclop_test::Arg& b) {
  return a.bytes() == b.bytes() &&
         std::equal(a.mem.begin(), a.mem.begin() + a.bytes(), b.mem.begin());
}

TEST(AclopApplyAdamD, BitIdenticalToCppApiSameAndSeparateOutputs) {
  const std::vector<std::vector<int64_t>> shapes{{4, 16}, {3, 5, 7}, {}, {1}, {129}};
  uint32_t seed = 11;
  for (aclDataType dt : aclop_test::training_dtypes()) {
    for (bool nesterov : {false, true}) {
      for (bool large_step : {false, true}) {
        for (const auto& dims : shapes) {
          ++seed;
          Call e = run_cpp(dt, dims, nesterov, seed, large_step);
          Call separate = make_call(dt, dims, nesterov, false);
          fill(separate, seed, large_step);
          Call original = make_call(dt, dims, nesterov, false);
          fill(original, seed, large_step);
          ASSERT_EQ(separate.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
          Call same = make_call(dt, dims, nesterov, true);
          fill(same, seed, large_step);
          ASSERT_EQ(same.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
          for (int k = 0; k < 3; ++k) {
            EXPECT_TRUE(bytes_equal(separate.out(k), e.out(k)))
                << kNames[k] << " dtype " << dt << " nesterov " << nesterov;
            EXPECT_TRUE(bytes_equal(same.in(k), e.out(k)))
                << kNames[k] << " in place, dtype " << dt << " nesterov " << nesterov;
            // Separate outputs leave the inputs as they were.
            EXPECT_TRUE(bytes_equal(separate.in(k), original.in(k))) << kNames[k];
          }
          if (large_step) {  // the step is visible, so the comparison above means something
            EXPECT_FALSE(bytes_equal(separate.out(0), original.in(0))) << "dtype " << dt;
          }
        }
      }
    }
  }
}

// use_nesterov changes the result; use_locking has no numeric effect (a large step, so that the
// var update is visible in every dtype).
TEST(AclopApplyAdamD, Attributes) {
  for (aclDataType dt : aclop_test::training_dtypes()) {
    Call plain = make_call(dt, {4, 16}, false, false);
    fill(plain, 3, true);
    ASSERT_EQ(plain.run(), ACL_SUCCESS);
    Call locking = make_call(dt, {4, 16}, false, false);
    locking.set_bool("use_locking", true);
    fill(locking, 3, true);
    ASSERT_EQ(locking.run(), ACL_SUCCESS);
    Call nesterov = make_call(dt, {4, 16}, true, false);
    fill(nesterov, 3, true);
    ASSERT_EQ(nesterov.run(), ACL_SUCCESS);
    Call defaults = make_call(dt, {4, 16}, false, false);
    defaults.attrs().clear();
    fill(defaults, 3, true);
    ASSERT_EQ(defaults.run(), ACL_SUCCESS);
    EXPECT_TRUE(bytes_equal(plain.out(0), locking.out(0)));
    EXPECT_TRUE(bytes_equal(plain.out(0), defaults.out(0)));
    EXPECT_FALSE(bytes_equal(plain.out(0), nesterov.out(0))) << dt;
    EXPECT_TRUE(bytes_equal(plain.out(1), nesterov.out(1)));  // m and v do not depend on it
    EXPECT_TRUE(bytes_equal(plain.out(2), nesterov.out(2)));
  }
}

// The same bits on every SIMD target and thread count (several parallel chunks, a vector tail).
TEST(AclopApplyAdamD, SameBitsOnEveryTargetAndThreadCount) {
  const std::vector<int64_t> dims{70001};
  mantissa::testing::ThreadCountGuard guard;
  for (aclDataType dt : aclop_test::training_dtypes()) {
    for (bool nesterov : {false, true}) {
      Call e = run_cpp(dt, dims, nesterov, 21, true);
      mantissa::testing::for_each_target([&](const std::string&) {
        for (int threads : {1, 3}) {
          ASSERT_TRUE(mantissa::set_num_threads(threads).ok());
          Call c = make_call(dt, dims, nesterov, true);
          fill(c, 21, true);
          ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
          for (int k = 0; k < 3; ++k) {
            EXPECT_TRUE(bytes_equal(c.in(k), e.out(k)))
                << kNames[k] << " threads " << threads << " dtype " << dt;
          }
        }
      });
    }
  }
}

// Empty var: succeeds and touches nothing.
TEST(AclopApplyAdamD, EmptyTensorTouchesNothing) {
  for (bool in_place : {false, true}) {
    Call c = make_call(ACL_FLOAT16, {3, 0, 2}, false, in_place);
    c.allocate();
    c.fill_random(5);
    const auto before = c.snapshot();
    EXPECT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_TRUE(c.snapshot() == before);
  }
}

// Every validation row of the operator, through op-by-name, on sentinel-filled memory.
TEST(AclopApplyAdamD, ValidationRowsWriteNothing) {
  const std::vector<int64_t> dims{4, 16};
  for (aclDataType dt : aclop_test::training_dtypes()) {
    for (bool in_place : {false, true}) {
      auto base = [&] { return make_call(dt, dims, false, in_place); };
      {  // the unmodified call succeeds, so every rejection below is the row's doing
        Call c = base();
        fill(c, 1);
        ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
      }
      for (aclDataType bad : {ACL_INT32, ACL_DOUBLE, ACL_INT8, ACL_BOOL}) {
        Call c = base();
        for (auto& a : c.ins()) a.dtype = bad;
        for (auto& a : c.outs()) a.dtype = bad;
        expect_rejected_untouched(c, kInvalid, "dtype", "var dtype");
      }
      const aclDataType other = dt == ACL_FLOAT ? ACL_BF16 : ACL_FLOAT;
      for (int k = 1; k < 10; ++k) {
        Call c = base();
        c.in(k).dtype = other;
        expect_rejected_untouched(c, kInvalid, kNames[k], std::string(kNames[k]) + " dtype");
      }
      if (!in_place) {
        for (int k = 0; k < 3; ++k) {
          Call c = base();
          c.out(k).dtype = other;
          expect_rejected_untouched(c, kInvalid, "output dtype",
                                    std::string(kNames[k]) + "_out dtype");
        }
      }
      {  // rank > 8
        const std::vector<int64_t> nine{1, 1, 4, 1, 1, 1, 16, 1, 1};
        Call c = base();
        for (int k : {0, 1, 2, 9}) c.in(k).dims = nine;
        for (auto& a : c.outs()) a.dims = nine;
        expect_rejected_untouched(c, kInvalid, "rank 9", "rank 9");
        Call s = base();
        s.in(5).dims = std::vector<int64_t>(9, 1);  // a rank-9 scalar input
        expect_rejected_untouched(s, kInvalid, "rank 9 lr", "lr rank 9");
      }
      for (int k : {1, 2, 9}) {  // m, v, grad shape differs from var's
        for (const std::vector<int64_t>& bad :
             {std::vector<int64_t>{4, 15}, std::vector<int64_t>{64},
              std::vector<int64_t>{1, 4, 16}}) {
          Call c = base();
          c.in(k).dims = bad;
          expect_rejected_untouched(c, kInvalid, kNames[k], std::string(kNames[k]) + " shape");
        }
      }
      if (!in_place) {
        for (int k = 0; k < 3; ++k) {
          Call c = base();
          c.out(k).dims = {16, 4};
          expect_rejected_untouched(c, kInvalid, "output shape",
                                    std::string(kNames[k]) + "_out shape");
        }
      }
      for (int k = 3; k < 9; ++k) {  // a scalar input not holding exactly one element
        for (const std::vector<int64_t>& bad :
             {std::vector<int64_t>{2}, std::vector<int64_t>{0}, std::vector<int64_t>{1, 2}}) {
          Call c = base();
          c.in(k).dims = bad;
          expect_rejected_untouched(c, kInvalid, kNames[k],
                                    std::string(kNames[k]) + " must hold exactly one element");
        }
      }
      if (!in_place) {  // outputs partially overlapping their inputs or each other
        Call c = base();
        c.out(0).alias_input = 0;
        c.out(0).alias_offset = aclop_test::elem_size(dt);
        expect_rejected_untouched(c, kInvalid, "var_out overlaps var", "overlaps");
        Call g = base();
        g.out(1).alias_input = 9;
        expect_rejected_untouched(g, kInvalid, "m_out is grad", "overlaps");
        Call o = base();
        o.out(2).alias_input = 0;
        expect_rejected_untouched(o, kInvalid, "v_out is var", "overlaps");
      }
      for (int k = 0; k < 10; ++k) {  // buffers smaller than their descriptors
        Call c = base();
        c.in(k).buffer_size = c.in(k).bytes() - 1;
        expect_rejected_untouched(c, kInvalid, kNames[k],
                                  "inputs[" + std::to_string(k) + "] (" + kNames[k] + ") holds");
      }
      if (!in_place) {
        for (int k = 0; k < 3; ++k) {
          Call c = base();
          c.out(k).buffer_size = c.out(k).bytes() / 2;
          expect_rejected_untouched(c, kInvalid, "output size",
                                    "outputs[" + std::to_string(k) + "] (" + kNames[k] + ") holds");
        }
      }
    }
  }
}

}  // namespace
