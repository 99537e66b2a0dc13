// AmpUpdateScale through op-by-name execution: the worked examples, bit-identity with the C++
// API for every dtype, and every validation row with nothing written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "mantissa/ops/amp_update_scale.h"
#include "test_aclop_common.h"

namespace {

using aclop_test::Call;
using aclop_test::expect_rejected_untouched;

constexpr aclError kInvalid = 161002;
constexpr aclError kTiling = 561002;

struct Step {
  float scale;
  int32_t tracker;
  float found_inf;
  float growth = 2.0f;
  float backoff = 0.5f;
  int64_t interval = 1000;
};

// An AmpUpdateScale call; in place means the outputs are the input buffers.
Call make_call(aclDataType dt, const Step& s, bool in_place) {
  Call c("AmpUpdateScale");
  c.add_in(dt, {1});
  c.add_in(ACL_INT32, {});
  c.add_in(dt, {1, 1});
  c.add_out(dt, {1}, in_place ? 0 : -1);
  c.add_out(ACL_INT32, {}, in_place ? 1 : -1);
  c.set_float("growth_factor", s.growth);
  c.set_float("backoff_factor", s.backoff);
  c.set_int("growth_interval", s.interval);
  return c;
}

void fill(Call& c, const Step& s) {
  c.allocate(0x5A);
  c.in(0).set(0, s.scale);
  c.in(1).set_i32(s.tracker);
  c.in(2).set(0, s.found_inf);
}

// The result bytes (scale, tracker) of the op-by-name call.
std::pair<std::vector<uint8_t>, int32_t> run_aclop(aclDataType dt, const Step& s, bool in_place) {
  Call c = make_call(dt, s, in_place);
  fill(c, s);
  EXPECT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
  aclop_test::Arg& scale = in_place ? c.in(0) : c.out(0);
  aclop_test::Arg& tracker = in_place ? c.in(1) : c.out(1);
  const size_t n = aclop_test::elem_size(dt);
  if (!in_place) {  // the inputs are left as they were
    Call fresh = make_call(dt, s, false);
    fill(fresh, s);
    EXPECT_EQ(c.in(0).mem, fresh.in(0).mem);
    EXPECT_EQ(c.in(1).mem, fresh.in(1).mem);
  }
  return {std::vector<uint8_t>(scale.mem.begin(), scale.mem.begin() + n), tracker.get_i32()};
}

// The same step through the C++ API.
std::pair<std::vector<uint8_t>, int32_t> run_cpp(aclDataType dt, const Step& s) {
  Call c = make_call(dt, s, false);
  fill(c, s);
  mantissa::AmpUpdateScaleTensors t{c.in(0).view(), c.in(1).view(), c.in(2).view(), c.out(0).view(),
                                    c.out(1).view()};
  mantissa::AmpUpdateScaleParams p;
  p.growth_factor = s.growth;
  p.backoff_factor = s.backoff;
  p.growth_interval = s.interval;
  EXPECT_TRUE(mantissa::amp_update_scale(t, p).ok());
  const size_t n = aclop_test::elem_size(dt);
  return {std::vector<uint8_t>(c.out(0).mem.begin(), c.out(0).mem.begin() + n), c.out(1).get_i32()};
}

float scale_of(aclDataType dt, const std::vector<uint8_t>& bytes) {
  return mantissa::load_as_float(static_cast<mantissa::DType>(dt), bytes.data(), 0);
}

TEST(AclopAmpUpdateScale, WorkedExamples) {
  for (aclDataType dt : aclop_test::training_dtypes()) {
    // fp16 cannot hold 65536; its examples start from 1024.
    const float base = dt == ACL_FLOAT16 ? 1024.0f : 65536.0f;
    for (bool in_place : {true, false}) {
      auto r = run_aclop(dt, {base, 900, 0.0f}, in_place);
      EXPECT_EQ(scale_of(dt, r.first), base);
      EXPECT_EQ(r.second, 901);
      r = run_aclop(dt, {base, 999, 0.0f}, in_place);
      EXPECT_EQ(scale_of(dt, r.first), 2.0f * base);
      EXPECT_EQ(r.second, 0);
      r = run_aclop(dt, {base, 999, 1.0f}, in_place);
      EXPECT_EQ(scale_of(dt, r.first), 0.5f * base);
      EXPECT_EQ(r.second, 0);
    }
  }
  auto r = run_aclop(ACL_FLOAT, {3e38f, 999, 0.0f}, true);
  EXPECT_EQ(scale_of(ACL_FLOAT, r.first), 3e38f);
  EXPECT_EQ(r.second, 0);
  r = run_aclop(ACL_FLOAT16, {65504.0f, 999, 0.0f}, false);
  EXPECT_EQ(scale_of(ACL_FLOAT16, r.first), 65504.0f);
  EXPECT_EQ(r.second, 0);
}

// Every combination below gives the same bits through op-by-name as through the C++ API.
TEST(AclopAmpUpdateScale, BitIdenticalToCppApi) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> scales{65536.0f, 1.0f, 3e38f, 65504.0f, 1e-30f, 0.0f, -2.5f, inf, nan};
  const std::vector<int32_t> trackers{0, 5, 998, 999, 1000, -1, INT32_MAX, INT32_MIN};
  const std::vector<float> found{0.0f, -0.0f, 1.0f, nan, -inf, 1e-40f};
  const std::vector<std::pair<float, float>> factors{{2.0f, 0.5f}, {1.5f, 0.125f}, {-3.0f, nan}};
  const std::vector<int64_t> intervals{1, 1000, INT32_MAX};
  int compared = 0;
  for (aclDataType dt : aclop_test::training_dtypes()) {
    for (float scale : scales) {
      for (int32_t tracker : trackers) {
        for (float f : found) {
          for (auto [g, b] : factors) {
            for (int64_t interval : intervals) {
              const Step s{scale, tracker, f, g, b, interval};
              const auto expected = run_cpp(dt, s);
              for (bool in_place : {true, false}) {
                const auto got = run_aclop(dt, s, in_place);
                ASSERT_EQ(got.first, expected.first)
                    << "dtype " << dt << " scale " << scale << " tracker " << tracker
                    << " found_inf " << f << " growth " << g << " backoff " << b << " interval "
                    << interval << " in_place " << in_place;
                ASSERT_EQ(got.second, expected.second);
                ++compared;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 3 * 9 * 8 * 6 * 3 * 3 * 2);
}

// growth_factor and backoff_factor are not range-checked; growth_interval's extremes are valid.
TEST(AclopAmpUpdateScale, AttributeRangesAccepted) {
  for (float g : {-1.0f, 0.0f, NAN, INFINITY}) {
    const auto r = run_aclop(ACL_FLOAT, {4.0f, 0, 0.0f, g, g, 1}, false);
    EXPECT_EQ(r.second, 0);
  }
  EXPECT_EQ(run_aclop(ACL_FLOAT, {4.0f, 7, 0.0f, 2.0f, 0.5f, INT32_MAX}, true).second, 8);
}

// Every validation row of the operator, through op-by-name, on sentinel-filled memory.
TEST(AclopAmpUpdateScale, ValidationRowsWriteNothing) {
  const Step s{65536.0f, 999, 0.0f};
  for (aclDataType dt : aclop_test::training_dtypes()) {
    for (bool in_place : {false, true}) {
      auto base = [&] { return make_call(dt, s, in_place); };
      // current_scale dtype not FLOAT/FLOAT16/BFLOAT16 (the others follow it, so they differ).
      for (aclDataType bad : {ACL_INT32, ACL_DOUBLE, ACL_INT8, ACL_BOOL}) {
        Call c = base();
        c.in(0).dtype = bad;
        expect_rejected_untouched(c, kInvalid, "current_scale dtype", "current_scale dtype");
      }
      const aclDataType other = dt == ACL_FLOAT ? ACL_FLOAT16 : ACL_FLOAT;
      {
        Call c = base();
        c.in(2).dtype = other;
        expect_rejected_untouched(c, kInvalid, "found_inf dtype", "found_inf dtype");
      }
      if (!in_place) {  // aliased outputs share their inputs' memory but not their descriptors
        Call c = base();
        c.out(0).dtype = other;
        expect_rejected_untouched(c, kInvalid, "updated_scale dtype", "updated_scale dtype");
      }
      for (aclDataType bad : {ACL_INT64, ACL_FLOAT, ACL_UINT32}) {
        Call c = base();
        c.in(1).dtype = bad;
        expect_rejected_untouched(c, kInvalid, "growth_tracker dtype", "growth_tracker dtype");
        Call o = base();
        o.out(1).dtype = bad;
        expect_rejected_untouched(o, kInvalid, "updated_growth_tracker dtype",
                                  "updated_growth_tracker dtype");
      }
      // Any of the five tensors not holding exactly one element: the operator's 561002.
      const char* names[] = {"current_scale", "growth_tracker", "found_inf", "updated_scale",
                             "updated_growth_tracker"};
      for (int k = 0; k < 5; ++k) {
        for (const std::vector<int64_t>& dims :
             {std::vector<int64_t>{2}, std::vector<int64_t>{1, 3}, std::vector<int64_t>{0}}) {
          Call c = base();
          aclop_test::Arg& a = k < 3 ? c.in(k) : c.out(k - 3);
          if (a.alias_input >= 0 && dims[0] != 0) continue;  // would need a larger shared buffer
          a.dims = dims;
          expect_rejected_untouched(c, kTiling, names[k], names[k]);
        }
      }
      for (int64_t interval : {int64_t{0}, int64_t{-1}, int64_t{INT32_MAX} + 1, INT64_MIN}) {
        Call c = base();
        c.remove_attr("growth_interval");
        c.set_int("growth_interval", interval);
        expect_rejected_untouched(c, kTiling, "growth_interval",
                                  "growth_interval " + std::to_string(interval));
      }
      // The two outputs sharing bytes.
      if (!in_place) {
        Call c = base();
        c.out(1).alias_input = 0;
        c.out(1).dtype = ACL_INT32;
        c.in(0).dtype = ACL_FLOAT;
        c.in(2).dtype = ACL_FLOAT;
        c.out(0).dtype = ACL_FLOAT;
        c.out(0).alias_input = 0;
        expect_rejected_untouched(c, kInvalid, "outputs overlap", "overlap");
      }
    }
  }
}

}  // namespace
