// Every validation rule of the multi-tensor steps: the status code, the parameter named in the
// message, and not one byte written anywhere (every buffer of every parameter compared).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "multi_tensor_support.h"

namespace mantissa::testing {

namespace {

using testing::Algo;
using testing::Form;
using testing::Hyper;
using testing::ParamList;

constexpr DType kF32 = DType::kFloat32;
constexpr DType kF16 = DType::kFloat16;
constexpr DType kBF16 = DType::kBFloat16;

// A valid list of three parameters (fp32, bf16, master weights with a working copy) of four
// elements each, and the three steps' argument lists built from it, which a case then breaks.
struct Fixture {
  ParamList l;
  std::vector<SgdParamTensors> sgd;
  std::vector<AdamDParamTensors> adam_d;
  std::vector<AdamWParamTensors> adam_w;
  Hyper h;
  FusedStepOptions o;
  float scale = 2.0f, found = 0.0f;
  std::vector<uint8_t> before;

  Fixture() {
    std::mt19937_64 rng(3);
    l.params.push_back(testing::make_param({4}, {kF32, kF32, std::nullopt}, Algo::kAdamW, rng));
    l.params.push_back(
        testing::make_param({2, 2}, {kBF16, kBF16, std::nullopt}, Algo::kAdamW, rng));
    l.params.push_back(testing::make_param({4}, {kF32, kF16, kF16}, Algo::kAdamW, rng));
    sgd = l.sgd();
    adam_d = l.adam_d();
    adam_w = l.adam_w(true);
    h.sgd = {0.1f, 0.9f, 0.0f, 0.0f, false};
    h.adam_d = {0.9f, 0.999f, 0.001f, 0.9f, 0.999f, 1e-7f, false};
    h.adam_w.hyper.amsgrad = true;
    o.grad_scale = TensorView(&scale, kF32, {1});
    o.found_inf = TensorView(&found, kF32, {1});
    before = l.snapshot();
  }
  Status run(Algo a) {
    if (a == Algo::kSgd) return multi_tensor_sgd(sgd, h.sgd, o);
    if (a == Algo::kAdamD) return multi_tensor_apply_adam_d(adam_d, h.adam_d, o);
    return multi_tensor_adam_w(adam_w, h.adam_w, o);
  }
};

// Breaks the fixture with `edit` (which sees all three argument lists), runs `algo`, expects
// `code` with `text` in the message and nothing written.
void expect_rejected(Algo algo, StatusCode code, const std::string& text,
                     const std::function<void(Fixture&)>& edit) {
  Fixture f;
  edit(f);
  const Status s = f.run(algo);
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
  EXPECT_EQ(f.l.snapshot(), f.before) << "bytes written by a rejected call: " << s.message();
  EXPECT_EQ(f.scale, 2.0f);
  EXPECT_EQ(f.found, 0.0f);
}

const Algo kAll[] = {Algo::kSgd, Algo::kAdamD, Algo::kAdamW};

TEST(MultiTensorValidation, TheFixtureIsValid) {
  for (Algo a : kAll) {
    Fixture f;
    ASSERT_TRUE(f.run(a).ok()) << f.run(a).message();
    EXPECT_NE(f.l.snapshot(), f.before);
  }
}

TEST(MultiTensorValidation, GradScaleAndFoundInf) {
  for (Algo a : kAll) {
    expect_rejected(a, StatusCode::kParamInvalid, "grad_scale",
                    [](Fixture& f) { f.o.grad_scale->dtype = kF16; });
    expect_rejected(a, StatusCode::kParamInvalid, "grad_scale",
                    [](Fixture& f) { f.o.grad_scale = TensorView(&f.scale, kF32, {2}); });
    expect_rejected(a, StatusCode::kParamInvalid, "found_inf", [](Fixture& f) {
      f.o.found_inf = TensorView(&f.found, kF32, {1, 0});
    });
    expect_rejected(a, StatusCode::kParamNullptr, "found_inf",
                    [](Fixture& f) { f.o.found_inf->data = nullptr; });
    expect_rejected(a, StatusCode::kParamInvalid, "WeightRounding",
                    [](Fixture& f) { f.o.rounding = static_cast<WeightRounding>(7); });
  }
}

// The per-parameter rules, the single operators' declaration rules with the parameter index.
TEST(MultiTensorValidation, PerParameterRules) {
  // Null data of a tensor with elements.
  expect_rejected(Algo::kSgd, StatusCode::kParamNullptr, "params[1]",
                  [](Fixture& f) { f.sgd[1].accum.data = nullptr; });
  expect_rejected(Algo::kAdamW, StatusCode::kParamNullptr, "params[2]",
                  [](Fixture& f) { f.adam_w[2].grad.data = nullptr; });
  // dtypes: state of another dtype; grad fp16 with bf16 state; an int32 var.
  expect_rejected(Algo::kAdamD, StatusCode::kParamInvalid, "params[0]: m dtype",
                  [](Fixture& f) { f.adam_d[0].m.dtype = kF16; });
  expect_rejected(Algo::kAdamW, StatusCode::kParamInvalid, "params[1]: grad dtype",
                  [](Fixture& f) { f.adam_w[1].grad.dtype = kF16; });
  expect_rejected(Algo::kSgd, StatusCode::kParamInvalid, "params[0]",
                  [](Fixture& f) { f.sgd[0].parameters.dtype = DType::kInt32; });
  // Shapes.
  expect_rejected(Algo::kAdamW, StatusCode::kParamInvalid, "params[1]: grad shape", [](Fixture& f) {
    f.adam_w[1].grad.shape = {4, 1};
  });
  expect_rejected(Algo::kSgd, StatusCode::kParamInvalid, "params[2]: stat shape",
                  [](Fixture& f) { f.sgd[2].stat.shape[0] = 3; });
  // Contiguity.
  expect_rejected(Algo::kAdamD, StatusCode::kParamInvalid, "params[1]", [](Fixture& f) {
    const int64_t shape[] = {2, 2}, strides[] = {1, 2};
    f.adam_d[1].v = TensorView(f.adam_d[1].v.data, kBF16, shape, strides);
  });
  // Rank above 8.
  expect_rejected(Algo::kAdamW, StatusCode::kParamInvalid, "params[0]",
                  [](Fixture& f) { f.adam_w[0].var.rank = 9; });
  // Aliasing within a parameter.
  expect_rejected(Algo::kAdamW, StatusCode::kParamInvalid, "params[0]",
                  [](Fixture& f) { f.adam_w[0].v.data = f.adam_w[0].m.data; });
  expect_rejected(Algo::kSgd, StatusCode::kParamInvalid, "params[0]",
                  [](Fixture& f) { f.sgd[0].gradient.data = f.sgd[0].accum.data; });
  // amsgrad needs max_grad_norm.
  expect_rejected(Algo::kAdamW, StatusCode::kParamNullptr, "params[1]: max_grad_norm",
                  [](Fixture& f) { f.adam_w[1].max_grad_norm.reset(); });
}

TEST(MultiTensorValidation, WorkingCopyAndCompensation) {
  for (Algo a : kAll) {
    // A working copy of fp32 dtype, of another shape, or with 16-bit weights.
    expect_rejected(a, StatusCode::kParamInvalid, "params[2]", [](Fixture& f) {
      f.sgd[2].working->dtype = kF32;
      f.adam_d[2].working->dtype = kF32;
      f.adam_w[2].working->dtype = kF32;
    });
    expect_rejected(a, StatusCode::kParamInvalid, "params[2]: working shape", [](Fixture& f) {
      f.sgd[2].working->shape[0] = 2;
      f.adam_d[2].working->shape[0] = 2;
      f.adam_w[2].working->shape[0] = 2;
    });
    expect_rejected(a, StatusCode::kParamInvalid, "params[1]: a working copy needs FLOAT",
                    [](Fixture& f) {
                      TensorView w = *f.sgd[2].working;
                      w.dtype = kBF16;
                      w.rank = 2;
                      w.shape = {2, 2};
                      w.strides = {2, 1};
                      f.sgd[1].working = w;
                      f.adam_d[1].working = w;
                      f.adam_w[1].working = w;
                      f.sgd[2].working.reset();
                      f.adam_d[2].working.reset();
                      f.adam_w[2].working.reset();
                    });
    // Kahan with bf16 weights needs a compensation buffer; one given otherwise is an error.
    expect_rejected(a, StatusCode::kParamNullptr, "params[1]: compensation is required",
                    [](Fixture& f) { f.o.rounding = WeightRounding::kKahan; });
    expect_rejected(a, StatusCode::kParamInvalid, "params[1]: compensation is given",
                    [](Fixture& f) {
                      TensorView c = *f.sgd[2].working;  // 8 bytes of its own
                      c.dtype = kBF16;
                      c.rank = 2;
                      c.shape = {2, 2};
                      c.strides = {2, 1};
                      f.sgd[1].compensation = c;
                      f.adam_d[1].compensation = c;
                      f.adam_w[1].compensation = c;
                      f.sgd[2].working.reset();
                      f.adam_d[2].working.reset();
                      f.adam_w[2].working.reset();
                    });
  }
}

TEST(MultiTensorValidation, CrossParameterAliasing) {
  for (Algo a : kAll) {
    // A written tensor of one parameter inside another parameter's tensor.
    expect_rejected(a, StatusCode::kParamInvalid, "overlaps", [](Fixture& f) {
      f.sgd[1].stat.data = f.sgd[0].parameters.data;
      f.adam_d[1].v.data = f.adam_d[0].var.data;
      f.adam_w[1].v.data = f.adam_w[0].var.data;
    });
    // Another parameter's grad on a written tensor.
    expect_rejected(a, StatusCode::kParamInvalid, "overlaps", [](Fixture& f) {
      f.sgd[2].gradient.data = f.sgd[0].accum.data;
      f.adam_d[2].grad.data = f.adam_d[0].m.data;
      f.adam_w[2].grad.data = f.adam_w[0].m.data;
      f.sgd[2].gradient.dtype = kF32;
      f.adam_d[2].grad.dtype = kF32;
      f.adam_w[2].grad.dtype = kF32;
    });
    // found_inf or grad_scale inside a written tensor.
    expect_rejected(a, StatusCode::kParamInvalid, "found_inf",
                    [](Fixture& f) { f.o.found_inf->data = f.l.params[0].s0.data(); });
    expect_rejected(a, StatusCode::kParamInvalid, "grad_scale", [](Fixture& f) {
      f.o.grad_scale->data = static_cast<float*>(f.l.params[2].var.data()) + 3;
    });
    // Working copies of two parameters overlapping.
    // (The fixture has one working copy: move parameter 0 to master form on param 2's copy.)
    expect_rejected(a, StatusCode::kParamInvalid, "overlaps", [](Fixture& f) {
      f.sgd[0].working = f.sgd[2].working;
      f.adam_d[0].working = f.adam_d[2].working;
      f.adam_w[0].working = f.adam_w[2].working;
    });
  }
}

// Read-only grads may be shared between parameters (one buffer read twice).
TEST(MultiTensorValidation, SharedGradsAreAllowed) {
  for (Algo a : kAll) {
    Fixture f;
    f.sgd[2].gradient = f.sgd[0].gradient;
    f.adam_d[2].grad = f.adam_d[0].grad;
    f.adam_w[2].grad = f.adam_w[0].grad;
    EXPECT_TRUE(f.run(a).ok()) << f.run(a).message();
  }
}

TEST(MultiTensorValidation, SgdAttributes) {
  expect_rejected(Algo::kSgd, StatusCode::kParamInvalid, "nesterov requires dampening 0",
                  [](Fixture& f) {
                    f.h.sgd = {0.1f, 0.9f, 0.1f, 0.0f, true};
                  });
  expect_rejected(Algo::kSgd, StatusCode::kParamInvalid, "weight_decay",
                  [](Fixture& f) { f.h.sgd.weight_decay = -1.0f; });
  expect_rejected(Algo::kSgd, StatusCode::kParamInvalid, "weight_decay", [](Fixture& f) {
    f.h.sgd.weight_decay = std::numeric_limits<float>::quiet_NaN();
  });
}

// The per-parameter declaration mirrors ApplyAdamWV2's: for the rules both have, the single
// operator and the list reject a parameter with the same code and the same message (after the
// operator's name and the parameter index).
TEST(MultiTensorValidation, SameMessagesAsTheSingleOperator) {
  const std::vector<std::function<void(AdamWParamTensors&)>> breaks{
      [](AdamWParamTensors& t) { t.m.dtype = kF16; },
      [](AdamWParamTensors& t) { t.grad.dtype = DType::kInt32; },
      [](AdamWParamTensors& t) { t.grad.shape[0] = 3; },
      [](AdamWParamTensors& t) { t.v.rank = 9; },
      [](AdamWParamTensors& t) { t.grad.data = nullptr; },
      [](AdamWParamTensors& t) { t.v.data = static_cast<float*>(t.m.data) + 1; },
      [](AdamWParamTensors& t) { t.grad.data = t.var.data; },
      [](AdamWParamTensors& t) {
        const int64_t shape[] = {2, 2}, strides[] = {1, 2};
        t.m = TensorView(t.m.data, t.m.dtype, shape, strides);
      },
  };
  for (std::size_t b = 0; b < breaks.size(); ++b) {
    Fixture f;
    f.o = {};
    std::vector<AdamWParamTensors> one{f.adam_w[0]};
    one[0].var.rank = one[0].m.rank = one[0].v.rank = one[0].grad.rank = 2;
    for (TensorView* v : {&one[0].var, &one[0].m, &one[0].v, &one[0].grad}) {
      *v = TensorView(v->data, v->dtype, {2, 2});
    }
    one[0].max_grad_norm.reset();
    breaks[b](one[0]);
    int64_t step = 0;
    const ApplyAdamWV2Tensors single{one[0].var,  one[0].m,
                                     one[0].v,    std::nullopt,
                                     one[0].grad, TensorView(&step, DType::kInt64, {1})};
    const Status want = apply_adam_w_v2_validate(single, {});
    MultiAdamWParams p;
    const Status got = multi_tensor_adam_w_validate(one, p, {});
    ASSERT_FALSE(want.ok()) << "case " << b;
    EXPECT_EQ(got.code(), want.code()) << "case " << b << ": " << got.message();
    std::string tail = want.message().substr(want.message().find(": ") + 2);
    // The list form's rank range is 0..8 (ApplyAdamWV2's 1..8).
    if (const auto at = tail.find("[1, 8]"); at != std::string::npos) tail.replace(at, 6, "[0, 8]");
    EXPECT_EQ(got.message(), "multi_tensor_adam_w: params[0]: " + tail) << "case " << b;
  }
}

// The same for SGD's declaration (dtype, shape, null, contiguity and aliasing rules).
TEST(MultiTensorValidation, SameMessagesAsSgd) {
  const std::vector<std::function<void(SgdParamTensors&)>> breaks{
      [](SgdParamTensors& t) { t.accum.dtype = kF16; },
      [](SgdParamTensors& t) { t.stat.shape[0] = 3; },
      [](SgdParamTensors& t) { t.gradient.data = nullptr; },
      [](SgdParamTensors& t) { t.stat.data = static_cast<float*>(t.accum.data) + 2; },
      [](SgdParamTensors& t) { t.gradient.data = t.stat.data; },
      [](SgdParamTensors& t) {
        const int64_t shape[] = {2, 2}, strides[] = {1, 2};
        t.accum = TensorView(t.accum.data, t.accum.dtype, shape, strides);
      },
  };
  for (std::size_t b = 0; b < breaks.size(); ++b) {
    Fixture f;
    std::vector<SgdParamTensors> one{f.sgd[0]};
    for (TensorView* v : {&one[0].parameters, &one[0].gradient, &one[0].accum, &one[0].stat}) {
      *v = TensorView(v->data, v->dtype, {2, 2});
    }
    breaks[b](one[0]);
    float lr = 0.1f, m = 0.9f;
    const SgdTensors single{
        one[0].parameters, one[0].gradient,           TensorView(&lr, kF32, {1}),
        one[0].accum,      TensorView(&m, kF32, {1}), one[0].stat,
        std::nullopt};
    const Status want = sgd_validate(single, {});
    const Status got = multi_tensor_sgd_validate(one, {0.1f, 0.9f}, {});
    ASSERT_FALSE(want.ok()) << "case " << b;
    EXPECT_EQ(got.code(), want.code()) << "case " << b << ": " << got.message();
    const std::string tail = want.message().substr(want.message().find(": ") + 2);
    EXPECT_EQ(got.message(), "multi_tensor_sgd: params[0]: " + tail) << "case " << b;
  }
}

// A failure late in the list (the last parameter) still writes nothing in the earlier ones.
TEST(MultiTensorValidation, LastParameterBadWritesNothing) {
  for (Algo a : kAll) {
    expect_rejected(a, StatusCode::kParamInvalid, "params[2]", [](Fixture& f) {
      f.sgd[2].accum.shape[0] = 5;
      f.adam_d[2].m.shape[0] = 5;
      f.adam_w[2].m.shape[0] = 5;
    });
  }
}

}  // namespace

}  // namespace mantissa::testing
