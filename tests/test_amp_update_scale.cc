// AmpUpdateScale through the C++ API: every branch for the three dtypes, the spec's worked
// examples, special found_inf values, overflow protection, tracker wrap, every validation row.
//
// Below the C++ API's tests: the aclnn two-phase entry and op-by-name (aclopCompileAndExecuteV2),
// each section headed "// ====".

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_amp_update_scale.h"
#include "aclop_support.h"
#include "mantissa/dtype.h"
#include "mantissa/ops/amp_update_scale.h"

namespace mantissa::testing {

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

// ==== The aclnn entry: =======================================================
// aclnnAmpUpdateScale through both phases of the C API: every branch for FLOAT, FLOAT16 and
// BFLOAT16, the spec's worked examples, every validation row with its code and nothing written,
// the recent-error message, executor misuse, streams, shapes, in-place and separate outputs.

namespace aclnn {

namespace {

using mantissa::DType;

std::string recent() { return aclGetRecentErrMsg(); }

DType dt(aclDataType d) { return static_cast<DType>(d); }

// One 8-byte slot of memory per tensor; the views use the first element.
struct Memory {
  uint64_t scale, tracker, found, scale_out, tracker_out;
};
constexpr uint64_t kSentinel = 0xA5A5A5A5A5A5A5A5ull;

// A call: five one-element tensors over caller memory, described by a dtype, shape and format
// per tensor, in separate or in-place form.
class Call {
 public:
  Call(aclDataType dtype, float scale, int32_t tracker, float found,
       std::vector<int64_t> shape = {1})
      : dtype_(dtype), shape_(std::move(shape)) {
    fill_sentinel();
    set_inputs(scale, tracker, found);
    dtypes_ = {dtype, ACL_INT32, dtype, dtype, ACL_INT32};
    shapes_.assign(5, shape_);
  }
  ~Call() { destroy(); }

  void fill_sentinel() { mem_ = {kSentinel, kSentinel, kSentinel, kSentinel, kSentinel}; }
  void set_inputs(float scale, int32_t tracker, float found) {
    mantissa::store_from_float(dt(dtype_), &mem_.scale, 0, scale);
    std::memcpy(&mem_.tracker, &tracker, 4);
    mantissa::store_from_float(dt(dtype_), &mem_.found, 0, found);
  }

  // Overrides per tensor (0 currentScale .. 4 updatedGrowthTracker).
  std::vector<aclDataType> dtypes_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<aclFormat> formats_ = std::vector<aclFormat>(5, ACL_FORMAT_ND);
  std::vector<void*> data_override_ = std::vector<void*>(5, nullptr);
  std::vector<bool> null_data_ = std::vector<bool>(5, false);
  bool in_place = false;

  void* data(int k) {
    if (null_data_[k]) return nullptr;
    if (data_override_[k] != nullptr) return data_override_[k];
    uint64_t* slots[] = {&mem_.scale, &mem_.tracker, &mem_.found, &mem_.scale_out,
                         &mem_.tracker_out};
    if (in_place && k == 3) return slots[0];
    if (in_place && k == 4) return slots[1];
    return slots[k];
  }

  // Creates the five aclTensors (again).
  void make() {
    destroy();
    for (int k = 0; k < 5; ++k) {
      const auto& s = shapes_[k];
      std::vector<int64_t> strides(s.size(), 1);
      for (size_t i = s.size(); i-- > 1;) strides[i - 1] = strides[i] * s[i];
      tensors_[k] = aclCreateTensor(s.data(), s.size(), dtypes_[k], strides.data(), 0, formats_[k],
                                    s.data(), s.size(), data(k));
      ASSERT_NE(tensors_[k], nullptr) << recent();
    }
  }
  aclTensor* tensor(int k) { return tensors_[k]; }

  aclnnStatus phase_one(double g, double b, int64_t interval, aclOpExecutor** executor,
                        uint64_t* ws) {
    return aclnnAmpUpdateScaleGetWorkspaceSize(tensors_[0], tensors_[1], tensors_[2], g, b,
                                               interval, tensors_[3], tensors_[4], ws, executor);
  }
  // Both phases; the status of the first that fails.
  aclnnStatus run(double g, double b, int64_t interval, aclrtStream stream = nullptr) {
    make();
    uint64_t ws = 77;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus s = phase_one(g, b, interval, &executor, &ws);
    if (s != ACLNN_SUCCESS) return s;
    EXPECT_EQ(ws, 0u);
    EXPECT_NE(executor, nullptr);
    return aclnnAmpUpdateScale(nullptr, ws, executor, stream);
  }

  float scale_out() const {
    return mantissa::load_as_float(dt(dtype_), in_place ? &mem_.scale : &mem_.scale_out, 0);
  }
  int32_t tracker_out() const {
    int32_t t;
    std::memcpy(&t, in_place ? &mem_.tracker : &mem_.tracker_out, 4);
    return t;
  }
  // The scale as the output dtype stores it, compared by bits through fp32.
  uint32_t scale_out_bits() const {
    const float f = scale_out();
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }
  const Memory& memory() const { return mem_; }

 private:
  void destroy() {
    for (auto*& t : tensors_) {
      if (t != nullptr) aclDestroyTensor(t);
      t = nullptr;
    }
  }
  aclDataType dtype_;
  std::vector<int64_t> shape_;
  Memory mem_{};
  aclTensor* tensors_[5] = {};
};

bool same_bytes(const Memory& a, const Memory& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// What the rule gives, computed here in fp32 with the dtype's rounding (independent of the
// library's implementation).
struct Expected {
  float scale;
  int32_t tracker;
};
Expected rule(aclDataType dtype, float scale, int32_t tracker, float found, float g, float b,
              int64_t interval) {
  const float s = mantissa::round_to(dt(dtype), scale);
  const float f = mantissa::round_to(dt(dtype), found);
  if (f != 0.0f) return {mantissa::round_to(dt(dtype), s * b), 0};
  const int64_t successful = tracker == INT32_MAX ? INT32_MIN : int64_t{tracker} + 1;
  if (successful == interval) {
    const float grown = mantissa::round_to(dt(dtype), s * g);
    return {std::isfinite(grown) ? grown : s, 0};
  }
  return {s, static_cast<int32_t>(successful)};
}

class CompatAmpUpdateScale : public ::testing::TestWithParam<aclDataType> {};

TEST_P(CompatAmpUpdateScale, EveryBranchSeparateAndInPlace) {
  const aclDataType d = GetParam();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    float scale;
    int32_t tracker;
    float found;
    float g, b;
    int64_t interval;
  };
  const Case cases[] = {
      {65536.0f, 900, 0.0f, 2.0f, 0.5f, 1000},             // count
      {65536.0f, 999, 0.0f, 2.0f, 0.5f, 1000},             // grow
      {65536.0f, 5, 1.0f, 2.0f, 0.5f, 1000},               // back off
      {65536.0f, 999, inf, 2.0f, 0.5f, 1000},              // inf found beats the growth
      {65536.0f, 3, nan, 2.0f, 0.5f, 1000},                // NaN counts as found
      {65536.0f, 3, -1.0f, 2.0f, 0.5f, 1000},              // negative counts as found
      {65536.0f, 999, -0.0f, 2.0f, 0.5f, 1000},            // -0.0 is not found
      {1.5f, 0, 0.0f, 3.0f, 0.25f, 1},                     // interval 1 grows every clean step
      {3e38f, 9, 0.0f, 2.0f, 0.5f, 10},                    // growth overflow: keep
      {65504.0f, 9, 0.0f, 2.0f, 0.5f, 10},                 // fp16 max
      {1.0f, INT32_MAX, 0.0f, 2.0f, 0.5f, 2000},           // tracker wraps to INT32_MIN
      {1.0f, INT32_MAX - 1, 0.0f, 2.0f, 0.5f, INT32_MAX},  // the largest interval
      {2.0f, 7, 0.0f, -1.0f, 0.5f, 8},                     // factors are not range-checked
      {2.0f, 7, 1.0f, 2.0f, -3.0f, 8},
  };
  for (const Case& c : cases) {
    for (bool in_place : {false, true}) {
      Call call(d, c.scale, c.tracker, c.found);
      call.in_place = in_place;
      ASSERT_EQ(call.run(c.g, c.b, c.interval), ACLNN_SUCCESS) << recent();
      const Expected e = rule(d, c.scale, c.tracker, c.found, c.g, c.b, c.interval);
      EXPECT_EQ(call.scale_out_bits(), bits(e.scale))
          << "scale " << c.scale << " tracker " << c.tracker << " found " << c.found << " in_place "
          << in_place << ": got " << call.scale_out() << " want " << e.scale;
      EXPECT_EQ(call.tracker_out(), e.tracker) << c.scale << " " << c.tracker;
      if (!in_place) {  // the inputs are read only
        Call fresh(d, c.scale, c.tracker, c.found);
        EXPECT_EQ(call.memory().scale, fresh.memory().scale);
        EXPECT_EQ(call.memory().tracker, fresh.memory().tracker);
        EXPECT_EQ(call.memory().found, fresh.memory().found);
      }
    }
  }
}

TEST_P(CompatAmpUpdateScale, OneElementShapes) {
  const aclDataType d = GetParam();
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{}, std::vector<int64_t>{1}, std::vector<int64_t>{1, 1},
        std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1}}) {
    Call call(d, 65536.0f, 999, 0.0f, shape);
    ASSERT_EQ(call.run(2.0, 0.5, 1000), ACLNN_SUCCESS) << recent();
    const float want = mantissa::round_to(dt(d), 131072.0f);
    EXPECT_EQ(call.scale_out(), want);
    EXPECT_EQ(call.tracker_out(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, CompatAmpUpdateScale,
                         ::testing::Values(ACL_FLOAT, ACL_FLOAT16, ACL_BF16),
                         [](const auto& param_info) {
                           return std::string(mantissa::dtype_short_name(dt(param_info.param)));
                         });

TEST(CompatAmpUpdateScaleSpec, WorkedExamples) {
  {
    Call call(ACL_FLOAT, 65536.0f, 900, 0.0f);
    ASSERT_EQ(call.run(2.0, 0.5, 1000), ACLNN_SUCCESS);
    EXPECT_EQ(call.scale_out(), 65536.0f);
    EXPECT_EQ(call.tracker_out(), 901);
  }
  {
    Call call(ACL_FLOAT, 65536.0f, 999, 0.0f);
    ASSERT_EQ(call.run(2.0, 0.5, 1000), ACLNN_SUCCESS);
    EXPECT_EQ(call.scale_out(), 131072.0f);
    EXPECT_EQ(call.tracker_out(), 0);
  }
  for (int32_t tracker : {0, 900, 999, 12345}) {
    Call call(ACL_FLOAT, 65536.0f, tracker, 1.0f);
    ASSERT_EQ(call.run(2.0, 0.5, 1000), ACLNN_SUCCESS);
    EXPECT_EQ(call.scale_out(), 32768.0f);
    EXPECT_EQ(call.tracker_out(), 0);
  }
  {
    Call call(ACL_FLOAT, 3e38f, 99, 0.0f);
    ASSERT_EQ(call.run(2.0, 0.5, 100), ACLNN_SUCCESS);
    EXPECT_EQ(call.scale_out(), 3e38f);
    EXPECT_EQ(call.tracker_out(), 0);
  }
  {
    Call call(ACL_FLOAT16, 65504.0f, 99, 0.0f);
    ASSERT_EQ(call.run(2.0, 0.5, 100), ACLNN_SUCCESS);
    EXPECT_EQ(call.scale_out(), 65504.0f);
    EXPECT_EQ(call.tracker_out(), 0);
  }
}

// --- Validation: each row's code, the reason, and nothing written -----------------------------

struct Row {
  const char* what;
  void (*setup)(Call&);
  int64_t interval;
  aclnnStatus code;
  const char* reason;  // a substring of aclGetRecentErrMsg
};

void check_row(aclDataType d, const Row& row) {
  SCOPED_TRACE(row.what);
  Call call(d, 65536.0f, 999, 0.0f);
  row.setup(call);
  const Memory before = call.memory();
  EXPECT_EQ(call.run(2.0, 0.5, row.interval), row.code);
  EXPECT_NE(recent().find(row.reason), std::string::npos) << recent();
  EXPECT_TRUE(same_bytes(call.memory(), before)) << "a rejected call wrote memory";
}

TEST(CompatAmpUpdateScaleValidation, EveryRow) {
  const Row rows[] = {
      {"current_scale INT32", [](Call& c) { c.dtypes_[0] = ACL_INT32; }, 1000,
       ACLNN_ERR_PARAM_INVALID, "current_scale dtype INT32"},
      {"current_scale DOUBLE",
       [](Call& c) { c.dtypes_[0] = c.dtypes_[2] = c.dtypes_[3] = ACL_DOUBLE; }, 1000,
       ACLNN_ERR_PARAM_INVALID, "current_scale"},
      {"current_scale unknown dtype",
       [](Call& c) { c.dtypes_[0] = c.dtypes_[2] = c.dtypes_[3] = static_cast<aclDataType>(30); },
       1000, ACLNN_ERR_PARAM_INVALID, "current_scale"},
      {"current_scale STRING",
       [](Call& c) { c.dtypes_[0] = c.dtypes_[2] = c.dtypes_[3] = ACL_STRING; }, 1000,
       ACLNN_ERR_PARAM_INVALID, "current_scale"},
      {"found_inf dtype differs", [](Call& c) { c.dtypes_[2] = ACL_DOUBLE; }, 1000,
       ACLNN_ERR_PARAM_INVALID, "found_inf dtype DOUBLE"},
      {"updated_scale dtype differs", [](Call& c) { c.dtypes_[3] = ACL_INT8; }, 1000,
       ACLNN_ERR_PARAM_INVALID, "updated_scale"},
      {"growth_tracker INT64", [](Call& c) { c.dtypes_[1] = ACL_INT64; }, 1000,
       ACLNN_ERR_PARAM_INVALID, "growth_tracker"},
      {"growth_tracker FLOAT", [](Call& c) { c.dtypes_[1] = ACL_FLOAT; }, 1000,
       ACLNN_ERR_PARAM_INVALID, "growth_tracker"},
      {"updated_growth_tracker UINT32", [](Call& c) { c.dtypes_[4] = ACL_UINT32; }, 1000,
       ACLNN_ERR_PARAM_INVALID, "updated_growth_tracker"},
      {"current_scale [2]", [](Call& c) { c.shapes_[0] = {2}; }, 1000, ACLNN_ERR_INNER_TILING_ERROR,
       "current_scale must hold exactly one element"},
      {"growth_tracker [1, 2]",
       [](Call& c) {
         c.shapes_[1] = {1, 2};
       },
       1000, ACLNN_ERR_INNER_TILING_ERROR, "growth_tracker"},
      {"found_inf empty", [](Call& c) { c.shapes_[2] = {0}; }, 1000, ACLNN_ERR_INNER_TILING_ERROR,
       "found_inf"},
      {"updated_scale [2]", [](Call& c) { c.shapes_[3] = {2}; }, 1000, ACLNN_ERR_INNER_TILING_ERROR,
       "updated_scale"},
      {"updated_growth_tracker [2, 1]",
       [](Call& c) {
         c.shapes_[4] = {2, 1};
       },
       1000, ACLNN_ERR_INNER_TILING_ERROR, "updated_growth_tracker"},
      {"growth_interval 0", [](Call&) {}, 0, ACLNN_ERR_INNER_TILING_ERROR, "growth_interval 0"},
      {"growth_interval -1", [](Call&) {}, -1, ACLNN_ERR_INNER_TILING_ERROR, "growth_interval"},
      {"growth_interval 2^31", [](Call&) {}, int64_t{1} << 31, ACLNN_ERR_INNER_TILING_ERROR,
       "2147483648"},
      {"currentScale data null", [](Call& c) { c.null_data_[0] = true; }, 1000,
       ACLNN_ERR_PARAM_NULLPTR, "current_scale"},
      {"updatedGrowthTracker data null", [](Call& c) { c.null_data_[4] = true; }, 1000,
       ACLNN_ERR_PARAM_NULLPTR, "updated_growth_tracker"},
      {"format NCHW", [](Call& c) { c.formats_[2] = ACL_FORMAT_NCHW; }, 1000,
       ACLNN_ERR_PARAM_INVALID, "foundInf format"},
  };
  for (aclDataType d : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    for (const Row& row : rows) check_row(d, row);
  }
}

TEST(CompatAmpUpdateScaleValidation, RankAboveEightIsRejected) {
  Call call(ACL_FLOAT, 65536.0f, 999, 0.0f);
  call.shapes_[0] = std::vector<int64_t>(9, 1);
  const Memory before = call.memory();
  const aclnnStatus s = call.run(2.0, 0.5, 1000);
  EXPECT_TRUE(s == ACLNN_ERR_INNER_TILING_ERROR || s == ACLNN_ERR_PARAM_INVALID) << s;
  EXPECT_NE(recent().find("current_scale"), std::string::npos) << recent();
  EXPECT_TRUE(same_bytes(call.memory(), before));
}

TEST(CompatAmpUpdateScaleValidation, OutputsSharingBytesAreRejected) {
  Call call(ACL_FLOAT, 65536.0f, 999, 0.0f);
  uint64_t shared = kSentinel;
  call.data_override_[3] = &shared;
  call.data_override_[4] = &shared;
  const Memory before = call.memory();
  EXPECT_EQ(call.run(2.0, 0.5, 1000), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(same_bytes(call.memory(), before));
  EXPECT_EQ(shared, kSentinel);
}

TEST(CompatAmpUpdateScaleValidation, NullPointersNameTheArgument) {
  const char* names[] = {"currentScale", "growthTracker", "foundInf", "updatedScale",
                         "updatedGrowthTracker"};
  for (int k = 0; k < 5; ++k) {
    Call call(ACL_FLOAT, 65536.0f, 999, 0.0f);
    call.make();
    const Memory before = call.memory();
    aclTensor* t[5] = {call.tensor(0), call.tensor(1), call.tensor(2), call.tensor(3),
                       call.tensor(4)};
    t[k] = nullptr;
    uint64_t ws = 0;
    aclOpExecutor* executor = nullptr;
    EXPECT_EQ(aclnnAmpUpdateScaleGetWorkspaceSize(t[0], t[1], t[2], 2.0, 0.5, 1000, t[3], t[4], &ws,
                                                  &executor),
              ACLNN_ERR_PARAM_NULLPTR)
        << names[k];
    EXPECT_NE(recent().find("aclnnAmpUpdateScaleGetWorkspaceSize"), std::string::npos);
    EXPECT_NE(recent().find(std::string(names[k]) + " is null"), std::string::npos) << recent();
    EXPECT_EQ(executor, nullptr);
    EXPECT_TRUE(same_bytes(call.memory(), before));
  }
  Call call(ACL_FLOAT, 65536.0f, 999, 0.0f);
  call.make();
  uint64_t ws = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(call.phase_one(2.0, 0.5, 1000, &executor, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_NE(recent().find("workspaceSize is null"), std::string::npos);
  EXPECT_EQ(call.phase_one(2.0, 0.5, 1000, nullptr, &ws), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_NE(recent().find("executor is null"), std::string::npos);
}

TEST(CompatAmpUpdateScaleValidation, ForeignTensorPointers) {
  Call call(ACL_FLOAT, 65536.0f, 999, 0.0f);
  call.make();
  const Memory before = call.memory();
  int garbage[16] = {};
  uint64_t ws = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnAmpUpdateScaleGetWorkspaceSize(
                call.tensor(0), call.tensor(1), reinterpret_cast<aclTensor*>(garbage), 2.0, 0.5,
                1000, call.tensor(3), call.tensor(4), &ws, &executor),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("foundInf"), std::string::npos);
  EXPECT_NE(recent().find("not a live aclTensor"), std::string::npos);
  EXPECT_TRUE(same_bytes(call.memory(), before));
}

// --- The two phases and executors --------------------------------------------------------------

TEST(CompatAmpUpdateScaleExecutor, PhaseOneComputesNothing) {
  Call call(ACL_FLOAT, 65536.0f, 999, 0.0f);
  call.make();
  const Memory before = call.memory();
  uint64_t ws = 5;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(call.phase_one(2.0, 0.5, 1000, &executor, &ws), ACLNN_SUCCESS);
  EXPECT_EQ(ws, 0u);
  EXPECT_TRUE(same_bytes(call.memory(), before));
  // The executor captured the views: the tensors may be destroyed before phase two.
  call.make();
  ASSERT_EQ(aclnnAmpUpdateScale(nullptr, 0, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(call.scale_out(), 131072.0f);
}

TEST(CompatAmpUpdateScaleExecutor, OneShotExecutorIsSpentAfterItsRun) {
  Call call(ACL_FLOAT, 65536.0f, 900, 0.0f);
  call.in_place = true;
  call.make();
  uint64_t ws = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(call.phase_one(2.0, 0.5, 1000, &executor, &ws), ACLNN_SUCCESS);
  ASSERT_EQ(aclnnAmpUpdateScale(nullptr, ws, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(call.tracker_out(), 901);
  EXPECT_EQ(aclnnAmpUpdateScale(nullptr, ws, executor, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("not a live executor"), std::string::npos);
  EXPECT_NE(recent().find("aclnnAmpUpdateScale"), std::string::npos);
  EXPECT_EQ(call.tracker_out(), 901);  // the second call ran nothing
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_ERR_PARAM_INVALID);
  // New executors never reuse a spent handle, so it stays refused.
  std::vector<aclOpExecutor*> fresh;
  for (int i = 0; i < 100; ++i) {
    aclOpExecutor* e = nullptr;
    ASSERT_EQ(call.phase_one(2.0, 0.5, 1000, &e, &ws), ACLNN_SUCCESS);
    EXPECT_NE(e, executor);
    fresh.push_back(e);
  }
  EXPECT_EQ(aclnnAmpUpdateScale(nullptr, ws, executor, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(call.tracker_out(), 901);
  for (aclOpExecutor* e : fresh) EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
}

TEST(CompatAmpUpdateScaleExecutor, RepeatableExecutorRunsUntilDestroyed) {
  Call call(ACL_FLOAT, 65536.0f, 900, 0.0f);
  call.in_place = true;
  call.make();
  uint64_t ws = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(call.phase_one(2.0, 0.5, 1000, &executor, &ws), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  for (int i = 1; i <= 5; ++i) {
    ASSERT_EQ(aclnnAmpUpdateScale(nullptr, ws, executor, stream), ACLNN_SUCCESS) << i;
    EXPECT_EQ(call.tracker_out(), 900 + i);  // in place: each run reads the previous result
  }
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_ERR_PARAM_INVALID);  // destroyed twice
  EXPECT_EQ(aclnnAmpUpdateScale(nullptr, ws, executor, stream), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(call.tracker_out(), 905);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST(CompatAmpUpdateScaleExecutor, GarbageAndNullExecutors) {
  alignas(64) unsigned char garbage[256];
  std::memset(garbage, 0x5A, sizeof garbage);
  auto* fake = reinterpret_cast<aclOpExecutor*>(garbage);
  EXPECT_EQ(aclnnAmpUpdateScale(nullptr, 0, fake, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(fake), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyAclOpExecutor(fake), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclnnAmpUpdateScale(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclDestroyAclOpExecutor(nullptr), ACLNN_ERR_PARAM_NULLPTR);
  for (unsigned char b : garbage) ASSERT_EQ(b, 0x5A);  // never written (nor freed)
}

TEST(CompatAmpUpdateScaleExecutor, UnusedOneShotExecutorCanBeDestroyed) {
  Call call(ACL_FLOAT, 65536.0f, 900, 0.0f);
  call.make();
  const Memory before = call.memory();
  uint64_t ws = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(call.phase_one(2.0, 0.5, 1000, &executor, &ws), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnAmpUpdateScale(nullptr, ws, executor, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(same_bytes(call.memory(), before));
}

TEST(CompatAmpUpdateScaleExecutor, FailedPhaseTwoStillSpendsTheExecutor) {
  Call call(ACL_FLOAT, 65536.0f, 900, 0.0f);
  call.make();
  const Memory before = call.memory();
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  uint64_t ws = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(call.phase_one(2.0, 0.5, 1000, &executor, &ws), ACLNN_SUCCESS);
  // A destroyed stream: rejected, nothing written, and the one-shot executor is gone.
  EXPECT_EQ(aclnnAmpUpdateScale(nullptr, ws, executor, stream), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("stream"), std::string::npos);
  EXPECT_TRUE(same_bytes(call.memory(), before));
  EXPECT_EQ(aclnnAmpUpdateScale(nullptr, ws, executor, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(same_bytes(call.memory(), before));
}

TEST(CompatAmpUpdateScaleExecutor, WorkspaceArgumentsAreAcceptedWhenSizeIsZero) {
  Call call(ACL_FLOAT, 65536.0f, 900, 0.0f);
  call.make();
  uint64_t ws = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(call.phase_one(2.0, 0.5, 1000, &executor, &ws), ACLNN_SUCCESS);
  alignas(64) unsigned char scratch[64];
  std::memset(scratch, 0x11, sizeof scratch);
  // A larger workspace than reported is fine and is not touched.
  ASSERT_EQ(aclnnAmpUpdateScale(scratch, sizeof scratch, executor, nullptr), ACLNN_SUCCESS);
  for (unsigned char b : scratch) ASSERT_EQ(b, 0x11);
  EXPECT_EQ(call.tracker_out(), 901);
}

// Threads calling concurrently: each gets its own results, its own recent error, and the
// executor registry stays consistent (every spent executor refused, every live one run once).
TEST(CompatAmpUpdateScaleExecutor, ConcurrentCallsOnSeveralThreads) {
  constexpr int kThreads = 8, kIterations = 200;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([th, &failures] {
      for (int it = 0; it < kIterations; ++it) {
        const int32_t tracker = th * 1000 + it;
        Call call(ACL_FLOAT, 4.0f, tracker, 0.0f);
        call.make();
        uint64_t ws = 0;
        aclOpExecutor* executor = nullptr;
        if (call.phase_one(2.0, 0.5, 1 << 30, &executor, &ws) != ACLNN_SUCCESS ||
            aclnnAmpUpdateScale(nullptr, ws, executor, nullptr) != ACLNN_SUCCESS ||
            call.tracker_out() != tracker + 1 || call.scale_out() != 4.0f) {
          ++failures[th];
        }
        if (aclnnAmpUpdateScale(nullptr, ws, executor, nullptr) != ACLNN_ERR_PARAM_INVALID ||
            std::string(aclGetRecentErrMsg()).find("not a live executor") == std::string::npos) {
          ++failures[th];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int th = 0; th < kThreads; ++th) EXPECT_EQ(failures[th], 0) << "thread " << th;
}

}  // namespace

}  // namespace aclnn

// ==== Op-by-name: ============================================================
// AmpUpdateScale through op-by-name execution: the worked examples, bit-identity with the C++
// API for every dtype, and every validation row with nothing written.

namespace aclop {

namespace {

using mantissa::testing::aclop_support::Call;
using mantissa::testing::aclop_support::expect_rejected_untouched;

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
  mantissa::testing::aclop_support::Arg& scale = in_place ? c.in(0) : c.out(0);
  mantissa::testing::aclop_support::Arg& tracker = in_place ? c.in(1) : c.out(1);
  const size_t n = mantissa::testing::aclop_support::elem_size(dt);
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
  const size_t n = mantissa::testing::aclop_support::elem_size(dt);
  return {std::vector<uint8_t>(c.out(0).mem.begin(), c.out(0).mem.begin() + n), c.out(1).get_i32()};
}

float scale_of(aclDataType dt, const std::vector<uint8_t>& bytes) {
  return mantissa::load_as_float(static_cast<mantissa::DType>(dt), bytes.data(), 0);
}

TEST(AclopAmpUpdateScale, WorkedExamples) {
  for (aclDataType dt : mantissa::testing::aclop_support::training_dtypes()) {
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
  for (aclDataType dt : mantissa::testing::aclop_support::training_dtypes()) {
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
  for (aclDataType dt : mantissa::testing::aclop_support::training_dtypes()) {
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
          mantissa::testing::aclop_support::Arg& a = k < 3 ? c.in(k) : c.out(k - 3);
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

}  // namespace aclop

}  // namespace mantissa::testing
