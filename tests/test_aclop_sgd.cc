// SGD through op-by-name execution: bit-identity with the C++ API for every dtype and variant,
// in place and with a separate output buffer, and every validation row with nothing written.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "mantissa/ops/sgd.h"
#include "mantissa/runtime.h"
#include "target_sweep.h"
#include "test_aclop_common.h"

namespace {

using aclop_test::Call;
using aclop_test::expect_rejected_untouched;

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
  const size_t n = aclop_test::count_of(c.in(0).dims);
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

bool bytes_equal(const aclop_test::Arg& a, const aclop_test::Arg& b) {
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
  for (aclDataType dt : aclop_test::training_dtypes()) {
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
  for (aclDataType dt : aclop_test::training_dtypes()) {
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
  for (aclDataType dt : aclop_test::training_dtypes()) {
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
  for (aclDataType dt : aclop_test::training_dtypes()) {
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
  for (aclDataType dt : aclop_test::training_dtypes()) {
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
        c.out(0).alias_offset = aclop_test::elem_size(dt);
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
