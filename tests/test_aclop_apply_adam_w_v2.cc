// ApplyAdamWV2 by name (aclopCompileAndExecuteV2): the graph's inputs (var, m, v, grad, step,
// max_grad_norm; no outputs: the state is updated in place) and attributes give the C++ API's
// bits; an unused max_grad_norm is CANN's absent-input descriptor; attributes left out take the
// graph's defaults; rejected calls write nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mantissa/ops/apply_adam_w_v2.h"
#include "test_aclop_common.h"

namespace {

using aclop_test::Arg;
using aclop_test::Call;
using aclop_test::expect_rejected_untouched;

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
