// AmpUpdateScale through the C++ API: every branch for the three dtypes, the spec's worked
// examples, special found_inf values, overflow protection, tracker wrap, every validation row.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "mantissa/dtype.h"
#include "mantissa/ops/amp_update_scale.h"

namespace mantissa {
namespace {

// One-element buffers for a call, in a given dtype and shape.
struct Scalars {
  DType dtype;
  std::vector<int64_t> shape;
  uint32_t scale = 0, found = 0, scale_out = 0;  // raw storage (2 or 4 bytes used)
  int32_t tracker = 0, tracker_out = 0;

  Scalars(DType d, float s, int32_t t, float f, std::vector<int64_t> dims = {1})
      : dtype(d), shape(std::move(dims)) {
    store_from_float(dtype, &scale, 0, s);
    store_from_float(dtype, &found, 0, f);
    tracker = t;
    scale_out = 0xDEADBEEF;
    tracker_out = -12345;
  }
  TensorView view(void* p, DType d) { return TensorView(p, d, shape); }
  AmpUpdateScaleTensors separate() {
    return {view(&scale, dtype), view(&tracker, DType::kInt32), view(&found, dtype),
            view(&scale_out, dtype), view(&tracker_out, DType::kInt32)};
  }
  AmpUpdateScaleTensors in_place() {
    return {view(&scale, dtype), view(&tracker, DType::kInt32), view(&found, dtype),
            view(&scale, dtype), view(&tracker, DType::kInt32)};
  }
  float out_scale() const { return load_as_float(dtype, &scale_out, 0); }
  float in_scale() const { return load_as_float(dtype, &scale, 0); }
};

AmpUpdateScaleParams params(double g, double b, int64_t interval) { return {g, b, interval}; }

class AmpUpdateScaleDTypes : public ::testing::TestWithParam<DType> {};

TEST_P(AmpUpdateScaleDTypes, WorkedExamplesOfTheSpec) {
  const DType d = GetParam();
  {  // counting
    Scalars s(d, 65536.0f, 900, 0.0f);
    ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.5, 1000)).ok());
    EXPECT_EQ(s.out_scale(), round_to(d, 65536.0f));
    EXPECT_EQ(s.tracker_out, 901);
  }
  {  // growth
    Scalars s(d, 65536.0f, 999, 0.0f);
    ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.5, 1000)).ok());
    if (d == DType::kFloat16) {
      // 65536 is not representable in fp16 (it is inf); the input is already inf there.
      EXPECT_TRUE(std::isinf(s.in_scale()));
    } else {
      EXPECT_EQ(s.out_scale(), 131072.0f);
    }
    EXPECT_EQ(s.tracker_out, 0);
  }
  for (int32_t tracker : {0, 5, 999, INT32_MAX}) {  // backoff, whatever the tracker
    Scalars s(d, 4096.0f, tracker, 1.0f);
    ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.5, 1000)).ok());
    EXPECT_EQ(s.out_scale(), 2048.0f);
    EXPECT_EQ(s.tracker_out, 0);
  }
}

TEST_P(AmpUpdateScaleDTypes, FoundInfIeeeSemantics) {
  const DType d = GetParam();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (float found : {nan, -nan, inf, -inf, 1e-30f, -1.0f}) {
    Scalars s(d, 1024.0f, 7, found);
    const bool counts_as_found = load_as_float(d, &s.found, 0) != 0.0f;
    ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.25, 100)).ok());
    if (counts_as_found) {
      EXPECT_EQ(s.out_scale(), 256.0f) << found;
      EXPECT_EQ(s.tracker_out, 0);
    } else {  // 1e-30 underflows to zero in fp16/bf16 and is then "not found"
      EXPECT_EQ(s.out_scale(), 1024.0f) << found;
      EXPECT_EQ(s.tracker_out, 8);
    }
  }
  for (float zero : {0.0f, -0.0f}) {
    Scalars s(d, 1024.0f, 7, zero);
    ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.25, 100)).ok());
    EXPECT_EQ(s.out_scale(), 1024.0f);
    EXPECT_EQ(s.tracker_out, 8);
  }
}

TEST_P(AmpUpdateScaleDTypes, OverflowProtectionInTheOutputDType) {
  const DType d = GetParam();
  const float largest = d == DType::kFloat16    ? 65504.0f
                        : d == DType::kBFloat16 ? bf16_bits_to_float(0x7F7F)
                                                : std::numeric_limits<float>::max();
  Scalars s(d, largest, 9, 0.0f);
  ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.5, 10)).ok());
  EXPECT_EQ(s.out_scale(), largest);  // kept, not inf
  EXPECT_EQ(s.tracker_out, 0);
  // A growth that stays finite after rounding is taken.
  Scalars t(d, 1.0f, 9, 0.0f);
  ASSERT_TRUE(amp_update_scale(t.separate(), params(3.0, 0.5, 10)).ok());
  EXPECT_EQ(t.out_scale(), 3.0f);
}

TEST_P(AmpUpdateScaleDTypes, InPlaceEqualsSeparateOutputs) {
  const DType d = GetParam();
  for (int32_t tracker : {3, 9, 10}) {
    for (float found : {0.0f, 1.0f}) {
      Scalars a(d, 300.0f, tracker, found), b(d, 300.0f, tracker, found);
      ASSERT_TRUE(amp_update_scale(a.separate(), params(2.0, 0.5, 10)).ok());
      ASSERT_TRUE(amp_update_scale(b.in_place(), params(2.0, 0.5, 10)).ok());
      EXPECT_EQ(std::bit_cast<uint32_t>(a.out_scale()), std::bit_cast<uint32_t>(b.in_scale()));
      EXPECT_EQ(a.tracker_out, b.tracker);
    }
  }
}

TEST_P(AmpUpdateScaleDTypes, ScalesAreRoundedOnceToTheDType) {
  const DType d = GetParam();
  // 1000 * 1.1f in fp32 is 1100.0000238...; the output is that fp32 value rounded once.
  Scalars s(d, 1000.0f, 4, 0.0f);
  ASSERT_TRUE(amp_update_scale(s.separate(), params(1.1, 0.5, 5)).ok());
  EXPECT_EQ(s.out_scale(), round_to(d, round_to(d, 1000.0f) * 1.1f));
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, AmpUpdateScaleDTypes,
                         ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                         [](const auto& param_info) {
                           return std::string(dtype_short_name(param_info.param));
                         });

TEST(AmpUpdateScale, Fp32OverflowExample) {
  Scalars s(DType::kFloat32, 3e38f, 99, 0.0f);
  ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.5, 100)).ok());
  EXPECT_EQ(s.out_scale(), 3e38f);
  EXPECT_EQ(s.tracker_out, 0);
}

TEST(AmpUpdateScale, Fp16Example65504) {
  Scalars s(DType::kFloat16, 65504.0f, 1999, 0.0f);
  ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.5, 2000)).ok());
  EXPECT_EQ(s.out_scale(), 65504.0f);
  EXPECT_EQ(s.tracker_out, 0);
}

TEST(AmpUpdateScale, TrackerAtInt32MaxWrapsWithoutUndefinedBehaviour) {
  Scalars s(DType::kFloat32, 8.0f, INT32_MAX, 0.0f);
  ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.5, INT32_MAX)).ok());
  EXPECT_EQ(s.tracker_out, INT32_MIN);  // INT32_MAX + 1 wraps and never equals the interval
  EXPECT_EQ(s.out_scale(), 8.0f);
  Scalars t(DType::kFloat32, 8.0f, INT32_MAX - 1, 0.0f);
  ASSERT_TRUE(amp_update_scale(t.separate(), params(2.0, 0.5, INT32_MAX)).ok());
  EXPECT_EQ(t.tracker_out, 0);
  EXPECT_EQ(t.out_scale(), 16.0f);
}

TEST(AmpUpdateScale, FactorsAreAppliedInFp32) {
  // 0.1 as a double, narrowed to fp32 first, then multiplied in fp32.
  Scalars s(DType::kFloat32, 3.0f, 0, 1.0f);
  ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.1, 10)).ok());
  EXPECT_EQ(std::bit_cast<uint32_t>(s.out_scale()), std::bit_cast<uint32_t>(3.0f * 0.1f));
}

TEST(AmpUpdateScale, OneElementShapes) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{}, {1}, {1, 1}, {1, 1, 1, 1, 1, 1, 1, 1}}) {
    Scalars s(DType::kFloat32, 16.0f, 1, 0.0f, shape);
    ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.5, 2)).ok());
    EXPECT_EQ(s.out_scale(), 32.0f);
  }
}

// Validation: each row gives its code, names the argument, and writes nothing.
struct Case {
  const char* what;
  StatusCode code;
  const char* needle;
};

void expect_rejected(Scalars& s, const AmpUpdateScaleTensors& t, const AmpUpdateScaleParams& p,
                     StatusCode code, const char* needle) {
  const Scalars before = s;
  const Status st = amp_update_scale(t, p);
  EXPECT_EQ(st.code(), code) << st.message();
  EXPECT_NE(st.message().find("AmpUpdateScale"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  EXPECT_EQ(s.scale, before.scale);
  EXPECT_EQ(s.tracker, before.tracker);
  EXPECT_EQ(s.scale_out, before.scale_out);
  EXPECT_EQ(s.tracker_out, before.tracker_out);
  EXPECT_EQ(amp_update_scale_validate(t, p).code(), code);
}

TEST(AmpUpdateScale, ValidationRows) {
  const auto p = params(2.0, 0.5, 10);
  const char* names[] = {"current_scale", "growth_tracker", "found_inf", "updated_scale",
                         "updated_growth_tracker"};
  for (int which = 0; which < 5; ++which) {  // null data
    Scalars s(DType::kFloat32, 1.0f, 1, 0.0f);
    auto t = s.separate();
    TensorView* views[] = {&t.current_scale, &t.growth_tracker, &t.found_inf, &t.updated_scale,
                           &t.updated_growth_tracker};
    views[which]->data = nullptr;
    expect_rejected(s, t, p, StatusCode::kParamNullptr, names[which]);
  }
  for (DType bad : {DType::kInt32, DType::kFloat64, DType::kInt8, DType::kBool}) {
    Scalars s(DType::kFloat32, 1.0f, 1, 0.0f);
    auto t = s.separate();
    t.current_scale.dtype = bad;
    expect_rejected(s, t, p, StatusCode::kParamInvalid, "current_scale");
  }
  {
    Scalars s(DType::kFloat32, 1.0f, 1, 0.0f);
    auto t = s.separate();
    t.found_inf.dtype = DType::kFloat16;
    expect_rejected(s, t, p, StatusCode::kParamInvalid, "found_inf");
  }
  {
    Scalars s(DType::kFloat16, 1.0f, 1, 0.0f);
    auto t = s.separate();
    t.updated_scale.dtype = DType::kBFloat16;
    expect_rejected(s, t, p, StatusCode::kParamInvalid, "updated_scale");
  }
  {
    Scalars s(DType::kFloat32, 1.0f, 1, 0.0f);
    auto t = s.separate();
    t.growth_tracker.dtype = DType::kInt64;
    expect_rejected(s, t, p, StatusCode::kParamInvalid, "growth_tracker");
  }
  {
    Scalars s(DType::kFloat32, 1.0f, 1, 0.0f);
    auto t = s.separate();
    t.updated_growth_tracker.dtype = DType::kFloat32;
    expect_rejected(s, t, p, StatusCode::kParamInvalid, "updated_growth_tracker");
  }
  for (int which = 0; which < 5; ++which) {  // not exactly one element
    for (std::vector<int64_t> shape : {std::vector<int64_t>{2}, {1, 0}, {0}}) {
      Scalars s(DType::kFloat32, 1.0f, 1, 0.0f);
      auto t = s.separate();
      TensorView* views[] = {&t.current_scale, &t.growth_tracker, &t.found_inf, &t.updated_scale,
                             &t.updated_growth_tracker};
      *views[which] = TensorView(views[which]->data, views[which]->dtype, shape);
      expect_rejected(s, t, p, StatusCode::kTiling, names[which]);
    }
  }
  for (int64_t interval : {int64_t{0}, int64_t{-1}, int64_t{INT32_MAX} + 1, INT64_MIN}) {
    Scalars s(DType::kFloat32, 1.0f, 1, 0.0f);
    expect_rejected(s, s.separate(), params(2.0, 0.5, interval), StatusCode::kTiling,
                    "growth_interval");
  }
  {  // the two outputs sharing bytes
    Scalars s(DType::kFloat32, 1.0f, 1, 0.0f);
    auto t = s.separate();
    t.updated_growth_tracker.data = &s.scale_out;
    expect_rejected(s, t, p, StatusCode::kParamInvalid, "overlap");
  }
}

TEST(AmpUpdateScale, NaNResultsAreTheCanonicalQuietNaN) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    // A NaN scale with a payload, backed off: the result is the canonical NaN, sign cleared.
    Scalars s(d, 1.0f, 0, 1.0f);
    if (d == DType::kFloat32)
      s.scale = 0xFFA12345u;
    else
      s.scale = d == DType::kFloat16 ? 0xFE55u : 0xFFA1u;
    ASSERT_TRUE(amp_update_scale(s.separate(), params(2.0, 0.5, 10)).ok());
    const uint32_t want = d == DType::kFloat32   ? 0x7FC00000u
                          : d == DType::kFloat16 ? 0x7E00u
                                                 : 0x7FC0u;
    EXPECT_EQ(s.scale_out & (d == DType::kFloat32 ? 0xFFFFFFFFu : 0xFFFFu), want);
  }
}

TEST(AmpUpdateScale, FactorsAreNotRangeChecked) {
  Scalars s(DType::kFloat32, 2.0f, 0, 1.0f);
  ASSERT_TRUE(amp_update_scale(s.separate(), params(-3.0, -1.5, 1)).ok());
  EXPECT_EQ(s.out_scale(), -3.0f);
}

}  // namespace
}  // namespace mantissa
