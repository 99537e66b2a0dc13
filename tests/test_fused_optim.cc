// FusedAdamw and FusedSgd (CANN's list entries of torch's fused optimizer steps): the bits of an
// independent scalar transcription of each contract on every SIMD target and thread count, CANN's
// grad_scale / found_inf / step rules, validation with nothing written, and the aclnn entries
// (CANN's op_api rules, non-contiguous elements, empty optional lists).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_fused_adamw.h"
#include "aclnnop/aclnn_fused_sgd.h"
#include "mantissa/dtype.h"
#include "mantissa/ops/fused_adamw.h"
#include "mantissa/ops/fused_sgd.h"
#include "multi_tensor_support.h"
#include "op_support.h"
#include "target_support.h"

namespace mantissa::testing {
namespace {

// One parameter of either step: its tensors and its step count.
struct Slot {
  std::vector<int64_t> shape;
  int64_t n = 0;
  Buf param, grad, m, v, vmax;
  // The step tensors' storage: element 0 holds the steps taken (room for CANN's sample's
  // eight-element step tensors).
  int64_t step_i[8] = {};
  float step_f[8] = {};
  TensorView view(Buf& b) { return TensorView(b.data(), b.dtype, std::span<const int64_t>(shape)); }
};

struct List {
  std::vector<Slot> slots;
  std::vector<int64_t> step_shape{1};
  DType step_dtype = DType::kInt64;

  std::vector<uint8_t> snapshot() const {
    std::vector<uint8_t> all;
    for (const Slot& s : slots) {
      for (const Buf* b : {&s.param, &s.grad, &s.m, &s.v, &s.vmax}) {
        all.insert(all.end(), b->bytes.begin(), b->bytes.end());
      }
    }
    return all;
  }
  std::vector<FusedAdamwParamTensors> adamw(bool with_max) {
    std::vector<FusedAdamwParamTensors> out;
    for (Slot& s : slots) {
      void* step =
          step_dtype == DType::kInt64 ? static_cast<void*>(s.step_i) : static_cast<void*>(s.step_f);
      FusedAdamwParamTensors t{
          s.view(s.param), s.view(s.grad),
          s.view(s.m),     s.view(s.v),
          std::nullopt,    TensorView(step, step_dtype, std::span<const int64_t>(step_shape))};
      if (with_max) t.max_exp_avg_sq = s.view(s.vmax);
      out.push_back(t);
    }
    return out;
  }
  std::vector<FusedSgdParamTensors> sgd(bool buffers) {
    std::vector<FusedSgdParamTensors> out;
    for (Slot& s : slots) {
      FusedSgdParamTensors t{s.view(s.param), s.view(s.grad), std::nullopt};
      if (buffers) t.momentum_buffer = s.view(s.m);
      out.push_back(t);
    }
    return out;
  }
};

// Special values put in about one element in ten of every tensor (make_list's `specials`):
// signed zeros and infinities, NaNs with payloads (a signaling one among them), an fp32/bf16
// subnormal and large finite values (overflowing fp16).
float special_value(uint64_t r) {
  static const uint32_t kBits[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FA12345u,
                                   0xFFC00001u, 0x00012345u, 0x477FE000u, 0x7F7F0000u};
  float f;
  std::memcpy(&f, &kBits[r % std::size(kBits)], sizeof f);
  return f;
}

// Every NaN an operator computes is stored as the canonical quiet NaN.
float canonical(float f) { return std::isnan(f) ? std::numeric_limits<float>::quiet_NaN() : f; }

// Sizes: empty, one element, vector tails, a 2-D tensor, several chunks of the parallel grain.
List make_list(DType dtype, uint64_t seed, bool specials = false) {
  static const std::vector<std::vector<int64_t>> kShapes = {
      {0}, {1}, {3}, {17}, {3, 5}, {100}, {4099}, {40000}, {2, 0, 3}, {33}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  List l;
  int64_t k = 0;
  for (const auto& shape : kShapes) {
    Slot s;
    s.shape = shape;
    s.n = 1;
    for (int64_t d : shape) s.n *= d;
    for (Buf* b : {&s.param, &s.grad, &s.m, &s.v, &s.vmax}) b->resize(dtype, s.n);
    for (int64_t i = 0; i < s.n; ++i) {
      s.param.set(i, normal(rng));
      s.grad.set(i, 0.5f * normal(rng));
      s.m.set(i, 0.1f * normal(rng));
      s.v.set(i, 0.01f * std::fabs(normal(rng)));
      s.vmax.set(i, 0.01f * std::fabs(normal(rng)));
      if (!specials) continue;
      for (Buf* b : {&s.param, &s.grad, &s.m, &s.v, &s.vmax}) {
        if (rng() % 10 == 0) b->set(i, special_value(rng()));
      }
    }
    // Steps taken: 0 (the first step), small and large counts, one per parameter.
    static const int64_t kSteps[] = {0, 1, 9, 99, 12345, 3};
    s.step_i[0] = kSteps[k % 6];
    s.step_f[0] = static_cast<float>(s.step_i[0]);
    for (int j = 1; j < 8; ++j) s.step_i[j] = s.step_f[j] = -7;  // never read
    l.slots.push_back(std::move(s));
    ++k;
  }
  return l;
}

// ---- The transcriptions ---------------------------------------------------------------------

// FusedAdamw: t = steps taken (fp32) + 1; ApplyAdamWV2's constants in double, rounded once; the
// documented grouping, every operation one fp32 rounding, the results rounded once to the dtype.
void reference_adamw(List& l, const FusedAdamwParams& h, std::optional<float> inv_scale) {
  for (Slot& s : l.slots) {
    const double taken = l.step_dtype == DType::kInt64
                             ? static_cast<double>(static_cast<float>(s.step_i[0]))
                             : static_cast<double>(s.step_f[0]);
    const double t = taken + 1.0;
    const auto step_size = static_cast<float>(static_cast<double>(h.lr) /
                                              (1.0 - std::pow(static_cast<double>(h.beta1), t)));
    const auto inv_bc2_sqrt =
        static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(static_cast<double>(h.beta2), t)));
    const auto decay =
        static_cast<float>(1.0 - static_cast<double>(h.lr) * static_cast<double>(h.weight_decay));
    const auto omb1 = static_cast<float>(1.0 - static_cast<double>(h.beta1));
    const auto omb2 = static_cast<float>(1.0 - static_cast<double>(h.beta2));
    for (int64_t i = 0; i < s.n; ++i) {
      float g = s.grad.get(i);
      if (inv_scale) g = g * *inv_scale;
      if (h.maximize) g = -g;
      const float var = s.param.get(i), m = s.m.get(i), v = s.v.get(i);
      const float var1 = var * decay;
      const float m_new = m + (g - m) * omb1;
      const float gg = g * g;
      const float v_new = v * h.beta2 + gg * omb2;
      float vmax = v_new;
      if (h.amsgrad) {
        const float old = s.vmax.get(i);
        vmax = (v_new > old || std::isnan(v_new)) ? v_new : old;
        s.vmax.set(i, canonical(vmax));
      }
      const float denom = std::sqrt(vmax) * inv_bc2_sqrt + h.eps;
      const float q = m_new / denom;
      s.param.set(i, canonical(var1 - q * step_size));
      s.m.set(i, canonical(m_new));
      s.v.set(i, canonical(v_new));
    }
  }
}

// FusedSgd, as CANN's kernel runs it (fp32, each line one rounding).
void reference_sgd(List& l, const FusedSgdParams& h, bool buffers, std::optional<float> inv_scale) {
  const float one_minus_dampening = 1.0f - h.dampening;
  for (Slot& s : l.slots) {
    for (int64_t i = 0; i < s.n; ++i) {
      float g = s.grad.get(i);
      if (inv_scale) {
        g = g * *inv_scale;
        s.grad.set(i, canonical(g));
      }
      if (h.maximize) g = -g;
      const float p = s.param.get(i);
      if (h.weight_decay != 0.0f) g = g + h.weight_decay * p;
      if (buffers) {
        float buf = g;
        if (!h.is_first_step) {
          const float a = h.momentum * s.m.get(i);
          const float b = one_minus_dampening * g;
          buf = a + b;
        }
        s.m.set(i, canonical(buf));
        g = h.nesterov ? g + h.momentum * buf : buf;
      }
      s.param.set(i, canonical(p - h.lr * g));
    }
  }
}

const DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// ---- FusedAdamw -----------------------------------------------------------------------------

struct AdamwCase {
  bool amsgrad, maximize, scaled;
  DType step_dtype;
  float weight_decay;
};

TEST(FusedAdamw, MatchesTheTranscriptionOnEveryTargetAndThreadCount) {
  const AdamwCase cases[] = {
      {false, false, false, DType::kInt64, 0.01f},
      {true, true, true, DType::kFloat32, 0.1f},
      {true, false, true, DType::kInt64, 0.0f},
  };
  for (DType dtype : kDtypes) {
    for (const AdamwCase& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " amsgrad " + std::to_string(c.amsgrad) +
                   " maximize " + std::to_string(c.maximize) + " scaled " +
                   std::to_string(c.scaled));
      FusedAdamwParams h;
      h.lr = 0.01f;
      h.weight_decay = c.weight_decay;
      h.amsgrad = c.amsgrad;
      h.maximize = c.maximize;
      Scalar scale;
      if (c.scaled) h.grad_scale = scale.view(DType::kBFloat16, 96.0f);
      List expected = make_list(dtype, 7);
      expected.step_dtype = c.step_dtype;
      reference_adamw(expected, h, c.scaled ? std::optional<float>(1.0f / 96.0f) : std::nullopt);
      for_each_target_and_thread_count([&](const std::string&, int) {
        List l = make_list(dtype, 7);
        l.step_dtype = c.step_dtype;
        ASSERT_TRUE(fused_adamw(l.adamw(c.amsgrad), h).ok());
        const std::vector<uint8_t> got = l.snapshot(), want = expected.snapshot();
        ASSERT_EQ(got.size(), want.size());
        EXPECT_TRUE(got == want);
      });
    }
  }
}

// Special values in every tensor (NaN payloads, infinities, signed zeros, subnormals): IEEE
// propagation, and every computed NaN stored canonical, on every target and thread count. The
// bf16 lists' fast stores (no canonical step where a set's new weights hold no NaN) rest on
// every stored result reaching the new weight; a NaN in any input must still come out canonical
// in every output.
TEST(FusedAdamw, SpecialValuesPropagateAndNaNsAreCanonical) {
  for (DType dtype : kDtypes) {
    for (bool amsgrad : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " amsgrad " + std::to_string(amsgrad));
      FusedAdamwParams h;
      h.lr = 0.01f;
      h.weight_decay = 0.01f;
      h.amsgrad = amsgrad;
      List expected = make_list(dtype, 31, true);
      reference_adamw(expected, h, std::nullopt);
      for_each_target_and_thread_count(
          [&](const std::string&, int) {
            List l = make_list(dtype, 31, true);
            ASSERT_TRUE(fused_adamw(l.adamw(amsgrad), h).ok());
            EXPECT_TRUE(l.snapshot() == expected.snapshot());
          },
          {1, 3});
    }
  }
}

// CANN multiplies by fp32(1 / grad_scale): for a scale whose reciprocal is not exact this differs
// from torch's division in some elements, and the transcription above follows CANN.
TEST(FusedAdamw, GradScaleIsAMultiplicationByItsReciprocal) {
  FusedAdamwParams h;
  Scalar scale;
  h.grad_scale = scale.view(DType::kFloat32, 3.0f);
  List l = make_list(DType::kFloat32, 11), by_reciprocal = make_list(DType::kFloat32, 11),
       by_division = make_list(DType::kFloat32, 11);
  ASSERT_TRUE(fused_adamw(l.adamw(false), h).ok());
  reference_adamw(by_reciprocal, h, 1.0f / 3.0f);
  EXPECT_TRUE(l.snapshot() == by_reciprocal.snapshot());
  // Division: pre-divide the gradients, then run without a scale.
  for (Slot& s : by_division.slots) {
    for (int64_t i = 0; i < s.n; ++i) s.grad.set(i, s.grad.get(i) / 3.0f);
  }
  reference_adamw(by_division, h, std::nullopt);
  int differing = 0;
  for (std::size_t k = 0; k < l.slots.size(); ++k) {
    for (int64_t i = 0; i < l.slots[k].n; ++i) {
      differing += l.slots[k].param.get(i) != by_division.slots[k].param.get(i);
    }
  }
  EXPECT_GT(differing, 0);
}

TEST(FusedAdamw, FoundInfOfOneSkipsTheStepAndAnyOtherValueRunsIt) {
  for (float found : {1.0f, 0.0f, 0.5f, 2.0f, std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::infinity()}) {
    SCOPED_TRACE(found);
    FusedAdamwParams h;
    Scalar flag;
    h.found_inf = flag.view(DType::kFloat32, found);
    List l = make_list(DType::kFloat32, 3), expected = make_list(DType::kFloat32, 3);
    const std::vector<uint8_t> before = l.snapshot();
    ASSERT_TRUE(fused_adamw(l.adamw(false), h).ok());
    if (found == 1.0f) {
      EXPECT_TRUE(l.snapshot() == before);
    } else {
      reference_adamw(expected, h, std::nullopt);
      EXPECT_TRUE(l.snapshot() == expected.snapshot());
    }
  }
}

TEST(FusedAdamw, EmptyOptionalScalarsAreAbsentAndStepTensorsMayHoldMoreThanOneElement) {
  FusedAdamwParams h;
  float none = 0.0f;
  const std::vector<int64_t> empty{0};
  h.grad_scale = TensorView(&none, DType::kFloat32, std::span<const int64_t>(empty));
  h.found_inf = TensorView(&none, DType::kFloat32, std::span<const int64_t>(empty));
  List l = make_list(DType::kFloat32, 5), expected = make_list(DType::kFloat32, 5);
  // CANN's kernel reads element 0 (its own sample passes 8-element step tensors).
  l.step_shape = {2, 2, 2};
  ASSERT_TRUE(fused_adamw(l.adamw(false), h).ok());
  reference_adamw(expected, h, std::nullopt);
  EXPECT_TRUE(l.snapshot() == expected.snapshot());
}

// A 16-bit grad scale need not be aligned (one element is read byte-wise).
TEST(FusedAdamw, AMisalignedSixteenBitGradScaleIsRead) {
  alignas(8) uint8_t bytes[8] = {};
  const uint16_t four = float_to_bf16_bits(4.0f);
  std::memcpy(bytes + 1, &four, sizeof four);
  FusedAdamwParams h;
  h.grad_scale = TensorView(bytes + 1, DType::kBFloat16, {1});
  List l = make_list(DType::kFloat16, 8), expected = make_list(DType::kFloat16, 8);
  ASSERT_TRUE(fused_adamw(l.adamw(false), h).ok());
  reference_adamw(expected, h, 0.25f);
  EXPECT_TRUE(l.snapshot() == expected.snapshot());
}

// Each refused call: the status, a message naming the problem, and nothing written.
void expect_refused_adamw(List& l, bool with_max, const FusedAdamwParams& h, StatusCode code,
                          const std::string& words,
                          std::vector<FusedAdamwParamTensors>* tensors = nullptr) {
  const std::vector<uint8_t> before = l.snapshot();
  std::vector<FusedAdamwParamTensors> t = tensors ? *tensors : l.adamw(with_max);
  const Status s = fused_adamw(t, h);
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_NE(std::string(s.message()).find(words), std::string::npos) << s.message();
  EXPECT_TRUE(l.snapshot() == before);
}

TEST(FusedAdamw, RefusesBadArgumentsAndWritesNothing) {
  List l = make_list(DType::kFloat32, 9);
  FusedAdamwParams h;
  for (float* attr : {&h.lr, &h.beta1, &h.beta2, &h.weight_decay}) {
    FusedAdamwParams bad = h;
    *(attr - &h.lr + &bad.lr) = -0.5f;
    expect_refused_adamw(l, false, bad, StatusCode::kParamInvalid, "must be >= 0");
  }
  FusedAdamwParams ams = h;
  ams.amsgrad = true;
  expect_refused_adamw(l, false, ams, StatusCode::kParamInvalid, "max_exp_avg_sq is required");
  {
    List neg = make_list(DType::kFloat32, 9);
    neg.slots[3].step_i[0] = -1;  // t = 0
    expect_refused_adamw(neg, false, h, StatusCode::kParamInvalid, "params[3]: state_step");
    List nan = make_list(DType::kFloat32, 9);
    nan.step_dtype = DType::kFloat32;
    nan.slots[4].step_f[0] = std::numeric_limits<float>::quiet_NaN();
    expect_refused_adamw(nan, false, h, StatusCode::kParamInvalid, "params[4]: state_step");
  }
  {
    std::vector<FusedAdamwParamTensors> t = l.adamw(false);
    const std::vector<int64_t> empty{0};
    t[2].state_step =
        TensorView(t[2].state_step.data, DType::kInt64, std::span<const int64_t>(empty));
    expect_refused_adamw(l, false, h, StatusCode::kParamInvalid, "state_step is empty", &t);
    t = l.adamw(false);
    t[2].state_step.dtype = DType::kInt32;
    expect_refused_adamw(l, false, h, StatusCode::kParamInvalid, "state_step", &t);
    t = l.adamw(false);
    t[5].grad.dtype = DType::kFloat16;  // a different dtype: refused
    expect_refused_adamw(l, false, h, StatusCode::kParamInvalid, "params[5]", &t);
    t = l.adamw(false);
    const std::vector<int64_t> other{50};
    t[5].exp_avg = TensorView(t[5].exp_avg.data, DType::kFloat32, std::span<const int64_t>(other));
    expect_refused_adamw(l, false, h, StatusCode::kParamInvalid, "params[5]", &t);
    // A written tensor of one parameter overlapping another parameter's tensor.
    t = l.adamw(false);
    t[6].exp_avg.data = static_cast<float*>(t[7].grad.data) + 1;
    expect_refused_adamw(l, false, h, StatusCode::kParamInvalid, "overlaps", &t);
  }
  Scalar bad_scale;
  FusedAdamwParams scaled = h;
  scaled.grad_scale = bad_scale.view(DType::kInt32, 0.0f);
  bad_scale.storage = 4;
  expect_refused_adamw(l, false, scaled, StatusCode::kParamInvalid, "grad_scale");
  FusedAdamwParams flagged = h;
  Scalar bad_flag;
  flagged.found_inf = bad_flag.view(DType::kFloat16, 1.0f);
  expect_refused_adamw(l, false, flagged, StatusCode::kParamInvalid, "found_inf");
}

// ---- FusedSgd -------------------------------------------------------------------------------

struct SgdCase {
  bool buffers, first, nesterov, maximize, scaled;
  float momentum, dampening, weight_decay;
};

TEST(FusedSgd, MatchesTheTranscriptionOnEveryTargetAndThreadCount) {
  const SgdCase cases[] = {
      {false, false, false, false, false, 0.0f, 0.0f, 0.0f},
      {true, true, false, true, true, 0.9f, 0.1f, 0.01f},
      {true, false, false, false, true, 0.9f, 0.25f, 0.0f},
      {true, false, true, false, false, 0.8f, 0.0f, 0.05f},
  };
  for (DType dtype : kDtypes) {
    for (const SgdCase& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " buffers " + std::to_string(c.buffers) +
                   " first " + std::to_string(c.first) + " nesterov " + std::to_string(c.nesterov) +
                   " scaled " + std::to_string(c.scaled));
      FusedSgdParams h;
      h.lr = 0.05f;
      h.momentum = c.momentum;
      h.dampening = c.dampening;
      h.weight_decay = c.weight_decay;
      h.nesterov = c.nesterov;
      h.maximize = c.maximize;
      h.is_first_step = c.first;
      Scalar scale;
      if (c.scaled) h.grad_scale = scale.view(DType::kFloat16, 10.0f);
      List expected = make_list(dtype, 21);
      reference_sgd(expected, h, c.buffers,
                    c.scaled ? std::optional<float>(1.0f / 10.0f) : std::nullopt);
      for_each_target_and_thread_count([&](const std::string&, int) {
        List l = make_list(dtype, 21);
        ASSERT_TRUE(fused_sgd(l.sgd(c.buffers), h).ok());
        EXPECT_TRUE(l.snapshot() == expected.snapshot());
      });
    }
  }
}

// As FusedAdamw's: special values in every tensor, the gradient written back with a grad scale.
TEST(FusedSgd, SpecialValuesPropagateAndNaNsAreCanonical) {
  for (DType dtype : kDtypes) {
    for (bool nesterov : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " nesterov " + std::to_string(nesterov));
      FusedSgdParams h;
      h.lr = 0.05f;
      h.momentum = 0.9f;
      h.weight_decay = 0.01f;
      h.nesterov = nesterov;
      Scalar scale;
      h.grad_scale = scale.view(DType::kFloat32, 8.0f);
      List expected = make_list(dtype, 33, true);
      reference_sgd(expected, h, true, 1.0f / 8.0f);
      for_each_target_and_thread_count(
          [&](const std::string&, int) {
            List l = make_list(dtype, 33, true);
            ASSERT_TRUE(fused_sgd(l.sgd(true), h).ok());
            EXPECT_TRUE(l.snapshot() == expected.snapshot());
          },
          {1, 3});
    }
  }
}

TEST(FusedSgd, WritesTheGradientsOnlyWithAGradScale) {
  FusedSgdParams h;
  h.lr = 0.1f;
  List l = make_list(DType::kBFloat16, 2);
  const List before = l;
  ASSERT_TRUE(fused_sgd(l.sgd(false), h).ok());
  for (std::size_t k = 0; k < l.slots.size(); ++k) {
    EXPECT_TRUE(l.slots[k].grad.bytes == before.slots[k].grad.bytes);
  }
}

void expect_refused_sgd(List& l, bool buffers, const FusedSgdParams& h, StatusCode code,
                        const std::string& words,
                        std::vector<FusedSgdParamTensors>* tensors = nullptr) {
  const std::vector<uint8_t> before = l.snapshot();
  std::vector<FusedSgdParamTensors> t = tensors ? *tensors : l.sgd(buffers);
  const Status s = fused_sgd(t, h);
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_NE(std::string(s.message()).find(words), std::string::npos) << s.message();
  EXPECT_TRUE(l.snapshot() == before);
}

TEST(FusedSgd, RefusesCannsAttributeRulesAndBadTensorsAndWritesNothing) {
  List l = make_list(DType::kFloat32, 4);
  FusedSgdParams h;
  h.momentum = 0.9f;
  for (float FusedSgdParams::*attr :
       {&FusedSgdParams::weight_decay, &FusedSgdParams::momentum, &FusedSgdParams::lr}) {
    FusedSgdParams bad = h;
    bad.*attr = -1.0f;
    expect_refused_sgd(l, true, bad, StatusCode::kParamInvalid, "must be >= 0");
  }
  FusedSgdParams nesterov = h;
  nesterov.nesterov = true;
  nesterov.dampening = 0.5f;
  expect_refused_sgd(l, true, nesterov, StatusCode::kParamInvalid, "nesterov");
  expect_refused_sgd(l, false, h, StatusCode::kParamInvalid, "no momentum buffers");
  FusedSgdParams tiny = h;
  tiny.momentum = 1e-7f;
  expect_refused_sgd(l, true, tiny, StatusCode::kParamInvalid, "at least 1e-6");
  std::vector<FusedSgdParamTensors> t = l.sgd(true);
  t[4].momentum_buffer.reset();
  expect_refused_sgd(l, true, h, StatusCode::kParamInvalid, "params[4]", &t);
  t = l.sgd(true);
  t[3].grad.data = t[2].param.data;  // a gradient on another parameter's weights
  t[3].grad.shape[0] = 1;
  t[3].grad.rank = 1;
  expect_refused_sgd(l, true, h, StatusCode::kParamInvalid, "params[3]", &t);
  // With a grad scale the gradients are written: one may not overlap another.
  FusedSgdParams scaled = h;
  Scalar s;
  scaled.grad_scale = s.view(DType::kFloat32, 2.0f);
  t = l.sgd(true);
  t[6].grad.data = static_cast<float*>(t[7].grad.data) + 2;
  expect_refused_sgd(l, true, scaled, StatusCode::kParamInvalid, "overlaps", &t);
  // Read-only gradients may overlap each other.
  List ro = make_list(DType::kFloat32, 4), ro_expected = make_list(DType::kFloat32, 4);
  t = ro.sgd(true);
  t[1].grad = t[2].grad;
  t[1].grad.shape[0] = 1;
  ro_expected.slots[1].grad.set(0, ro_expected.slots[2].grad.get(0));
  reference_sgd(ro_expected, h, true, std::nullopt);
  ASSERT_TRUE(fused_sgd(t, h).ok());
  for (std::size_t k = 0; k < ro.slots.size(); ++k) {
    EXPECT_TRUE(ro.slots[k].param.bytes == ro_expected.slots[k].param.bytes) << k;
  }
}

// ---- aclnn ----------------------------------------------------------------------------------

struct AclList {
  std::vector<aclTensor*> elements;
  aclTensorList* list = nullptr;
  explicit AclList(std::vector<aclTensor*> e) : elements(std::move(e)) {
    list = aclCreateTensorList(elements.data(), elements.size());
  }
  ~AclList() {
    if (list) aclDestroyTensorList(list);
  }
  AclList(const AclList&) = delete;
  AclList& operator=(const AclList&) = delete;
};

template <class Get>
std::vector<aclTensor*> acl_all(List& l, Get get) {
  std::vector<aclTensor*> out;
  for (Slot& s : l.slots) out.push_back(acl(s.view(get(s))));
  return out;
}

std::vector<aclTensor*> acl_steps(List& l) {
  std::vector<aclTensor*> out;
  for (Slot& s : l.slots) {
    void* step =
        l.step_dtype == DType::kInt64 ? static_cast<void*>(s.step_i) : static_cast<void*>(s.step_f);
    out.push_back(acl(TensorView(step, l.step_dtype, std::span<const int64_t>(l.step_shape))));
  }
  return out;
}

aclnnStatus run_adamw(List& l, bool with_max, double lr, bool amsgrad, aclTensor* scale,
                      aclTensor* found, const aclTensorList* override_max = nullptr,
                      bool pass_max = true) {
  AclList p(acl_all(l, [](Slot& s) -> Buf& { return s.param; }));
  AclList g(acl_all(l, [](Slot& s) -> Buf& { return s.grad; }));
  AclList m(acl_all(l, [](Slot& s) -> Buf& { return s.m; }));
  AclList v(acl_all(l, [](Slot& s) -> Buf& { return s.v; }));
  AclList x(with_max ? acl_all(l, [](Slot& s) -> Buf& { return s.vmax; })
                     : std::vector<aclTensor*>{});
  AclList st(acl_steps(l));
  const aclTensorList* max = override_max ? override_max : (pass_max ? x.list : nullptr);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus s =
      aclnnFusedAdamwGetWorkspaceSize(p.list, g.list, m.list, v.list, max, st.list, scale, found,
                                      lr, 0.9, 0.999, 0.01, 1e-8, amsgrad, false, &size, &executor);
  if (s != ACLNN_SUCCESS) return s;
  std::vector<uint8_t> ws(size);
  return aclnnFusedAdamw(ws.empty() ? nullptr : ws.data(), size, executor, nullptr);
}

TEST(AclnnFusedAdamw, GivesTheCppApisBitsAndCannsStatusCodes) {
  for (DType dtype : kDtypes) {
    List l = make_list(dtype, 13), expected = make_list(dtype, 13);
    FusedAdamwParams h;
    h.lr = 0.001f;
    h.amsgrad = true;
    ASSERT_TRUE(fused_adamw(expected.adamw(true), h).ok());
    ASSERT_EQ(run_adamw(l, true, 0.001, true, nullptr, nullptr), ACLNN_SUCCESS);
    EXPECT_TRUE(l.snapshot() == expected.snapshot()) << dtype_name(dtype);
  }
  // Without amsgrad an empty maxExpAvgSqsRef list is absent, and so is a null one.
  for (bool pass : {true, false}) {
    List l = make_list(DType::kFloat32, 13), expected = make_list(DType::kFloat32, 13);
    FusedAdamwParams h;
    h.lr = 0.001f;
    ASSERT_TRUE(fused_adamw(expected.adamw(false), h).ok());
    ASSERT_EQ(run_adamw(l, false, 0.001, false, nullptr, nullptr, nullptr, pass), ACLNN_SUCCESS);
    EXPECT_TRUE(l.snapshot() == expected.snapshot());
  }
  List l = make_list(DType::kFloat32, 13);
  const std::vector<uint8_t> before = l.snapshot();
  EXPECT_EQ(run_adamw(l, false, -1.0, false, nullptr, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(run_adamw(l, false, 0.1, true, nullptr, nullptr, nullptr, false),
            ACLNN_ERR_PARAM_INVALID);  // amsgrad without maxExpAvgSqsRef
  EXPECT_EQ(run_adamw(l, false, 0.1, true, nullptr, nullptr), ACLNN_ERR_PARAM_INVALID);
  // A foundInf of 1 writes nothing.
  float one = 1.0f;
  aclTensor* found = acl(TensorView(&one, DType::kFloat32, {1}));
  EXPECT_EQ(run_adamw(l, false, 0.1, false, nullptr, found), ACLNN_SUCCESS);
  aclDestroyTensor(found);
  EXPECT_TRUE(l.snapshot() == before);
  // A null list (161001); an empty params list (161002).
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnFusedAdamwGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                            nullptr, nullptr, 0.1, 0.9, 0.999, 0.0, 1e-8, false,
                                            false, &size, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  AclList empty({});
  EXPECT_EQ(aclnnFusedAdamwGetWorkspaceSize(empty.list, empty.list, empty.list, empty.list, nullptr,
                                            empty.list, nullptr, nullptr, 0.1, 0.9, 0.999, 0.0,
                                            1e-8, false, false, &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
}

TEST(AclnnFusedAdamw, RefusesMixedDtypesAndCountsAndMixedStepDtypes) {
  List l = make_list(DType::kFloat32, 13);
  List h16 = make_list(DType::kFloat16, 13);
  std::vector<aclTensor*> pe = acl_all(l, [](Slot& s) -> Buf& { return s.param; });
  aclTensor* odd = pe[1];
  pe[1] = acl(h16.slots[1].view(h16.slots[1].param));  // one FLOAT16 parameter
  aclDestroyTensor(odd);
  AclList p(pe);
  AclList g(acl_all(l, [](Slot& s) -> Buf& { return s.grad; }));
  AclList m(acl_all(l, [](Slot& s) -> Buf& { return s.m; }));
  AclList v(acl_all(l, [](Slot& s) -> Buf& { return s.v; }));
  AclList st(acl_steps(l));
  std::vector<aclTensor*> fewer = acl_all(l, [](Slot& s) -> Buf& { return s.m; });
  aclDestroyTensor(fewer.back());
  fewer.pop_back();
  AclList m_short(fewer);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnFusedAdamwGetWorkspaceSize(p.list, g.list, m.list, v.list, nullptr, st.list,
                                            nullptr, nullptr, 0.1, 0.9, 0.999, 0.0, 1e-8, false,
                                            false, &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
  AclList p_ok(acl_all(l, [](Slot& s) -> Buf& { return s.param; }));
  EXPECT_EQ(aclnnFusedAdamwGetWorkspaceSize(p_ok.list, g.list, m_short.list, v.list, nullptr,
                                            st.list, nullptr, nullptr, 0.1, 0.9, 0.999, 0.0, 1e-8,
                                            false, false, &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
  std::vector<aclTensor*> steps = acl_steps(l);
  float f = 3.0f;
  aclDestroyTensor(steps[2]);
  steps[2] = acl(TensorView(&f, DType::kFloat32, {1}));
  AclList st_mixed(steps);
  EXPECT_EQ(aclnnFusedAdamwGetWorkspaceSize(p_ok.list, g.list, m.list, v.list, nullptr,
                                            st_mixed.list, nullptr, nullptr, 0.1, 0.9, 0.999, 0.0,
                                            1e-8, false, false, &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
}

// A transposed (non-contiguous) parameter and moment: staged through the workspace, the bits of
// the contiguous call, and the caller's strided memory updated.
TEST(AclnnFusedAdamw, NonContiguousElementsAreStagedThroughTheWorkspace) {
  const int64_t rows = 5, cols = 7, n = rows * cols;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal;
  // Row-major [cols, rows] storage read as a [rows, cols] view with strides (1, rows).
  std::vector<float> p(n), g(n), m(n), v(n);
  for (int64_t i = 0; i < n; ++i) {
    p[i] = normal(rng);
    g[i] = normal(rng);
    m[i] = 0.1f * normal(rng);
    v[i] = 0.01f * std::fabs(normal(rng));
  }
  auto transposed = [&](const std::vector<float>& a) {
    std::vector<float> t(n);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) t[r * cols + c] = a[c * rows + r];
    }
    return t;
  };
  std::vector<float> cp = transposed(p), cg = transposed(g), cm = transposed(m), cv = transposed(v);
  int64_t step = 4;
  const std::vector<int64_t> shape{rows, cols}, one{1};
  FusedAdamwParams h;
  h.lr = 0.01f;
  std::vector<FusedAdamwParamTensors> t{
      {TensorView(cp.data(), DType::kFloat32, shape), TensorView(cg.data(), DType::kFloat32, shape),
       TensorView(cm.data(), DType::kFloat32, shape), TensorView(cv.data(), DType::kFloat32, shape),
       std::nullopt, TensorView(&step, DType::kInt64, one)}};
  ASSERT_TRUE(fused_adamw(t, h).ok());
  const std::vector<int64_t> strides{1, rows};
  auto strided = [&](std::vector<float>& a) {
    return acl(TensorView(a.data(), DType::kFloat32, shape), strides);
  };
  AclList pl({strided(p)}), gl({strided(g)}), ml({strided(m)}), vl({strided(v)});
  // A strided three-element step tensor: element 0 is read where it is, nothing staged for it.
  int64_t step_storage[6] = {4, -1, -1, -1, -1, -1};
  const std::vector<int64_t> three{3};
  AclList sl({acl(TensorView(step_storage, DType::kInt64, three), {2}, {6})});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnFusedAdamwGetWorkspaceSize(pl.list, gl.list, ml.list, vl.list, nullptr, sl.list,
                                            nullptr, nullptr, 0.01, 0.9, 0.999, 0.01, 1e-8, false,
                                            false, &size, &executor),
            ACLNN_SUCCESS);
  EXPECT_GE(size, static_cast<uint64_t>(4 * n * 4));
  std::vector<uint8_t> ws(size);
  ASSERT_EQ(aclnnFusedAdamw(ws.data(), size, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_TRUE(transposed(p) == cp);
  EXPECT_TRUE(transposed(m) == cm);
  EXPECT_TRUE(transposed(v) == cv);
  // Two strided elements sharing bytes: refused before anything runs.
  AclList pl2({strided(p)}), ml2({strided(p)});
  EXPECT_EQ(aclnnFusedAdamwGetWorkspaceSize(pl2.list, gl.list, ml2.list, vl.list, nullptr, sl.list,
                                            nullptr, nullptr, 0.01, 0.9, 0.999, 0.01, 1e-8, false,
                                            false, &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
}

aclnnStatus run_sgd(List& l, const aclTensorList* momentum, aclTensor* scale, float m, float lr,
                    bool nesterov, bool first) {
  AclList p(acl_all(l, [](Slot& s) -> Buf& { return s.param; }));
  AclList g(acl_all(l, [](Slot& s) -> Buf& { return s.grad; }));
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus s = aclnnFusedSgdGetWorkspaceSize(p.list, g.list, momentum, scale, 0.01f, m, lr, 0.0f,
                                                nesterov, false, first, &size, &executor);
  if (s != ACLNN_SUCCESS) return s;
  std::vector<uint8_t> ws(size);
  return aclnnFusedSgd(ws.empty() ? nullptr : ws.data(), size, executor, nullptr);
}

TEST(AclnnFusedSgd, GivesTheCppApisBitsAndCannsRules) {
  for (DType dtype : kDtypes) {
    List l = make_list(dtype, 17), expected = make_list(dtype, 17);
    FusedSgdParams h;
    h.weight_decay = 0.01f;
    h.momentum = 0.9f;
    h.lr = 0.1f;
    h.nesterov = true;
    Scalar sc;
    h.grad_scale = sc.view(DType::kFloat32, 4.0f);
    ASSERT_TRUE(fused_sgd(expected.sgd(true), h).ok());
    AclList mom(acl_all(l, [](Slot& s) -> Buf& { return s.m; }));
    float four = 4.0f;
    aclTensor* scale = acl(TensorView(&four, DType::kFloat32, {1}));
    ASSERT_EQ(run_sgd(l, mom.list, scale, 0.9f, 0.1f, true, false), ACLNN_SUCCESS);
    aclDestroyTensor(scale);
    EXPECT_TRUE(l.snapshot() == expected.snapshot()) << dtype_name(dtype);
  }
  // An empty momentum list is absent: momentum must then be 0.
  List l = make_list(DType::kFloat32, 17), expected = make_list(DType::kFloat32, 17);
  FusedSgdParams h;
  h.weight_decay = 0.01f;
  h.lr = 0.1f;
  ASSERT_TRUE(fused_sgd(expected.sgd(false), h).ok());
  AclList none({});
  ASSERT_EQ(run_sgd(l, none.list, nullptr, 0.0f, 0.1f, false, false), ACLNN_SUCCESS);
  EXPECT_TRUE(l.snapshot() == expected.snapshot());
  const std::vector<uint8_t> before = l.snapshot();
  EXPECT_EQ(run_sgd(l, none.list, nullptr, 0.9f, 0.1f, false, false), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(run_sgd(l, nullptr, nullptr, 0.0f, -0.1f, false, false), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(run_sgd(l, nullptr, nullptr, 0.0f, 0.1f, true, false), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(l.snapshot() == before);
  // An empty params list does nothing, whatever else is passed (CANN returns before its checks).
  AclList empty({});
  uint64_t size = 1;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnFusedSgdGetWorkspaceSize(empty.list, nullptr, nullptr, nullptr, -1.0f, 0.5f, 0.1f,
                                          0.0f, false, false, false, &size, &executor),
            ACLNN_SUCCESS);
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(aclnnFusedSgd(nullptr, 0, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnFusedSgdGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, 0.0f, 0.0f, 0.1f,
                                          0.0f, false, false, false, &size, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
}

}  // namespace
}  // namespace mantissa::testing
