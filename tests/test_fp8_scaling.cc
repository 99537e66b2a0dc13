// FP8 scaling recipes: a delayed-scaling trajectory over injected amax sequences (0, NaN, inf,
// subnormal, micro-batches) against a reference written here from the rule (a log of every
// step's amax and a window over it, not a rolled buffer); the first step's scale 1; quantize()
// recording what QuantMax returns; resume from state() to the same bits; state and recipe
// validation; current scaling's rule and its cast.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "mantissa/amp/fp8_scaling.h"
#include "mantissa/ops/dynamic_mx_quant.h"
#include "mantissa/ops/quant_max.h"
#include "op_support.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::amp::AmaxComputeAlgo;
using mantissa::amp::DelayedScaling;
using mantissa::amp::DelayedScalingRecipe;
using mantissa::amp::Fp8Format;
using mantissa::amp::Fp8Role;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::filled;
using mt::sentinel;
using mt::untouched;
using mt::view;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The rule, written from its statement: the amax of step t is the max of what was recorded in
// steps t-len+1..t (a step that recorded nothing counts 0; NaN wins), or step t's own for
// most_recent; the scale moves only for a finite amax > 0.
struct Reference {
  DelayedScalingRecipe r;
  float fmax;
  std::vector<float> log;  // each finished step's amax
  float current = 0.0f;
  float scale = 1.0f;

  void record(float a) {
    current = (std::isnan(a) || std::isnan(current)) ? kNaN : std::max(current, a);
  }
  void update() {
    log.push_back(current);
    current = 0.0f;
    float amax = log.back();
    if (r.amax_compute_algo == AmaxComputeAlgo::kMax) {
      const std::size_t n = log.size(), len = static_cast<std::size_t>(r.amax_history_len);
      for (std::size_t k = n > len ? n - len : 0; k < n; ++k) {
        amax = (std::isnan(amax) || std::isnan(log[k])) ? kNaN : std::max(amax, log[k]);
      }
    }
    if (std::isfinite(amax) && amax > 0.0f) {
      const auto numerator = static_cast<float>(fmax * std::pow(2.0, -r.margin));
      float s = numerator / amax;
      scale = std::isinf(s) ? std::numeric_limits<float>::max() : s;
    }
  }
};

TEST(DelayedScaling, TrajectoryMatchesTheReference) {
  // Per step, the amaxes recorded (several: micro-batches).
  const std::vector<std::vector<float>> steps{
      {3.0f},         {0.5f, 7.0f}, {},      {2.0f},      {0.0f},  {1e-40f}, {kInf},
      {4.0f},         {kNaN},       {1.25f}, {9.0f},      {0.25f}, {0.75f},  {1e30f},
      {0.001f, 0.2f}, {5.0f},       {5.0f},  {1e-3f},     {2.5f},  {0.0f},   {3.5f},
      {6.0f},         {0.125f},     {8.0f},  {7.0f, 1.0f}};
  for (int64_t len : {1, 3, 4, 16}) {
    for (AmaxComputeAlgo algo : {AmaxComputeAlgo::kMax, AmaxComputeAlgo::kMostRecent}) {
      for (int32_t margin : {0, 2, -1}) {
        for (Fp8Role role : {Fp8Role::kForward, Fp8Role::kGradient}) {
          SCOPED_TRACE("len " + std::to_string(len) + " algo " +
                       std::to_string(static_cast<int>(algo)) + " margin " +
                       std::to_string(margin) + " role " + std::to_string(static_cast<int>(role)));
          const DelayedScalingRecipe recipe{.fp8_format = Fp8Format::kHybrid,
                                            .amax_history_len = len,
                                            .amax_compute_algo = algo,
                                            .margin = margin};
          DelayedScaling s;
          ASSERT_TRUE(DelayedScaling::create(recipe, role, &s).ok());
          EXPECT_EQ(s.dtype(),
                    role == Fp8Role::kGradient ? DType::kFloat8E5M2 : DType::kFloat8E4M3FN);
          Reference ref{recipe, mantissa::amp::fp8_max(s.dtype()), {}, 0.0f, 1.0f};
          EXPECT_EQ(s.scale(), 1.0f);  // the first step's
          for (std::size_t t = 0; t < steps.size(); ++t) {
            for (float a : steps[t]) s.record(a), ref.record(a);
            s.update();
            ref.update();
            ASSERT_EQ(std::bit_cast<uint32_t>(s.scale()), std::bit_cast<uint32_t>(ref.scale))
                << "step " << t << ": " << s.scale() << " against " << ref.scale;
            ASSERT_EQ(s.steps(), static_cast<int64_t>(t + 1));
            // The history holds the last len steps' amaxes (entry 0: the next step's, zero).
            const auto h = s.amax_history();
            ASSERT_EQ(h.size(), static_cast<std::size_t>(len));
            EXPECT_EQ(h[0], 0.0f);
          }
        }
      }
    }
  }
}

TEST(DelayedScaling, WorkedValues) {
  DelayedScaling s;
  ASSERT_TRUE(DelayedScaling::create({.fp8_format = Fp8Format::kE4M3,
                                      .amax_history_len = 2,
                                      .amax_compute_algo = AmaxComputeAlgo::kMax,
                                      .margin = 1},
                                     Fp8Role::kGradient, &s)
                  .ok());
  EXPECT_EQ(s.dtype(), DType::kFloat8E4M3FN);  // E4M3 for gradients too
  s.record(7.0f);
  s.update();
  EXPECT_EQ(s.scale(), 32.0f);  // (448 * 2^-1) / 7
  EXPECT_EQ(s.scale_inv(), 1.0f / 32.0f);
  s.record(14.0f);
  s.update();
  EXPECT_EQ(s.scale(), 16.0f);  // max(7, 14)
  s.record(1.0f);
  s.update();
  EXPECT_EQ(s.scale(), 16.0f);  // the window: 14 and 1
  s.record(1.0f);
  s.update();
  EXPECT_EQ(s.scale(), 224.0f);  // 1 and 1
  s.record(kNaN);
  s.update();
  EXPECT_EQ(s.scale(), 224.0f);  // NaN: kept
  s.record(2.0f);
  s.update();
  EXPECT_EQ(s.scale(), 224.0f);  // NaN still in the window
  s.record(2.0f);
  s.update();
  EXPECT_EQ(s.scale(), 112.0f);
}

// The spec's grouping (fp8_max * 2^-margin) / amax: with margin 2 and amax 1e-36, 448 / amax
// would overflow (Transformer Engine's (448 / amax) / 4 gives FLT_MAX) but 112 / amax does not.
TEST(DelayedScaling, TheMarginScalesTheNumerator) {
  DelayedScaling s;
  ASSERT_TRUE(
      DelayedScaling::create({.fp8_format = Fp8Format::kE4M3, .amax_history_len = 1, .margin = 2},
                             Fp8Role::kForward, &s)
          .ok());
  s.record(1e-36f);
  s.update();
  EXPECT_EQ(s.scale(), 112.0f / 1e-36f);
  EXPECT_TRUE(std::isfinite(448.0f / 1e-36f) == false);
}

// quantize() casts with the scale of the steps before (1 at first) and records max |x|.
TEST(DelayedScaling, QuantizeCastsWithTheScaleAndRecordsTheAmax) {
  DelayedScaling s;
  ASSERT_TRUE(DelayedScaling::create({.amax_history_len = 4}, Fp8Role::kForward, &s).ok());
  for (int step = 0; step < 4; ++step) {
    HostTensor x = filled(DType::kBFloat16, {5, 33}, 0.0, 3.0 + step, 10 + step);
    HostTensor y = sentinel(DType::kFloat8E4M3FN, {5, 33});
    HostTensor yref = sentinel(DType::kFloat8E4M3FN, {5, 33}),
               aref = sentinel(DType::kBFloat16, {1});
    float scale = s.scale();
    HostTensor sc(DType::kFloat32, {1});
    sc.set_bits(0, std::bit_cast<uint32_t>(scale));
    ASSERT_TRUE(
        mantissa::quant_max({.x = view(x), .scale = view(sc), .y = view(yref), .amax = view(aref)},
                            {.dst_type = DType::kFloat8E4M3FN})
            .ok());
    ASSERT_TRUE(s.quantize(view(x), view(y)).ok());
    mt::expect_same_bits(y, yref, "y");
    EXPECT_EQ(s.amax_history()[0], static_cast<float>(aref.value(0)));
    s.update();
    if (step == 0) {
      EXPECT_EQ(scale, 1.0f);
    }
  }
  // A y of the other FP8 dtype is refused, nothing written or recorded.
  HostTensor x = filled(DType::kFloat32, {8}, 0.0, 1.0, 3);
  HostTensor y5 = sentinel(DType::kFloat8E5M2, {8});
  const Status st = s.quantize(view(x), view(y5));
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(y5));
  EXPECT_EQ(s.amax_history()[0], 0.0f);
}

// A run checkpointed at step k and resumed from state() casts and scales exactly as the
// uninterrupted run.
TEST(DelayedScaling, ResumeFromStateGivesTheSameBits) {
  const DelayedScalingRecipe recipe{.amax_history_len = 5, .margin = 1};
  auto run = [&](int stop_at, std::string* saved, const std::string* resume_from) {
    DelayedScaling s;
    EXPECT_TRUE(DelayedScaling::create(recipe, Fp8Role::kGradient, &s).ok());
    std::vector<uint8_t> ys;
    for (int step = 0; step < 12; ++step) {
      if (resume_from != nullptr && step == stop_at) {
        DelayedScaling fresh;
        EXPECT_TRUE(fresh.load_state(*resume_from).ok());
        s = fresh;
      }
      HostTensor x = filled(DType::kFloat16, {64}, 0.0, 1.0 + 3 * (step % 4), 100 + step);
      if (step == 6) x.set_bits(3, 0x7E00);  // a NaN amax in the history
      HostTensor y = sentinel(DType::kFloat8E5M2, {64});
      EXPECT_TRUE(s.quantize(view(x), view(y)).ok());
      ys.insert(ys.end(), y.bytes.begin(), y.bytes.end());
      s.update();
      if (saved != nullptr && step + 1 == stop_at) *saved = s.state();
    }
    ys.push_back(0);
    const float sc = s.scale();
    const auto* p = reinterpret_cast<const uint8_t*>(&sc);
    ys.insert(ys.end(), p, p + 4);
    return ys;
  };
  const std::vector<uint8_t> whole = run(-1, nullptr, nullptr);
  for (int k : {1, 7, 9}) {
    std::string state;
    run(k, &state, nullptr);
    EXPECT_EQ(run(k, nullptr, &state), whole) << "resumed at step " << k;
  }
}

TEST(DelayedScaling, StateAndRecipeValidation) {
  DelayedScaling s;
  for (const DelayedScalingRecipe& bad :
       {DelayedScalingRecipe{.amax_history_len = 0}, DelayedScalingRecipe{.margin = 128},
        DelayedScalingRecipe{.fp8_format = static_cast<Fp8Format>(2)},
        DelayedScalingRecipe{.amax_compute_algo = static_cast<AmaxComputeAlgo>(5)}}) {
    EXPECT_EQ(DelayedScaling::create(bad, Fp8Role::kForward, &s).code(), StatusCode::kParamInvalid);
  }
  ASSERT_TRUE(DelayedScaling::create({.amax_history_len = 2}, Fp8Role::kForward, &s).ok());
  s.record(3.0f);
  s.update();
  const std::string good = s.state();
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  const std::vector<std::string> bad{
      "not json",
      "[]",
      replaced("mantissa.fp8_delayed_scaling", "mantissa.other"),
      replaced("\"version\": 1", "\"version\": 2"),
      replaced("\"margin\": 0", "\"margin\": 300"),
      replaced("\"amax_history_len\": 2", "\"amax_history_len\": 3"),
      replaced("\"scale_bits\": " + std::to_string(std::bit_cast<uint32_t>(s.scale())),
               "\"scale_bits\": 0"),
      replaced("\"scale_bits\": " + std::to_string(std::bit_cast<uint32_t>(s.scale())),
               "\"scale_bits\": 2139095040"),  // +inf
      replaced("\"steps\": 1", "\"steps\": -1"),
  };
  for (const std::string& text : bad) {
    DelayedScaling t = s;
    const Status st = t.load_state(text);
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid) << text;
    EXPECT_EQ(t.state(), good) << "a refused state changed the scaling";
  }
  DelayedScaling u;
  ASSERT_TRUE(u.load_state(good).ok());
  EXPECT_EQ(u.state(), good);
}

TEST(CurrentScaling, TheRule) {
  using mantissa::amp::current_scale;
  const DType e4 = DType::kFloat8E4M3FN, e5 = DType::kFloat8E5M2;
  EXPECT_EQ(current_scale(1.0f, e4), 448.0f);
  EXPECT_EQ(current_scale(1.0f, e5), 57344.0f);
  EXPECT_EQ(current_scale(7.0f, e4), 64.0f);
  EXPECT_EQ(current_scale(3.0f, e4), 448.0f / 3.0f);
  EXPECT_EQ(current_scale(3.0f, e4, {.power_of_two_scales = true}), 128.0f);  // 149.33 down
  EXPECT_EQ(current_scale(0.0f, e4), 1.0f);
  EXPECT_EQ(current_scale(kInf, e4), 1.0f);
  EXPECT_EQ(current_scale(kNaN, e4), 1.0f);
  EXPECT_EQ(current_scale(1e-45f, e4), std::numeric_limits<float>::max());  // overflows
  EXPECT_EQ(current_scale(1e-45f, e4, {.power_of_two_scales = true}), 0x1p127f);
  EXPECT_EQ(current_scale(1e-10f, e4, {.amax_epsilon = 1e-3f}), 448.0f / 1e-3f);
  EXPECT_EQ(current_scale(0.0f, e4, {.amax_epsilon = 0.5f}), 896.0f);
  EXPECT_EQ(mantissa::amp::fp8_max(DType::kFloat32), 0.0f);
}

TEST(CurrentScaling, QuantizeCastsWithItsOwnAmax) {
  for (DType xd : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (DType yd : {DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
      HostTensor x = filled(xd, {3, 50}, 0.0, 5.0, 21);
      HostTensor y = sentinel(yd, {3, 50}), yref = sentinel(yd, {3, 50});
      float scale = 0.0f, amax = 0.0f;
      ASSERT_TRUE(mantissa::amp::current_scaling_quantize(
                      view(x), view(y), {.power_of_two_scales = true}, &scale, &amax)
                      .ok());
      double m = 0.0;
      ASSERT_TRUE(mantissa::max_abs(view(x), &m).ok());
      EXPECT_EQ(amax, static_cast<float>(m));
      EXPECT_EQ(scale, mantissa::amp::current_scale(amax, yd, {.power_of_two_scales = true}));
      HostTensor sc(DType::kFloat32, {1}), aref = sentinel(xd, {1});
      sc.set_bits(0, std::bit_cast<uint32_t>(scale));
      ASSERT_TRUE(mantissa::quant_max(
                      {.x = view(x), .scale = view(sc), .y = view(yref), .amax = view(aref)},
                      {.dst_type = yd})
                      .ok());
      mt::expect_same_bits(y, yref, "y");
    }
  }
  // Refused before anything is written: y of another shape; a negative epsilon.
  HostTensor x = filled(DType::kFloat32, {8}, 0.0, 1.0, 3);
  HostTensor y = sentinel(DType::kFloat8E4M3FN, {4});
  float scale = -1.0f, amax = -1.0f;
  EXPECT_EQ(mantissa::amp::current_scaling_quantize(view(x), view(y), {}, &scale, &amax).code(),
            StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(y));
  EXPECT_EQ(scale, -1.0f);
  HostTensor y8 = sentinel(DType::kFloat8E4M3FN, {8});
  EXPECT_EQ(mantissa::amp::current_scaling_quantize(view(x), view(y8), {.amax_epsilon = -1.0f},
                                                    &scale, &amax)
                .code(),
            StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(y8));
}

// ---- Emulated FP8 matrix products ------------------------------------------------------------

// Random finite codes of an FP8 format (NaN codes skipped).
HostTensor fp8_codes(DType d, std::vector<int64_t> shape, uint32_t seed) {
  HostTensor h(d, std::move(shape));
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < h.numel(); ++i) {
    uint32_t c = 0;
    do {
      x = x * 1664525u + 1013904223u;
      c = (x >> 24) & 0xFF;
    } while (std::isnan(mantissa::precision::decode_fp8(c, d)) ||
             std::isinf(mantissa::precision::decode_fp8(c, d)));
    h.set_bits(i, c);
  }
  return h;
}

// out = (A @ B) * alpha against a reference in double: the products of FP8 values are exact in
// fp32, so only the k - 1 fp32 additions round: |error| <= (k - 1) * 2^-24 * sum |a b| * alpha,
// plus half an ulp of the result. Both layouts of B, both formats, every target and thread count
// giving the same bits.
TEST(Fp8Matmul, MatchesADoubleReferenceAndIsTheSameEverywhere) {
  const int64_t m = 5, k = 70, n = 9;
  for (DType d : {DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    HostTensor a = fp8_codes(d, {m, k}, 1), b = fp8_codes(d, {k, n}, 2), bt(d, {n, k});
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = 0; j < n; ++j) bt.set_bits(j * k + i, b.bits(i * n + j));
    }
    const float sa = 0.375f, sb = 1.0f / 64.0f;
    HostTensor ref(DType::kFloat32, {m, n});
    ASSERT_TRUE(mantissa::amp::fp8_matmul({view(a), sa}, {view(b), sb}, view(ref)).ok());
    const double alpha = static_cast<double>(sa * sb);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0, mag = 0.0;
        for (int64_t q = 0; q < k; ++q) {
          const double p = a.value(i * k + q) * b.value(q * n + j);
          sum += p;
          mag += std::fabs(p);
        }
        const double got = ref.value(i * n + j);
        const double bound = ((k - 1) * 0x1p-24 * mag + 0x1p-24 * std::fabs(sum)) * alpha;
        EXPECT_LE(std::fabs(got - sum * alpha), bound) << i << "," << j;
      }
    }
    mt::for_each_target_and_thread_count([&](const std::string&, int) {
      HostTensor out = sentinel(DType::kFloat32, {m, n}), out_t = sentinel(DType::kFloat32, {m, n});
      ASSERT_TRUE(mantissa::amp::fp8_matmul({view(a), sa}, {view(b), sb}, view(out)).ok());
      ASSERT_TRUE(mantissa::amp::fp8_matmul({view(a), sa}, {view(bt), sb}, view(out_t), true).ok());
      mt::expect_same_bits(out, ref, "out");
      mt::expect_same_bits(out_t, ref, "out (B transposed)");
    });
    // bf16 output: the fp32 result rounded once.
    HostTensor o16 = sentinel(DType::kBFloat16, {m, n});
    ASSERT_TRUE(mantissa::amp::fp8_matmul({view(a), sa}, {view(b), sb}, view(o16)).ok());
    for (int64_t i = 0; i < m * n; ++i) {
      EXPECT_EQ(o16.bits(i), mantissa::precision::round_to_bits(ref.value(i), DType::kBFloat16));
    }
  }
}

// MX operands quantized along k (DynamicMxQuant, cuBLAS rule) multiply as their exact
// dequantized values do (a reference in double with the accumulation bound), and stay close to
// the unquantized product (the FP8 error).
TEST(MxMatmul, DequantizesExactlyAndMultiplies) {
  const int64_t m = 6, k = 100, n = 7;
  HostTensor xa = filled(DType::kFloat32, {m, k}, 0.0, 1.0, 31),
             xb = filled(DType::kFloat32, {n, k}, 0.0, 1.0, 32);
  HostTensor qa = sentinel(DType::kFloat8E4M3FN, {m, k}),
             sa = sentinel(DType::kFloat8E8M0, {m, 2, 2});
  HostTensor qb = sentinel(DType::kFloat8E4M3FN, {n, k}),
             sb = sentinel(DType::kFloat8E8M0, {n, 2, 2});
  ASSERT_TRUE(mantissa::dynamic_mx_quant({view(xa), view(qa), view(sa)}, {.scale_alg = 1}).ok());
  ASSERT_TRUE(mantissa::dynamic_mx_quant({view(xb), view(qb), view(sb)}, {.scale_alg = 1}).ok());
  auto value = [&](const HostTensor& q, const HostTensor& s, int64_t r, int64_t c) {
    const int64_t blk = c / 32;
    const uint32_t code = s.bits((r * 2 + blk / 2) * 2 + blk % 2);
    return q.value(r * k + c) * std::ldexp(1.0, static_cast<int>(code) - 127);
  };
  HostTensor out(DType::kFloat32, {m, n});
  ASSERT_TRUE(mantissa::amp::mx_matmul({view(qa), view(sa)}, {view(qb), view(sb)}, view(out)).ok());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, mag = 0.0, exact = 0.0;
      for (int64_t c = 0; c < k; ++c) {
        const double p = value(qa, sa, i, c) * value(qb, sb, j, c);
        sum += p;
        mag += std::fabs(p);
        exact += xa.value(i * k + c) * xb.value(j * k + c);
      }
      const double got = out.value(i * n + j);
      EXPECT_LE(std::fabs(got - sum), (k - 1) * 0x1p-24 * mag + 0x1p-24 * std::fabs(sum));
      // E4M3's relative step is 2^-3: each product within about 2 * 2^-4 of the exact one.
      EXPECT_LE(std::fabs(got - exact), 0.15 * mag + 1e-6) << i << "," << j;
    }
  }
  mt::for_each_target_and_thread_count(
      [&](const std::string&, int) {
        HostTensor o = sentinel(DType::kFloat32, {m, n});
        ASSERT_TRUE(
            mantissa::amp::mx_matmul({view(qa), view(sa)}, {view(qb), view(sb)}, view(o)).ok());
        mt::expect_same_bits(o, out, "out");
      },
      {1, 3});
}

// MXFP4: FLOAT4_E2M1 operands from DynamicMxQuant, dequantized exactly and multiplied.
TEST(MxMatmul, Fp4Operands) {
  const int64_t m = 5, k = 64, n = 3;
  HostTensor xa = filled(DType::kBFloat16, {m, k}, 0.0, 1.0, 41),
             xb = filled(DType::kBFloat16, {n, k}, 0.0, 1.0, 42);
  HostTensor qa = sentinel(DType::kFloat4E2M1, {m, k}),
             sa = sentinel(DType::kFloat8E8M0, {m, 1, 2});
  HostTensor qb = sentinel(DType::kFloat4E2M1, {n, k}),
             sb = sentinel(DType::kFloat8E8M0, {n, 1, 2});
  ASSERT_TRUE(
      mantissa::dynamic_mx_quant({view(xa), view(qa), view(sa)}, {.dst_type = DType::kFloat4E2M1})
          .ok());
  ASSERT_TRUE(
      mantissa::dynamic_mx_quant({view(xb), view(qb), view(sb)}, {.dst_type = DType::kFloat4E2M1})
          .ok());
  HostTensor out(DType::kFloat32, {m, n});
  ASSERT_TRUE(mantissa::amp::mx_matmul({view(qa), view(sa)}, {view(qb), view(sb)}, view(out)).ok());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, mag = 0.0;
      for (int64_t c = 0; c < k; ++c) {
        const double fa = std::ldexp(1.0, static_cast<int>(sa.bits(i * 2 + c / 32)) - 127);
        const double fb = std::ldexp(1.0, static_cast<int>(sb.bits(j * 2 + c / 32)) - 127);
        const double p = qa.value(i * k + c) * fa * qb.value(j * k + c) * fb;
        sum += p;
        mag += std::fabs(p);
      }
      EXPECT_LE(std::fabs(out.value(i * n + j) - sum), (k - 1) * 0x1p-24 * mag) << i << "," << j;
    }
  }
}

// ---- MX scale rules (mx_quantize_blocks) ------------------------------------------------------

// floor and rceil are DynamicMxQuant's scale algorithms (0; 1 for FP8, 2 for FP4), byte for byte.
// EVEN against the rule transcribed with the kit's own FP8 and FP4 rounding: worked block codes
// (a significand that rounds up to the next binade in the element's mantissa bits, and one that
// does not), zero and NaN blocks, a partial last block, and the same bits on every target and
// thread count.
TEST(MxScaleRules, FloorAndRceilAreDynamicMxQuantAndEvenIsTorchaosRule) {
  ThreadCountGuard guard;
  const int64_t rows = 6, k = 80;  // 3 blocks per row: the last partial, the pair padded
  for (DType d : {DType::kFloat8E4M3FN, DType::kFloat8E5M2, DType::kFloat4E2M1}) {
    SCOPED_TRACE(dtype_name(d));
    const bool fp4 = d == DType::kFloat4E2M1;
    const int mbits = d == DType::kFloat8E4M3FN ? 3 : d == DType::kFloat8E5M2 ? 2 : 1;
    const int emax = d == DType::kFloat8E4M3FN ? 8 : d == DType::kFloat8E5M2 ? 15 : 2;
    HostTensor x = filled(DType::kFloat32, {rows, k}, 0.0, 1.0, 7);
    // Row 0's blocks: amax with the significand just at and just below the rounding point of
    // EVEN (1 + (2^mbits - 1/2) / 2^mbits: 1.9375 E4M3, 1.875 E5M2, 1.75 E2M1), then a zero
    // block; row 1 holds a NaN in its first block.
    const double top = 1.0 + (std::ldexp(1.0, mbits) - 0.5) / std::ldexp(1.0, mbits);
    for (int64_t j = 0; j < k; ++j) {
      const double v = j < 32 ? (j == 5 ? top : 0.5) : j < 64 ? (j == 40 ? top * 0.99 : 0.5) : 0.0;
      x.set_bits(j, precision::round_to_bits(v, DType::kFloat32));
    }
    x.set_bits(k + 3, precision::quiet_nan_bits(DType::kFloat32, false));
    for (mantissa::amp::MxScaleRule rule :
         {mantissa::amp::MxScaleRule::kFloor, mantissa::amp::MxScaleRule::kRceil,
          mantissa::amp::MxScaleRule::kEven}) {
      SCOPED_TRACE(mantissa::amp::mx_scale_rule_name(rule));
      HostTensor q = sentinel(d, {rows, k}), s = sentinel(DType::kFloat8E8M0, {rows, 2, 2});
      ASSERT_TRUE(mantissa::amp::mx_quantize_blocks(view(x), {view(q), view(s)}, rule).ok());
      for_each_target([&](const std::string&) {
        for (int threads : {1, 3}) {
          ASSERT_TRUE(set_num_threads(threads).ok());
          HostTensor q2 = sentinel(d, {rows, k}), s2 = sentinel(DType::kFloat8E8M0, {rows, 2, 2});
          ASSERT_TRUE(mantissa::amp::mx_quantize_blocks(view(x), {view(q2), view(s2)}, rule).ok());
          EXPECT_EQ(q2.bytes, q.bytes);
          EXPECT_EQ(s2.bytes, s.bytes);
        }
      });
      if (rule != mantissa::amp::MxScaleRule::kEven) {
        HostTensor q2 = sentinel(d, {rows, k}), s2 = sentinel(DType::kFloat8E8M0, {rows, 2, 2});
        mantissa::DynamicMxQuantParams p;
        p.dst_type = d;
        p.scale_alg = rule == mantissa::amp::MxScaleRule::kFloor ? 0 : fp4 ? 2 : 1;
        ASSERT_TRUE(mantissa::dynamic_mx_quant({view(x), view(q2), view(s2)}, p).ok());
        EXPECT_EQ(q2.bytes, q.bytes);
        EXPECT_EQ(s2.bytes, s.bytes);
        continue;
      }
      // Worked codes: the significand at the rounding point moves to the next binade.
      EXPECT_EQ(s.bits(0), static_cast<uint32_t>(128 - emax));  // top: 2^1 after rounding
      EXPECT_EQ(s.bits(1), static_cast<uint32_t>(127 - emax));  // top * 0.99 stays in 2^0
      EXPECT_EQ(s.bits(2), 0u);                                 // the zero block
      EXPECT_EQ(s.bits(3), 0u);                                 // the pad
      EXPECT_EQ(s.bits(4), 0xFFu);                              // the NaN block
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < k; ++j) {
          const int64_t i = r * k + j;
          const uint32_t code = s.bits(r * 4 + j / 32);
          uint32_t want = 0;
          if (code == 0xFF) {
            want = fp4 ? 0u : precision::round_to_fp8_saturating(NAN, d);
          } else {
            const float v =
                static_cast<float>(x.value(i)) * std::ldexp(1.0f, 127 - static_cast<int>(code));
            want =
                fp4 ? precision::round_to_fp4(v, d, 0) : precision::round_to_fp8_saturating(v, d);
          }
          ASSERT_EQ(q.bits(i), want) << "element " << i << " code " << code;
        }
        // And every other block's code by the rule, from its amax.
        for (int64_t b = 0; b < 3 && r > 1; ++b) {
          float amax = 0.0f;
          for (int64_t j = b * 32; j < std::min<int64_t>(k, b * 32 + 32); ++j)
            amax = std::max(amax, std::fabs(static_cast<float>(x.value(r * k + j))));
          const uint32_t bits =
              (std::bit_cast<uint32_t>(amax) + (1u << (22 - mbits))) & 0x7F800000u;
          const int want = std::clamp(static_cast<int>(bits >> 23) - emax, 0, 254);
          EXPECT_EQ(s.bits(r * 4 + b), static_cast<uint32_t>(want)) << r << "," << b;
        }
      }
    }
  }
  // Validation: nothing written.
  HostTensor x(DType::kFloat32, {2, 32}), q = sentinel(DType::kFloat8E4M3FN, {2, 32}),
                                          bad = sentinel(DType::kFloat8E8M0, {2, 2, 2});
  const Status st = mantissa::amp::mx_quantize_blocks(view(x), {view(q), view(bad)},
                                                      mantissa::amp::MxScaleRule::kEven);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("scales must be the contiguous FLOAT8_E8M0 [2, 1, 2]"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(untouched(q));
  EXPECT_TRUE(untouched(bad));
}

// ---- NVFP4 ----------------------------------------------------------------------------------

// The recipe transcribed with the kit's own FP8 and FP4 rounding (enumeration of each format's
// values): S = fp32(2688 / amax); per block of 16, s = E4M3(fp32(bmax / 6) * S); q = E2M1(fp32(x
// * fp32(S / s))).
struct Nvfp4Ref {
  HostTensor codes, scales;
  float tensor_scale_inv = 0.0f;
};
Nvfp4Ref nvfp4_reference(const HostTensor& x) {
  const int64_t rows = x.shape[0], k = x.shape[1];
  Nvfp4Ref r{HostTensor(DType::kFloat4E2M1, {rows, k}),
             HostTensor(DType::kFloat8E4M3FN, {rows, k / 16})};
  float amax = 0.0f;
  for (int64_t i = 0; i < x.numel(); ++i)
    amax = std::max(amax, std::fabs(static_cast<float>(x.value(i))));
  const float enc = amax > 0.0f ? 2688.0f / amax : 1.0f;
  r.tensor_scale_inv = 1.0f / enc;
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t b = 0; b < k / 16; ++b) {
      float bmax = 0.0f;
      for (int64_t j = 0; j < 16; ++j) {
        bmax = std::max(bmax, std::fabs(static_cast<float>(x.value(row * k + b * 16 + j))));
      }
      const float t = bmax / 6.0f;
      const uint32_t sc =
          precision::round_to_fp8_saturating(static_cast<double>(t * enc), DType::kFloat8E4M3FN);
      r.scales.set_bits(row * (k / 16) + b, sc);
      const auto s = static_cast<float>(precision::decode_fp8(sc, DType::kFloat8E4M3FN));
      const float factor = s == 0.0f ? 0.0f : enc / s;
      for (int64_t j = 0; j < 16; ++j) {
        const int64_t i = row * k + b * 16 + j;
        const float v = static_cast<float>(x.value(i)) * factor;
        r.codes.set_bits(i, precision::round_to_fp4(static_cast<double>(v), DType::kFloat4E2M1, 0));
      }
    }
  }
  return r;
}

TEST(Nvfp4, QuantizeMatchesTheRecipeOnEveryTargetAndThreadCount) {
  for (DType xd : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(mantissa::dtype_name(xd));
    // Rows of different magnitudes: block scales across E4M3's range.
    HostTensor x(xd, {6, 96});
    HostTensor base = filled(DType::kFloat32, {6, 96}, 0.0, 1.0, 17);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = base.value(i) * std::ldexp(1.0, static_cast<int>(i / 96) * 3 - 6);
      x.set_bits(i, precision::round_to_bits(v, xd));
    }
    const Nvfp4Ref ref = nvfp4_reference(x);
    mt::for_each_target_and_thread_count(
        [&](const std::string&, int) {
          HostTensor q = sentinel(DType::kFloat4E2M1, {6, 96}),
                     s = sentinel(DType::kFloat8E4M3FN, {6, 6});
          mantissa::amp::Nvfp4Matrix m{view(q), view(s)};
          ASSERT_TRUE(mantissa::amp::nvfp4_quantize(view(x), m).ok());
          mt::expect_same_bits(q, ref.codes, "codes");
          mt::expect_same_bits(s, ref.scales, "scales");
          EXPECT_EQ(m.tensor_scale_inv, ref.tensor_scale_inv);
        },
        {1, 3});
    // Dequantized: (q * s) * fp32(1 / S), and within NVFP4's error of x (half an E2M1 step of
    // the block's range plus the E4M3 scale's rounding).
    HostTensor q = sentinel(DType::kFloat4E2M1, {6, 96}),
               s = sentinel(DType::kFloat8E4M3FN, {6, 6});
    mantissa::amp::Nvfp4Matrix m{view(q), view(s)};
    ASSERT_TRUE(mantissa::amp::nvfp4_quantize(view(x), m).ok());
    HostTensor back(DType::kFloat32, {6, 96});
    ASSERT_TRUE(mantissa::amp::nvfp4_dequantize(m, view(back)).ok());
    for (int64_t i = 0; i < x.numel(); ++i) {
      const auto sv =
          static_cast<float>(precision::decode_fp8(s.bits(i / 16), DType::kFloat8E4M3FN));
      const float want = (static_cast<float>(q.value(i)) * sv) * m.tensor_scale_inv;
      ASSERT_EQ(std::bit_cast<uint32_t>(static_cast<float>(back.value(i))),
                std::bit_cast<uint32_t>(want))
          << i;
      float bmax = 0.0f;
      for (int64_t j = i / 16 * 16; j < i / 16 * 16 + 16; ++j)
        bmax = std::max(bmax, std::fabs(static_cast<float>(x.value(j))));
      EXPECT_LE(std::fabs(back.value(i) - x.value(i)), bmax * 0.25) << i;
    }
  }
}

TEST(Nvfp4, SpecialBlocksAndGivenAmax) {
  HostTensor x(DType::kFloat32, {2, 32});
  for (int64_t i = 0; i < 64; ++i)
    x.set_bits(i, std::bit_cast<uint32_t>(static_cast<float>(i % 7) - 3.0f));
  x.set_bits(5, 0x7FC00000u);                           // a NaN in block 0
  for (int64_t i = 32; i < 48; ++i) x.set_bits(i, 0u);  // an all-zero block
  HostTensor q = sentinel(DType::kFloat4E2M1, {2, 32}), s = sentinel(DType::kFloat8E4M3FN, {2, 2});
  mantissa::amp::Nvfp4Matrix m{view(q), view(s)};
  ASSERT_TRUE(mantissa::amp::nvfp4_quantize(view(x), m).ok());
  EXPECT_EQ(m.tensor_scale_inv, 1.0f);  // amax NaN: S = 1
  EXPECT_EQ(s.bits(0), 0x7Fu);          // the NaN block: E4M3's NaN, zero codes
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(q.bits(i), 0u) << i;
  EXPECT_EQ(s.bits(2), 0u);  // the zero block: scale 0, codes 0
  for (int64_t i = 32; i < 48; ++i) EXPECT_EQ(q.bits(i), 0u) << i;
  HostTensor back(DType::kFloat32, {2, 32});
  ASSERT_TRUE(mantissa::amp::nvfp4_dequantize(m, view(back)).ok());
  EXPECT_TRUE(std::isnan(back.value(0)));
  EXPECT_EQ(back.value(32), 0.0);
  // A given amax below the data's: the block scale saturates at 448 and elements at +-6.
  HostTensor y(DType::kFloat32, {1, 16});
  for (int64_t i = 0; i < 16; ++i) y.set_bits(i, std::bit_cast<uint32_t>(i % 2 ? -100.0f : 100.0f));
  HostTensor q2 = sentinel(DType::kFloat4E2M1, {1, 16}),
             s2 = sentinel(DType::kFloat8E4M3FN, {1, 1});
  mantissa::amp::Nvfp4Matrix m2{view(q2), view(s2)};
  ASSERT_TRUE(mantissa::amp::nvfp4_quantize(view(y), m2, {.amax = 1.0f}).ok());
  EXPECT_EQ(m2.tensor_scale_inv, 1.0f / 2688.0f);
  EXPECT_EQ(s2.bits(0), 0x7Eu);  // 448
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(q2.bits(i), i % 2 ? 0xFu : 0x7u) << i;
}

TEST(Nvfp4, StochasticRoundingIsUnbiasedAndTheSameEverywhere) {
  // One value between E2M1's 2 and 3 after scaling: x = 2.25 with amax 6 in every block
  // (S = 448, s = E4M3(1 * 448) = 448, factor 1): rounded up with probability 1/4.
  const int64_t rows = 64, k = 256;
  HostTensor x(DType::kFloat32, {rows, k});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.set_bits(i, std::bit_cast<uint32_t>(i % 16 == 0 ? 6.0f : 2.25f));
  }
  HostTensor q = sentinel(DType::kFloat4E2M1, {rows, k}),
             s = sentinel(DType::kFloat8E4M3FN, {rows, k / 16});
  mantissa::amp::Nvfp4Matrix m{view(q), view(s)};
  ASSERT_TRUE(mantissa::amp::nvfp4_quantize(
                  view(x), m, {.amax = std::nullopt, .stochastic = true, .seed = 7, .step = 3})
                  .ok());
  int64_t up = 0, count = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (i % 16 == 0) continue;
    ASSERT_TRUE(q.bits(i) == 4u || q.bits(i) == 5u) << i;  // 2 or 3
    up += q.bits(i) == 5u;
    ++count;
  }
  // Binomial(count, 1/4): within 5 standard deviations.
  const double mean = count / 4.0, sd = std::sqrt(count * 0.25 * 0.75);
  EXPECT_LE(std::fabs(static_cast<double>(up) - mean), 5 * sd) << up << " of " << count;
  mt::for_each_target_and_thread_count(
      [&](const std::string&, int) {
        HostTensor q2 = sentinel(DType::kFloat4E2M1, {rows, k}),
                   s2 = sentinel(DType::kFloat8E4M3FN, {rows, k / 16});
        mantissa::amp::Nvfp4Matrix m2{view(q2), view(s2)};
        ASSERT_TRUE(
            mantissa::amp::nvfp4_quantize(
                view(x), m2, {.amax = std::nullopt, .stochastic = true, .seed = 7, .step = 3})
                .ok());
        mt::expect_same_bits(q2, q, "codes");
      },
      {1, 3});
  // Another step draws other bits.
  HostTensor q3 = sentinel(DType::kFloat4E2M1, {rows, k}),
             s3 = sentinel(DType::kFloat8E4M3FN, {rows, k / 16});
  mantissa::amp::Nvfp4Matrix m3{view(q3), view(s3)};
  ASSERT_TRUE(mantissa::amp::nvfp4_quantize(
                  view(x), m3, {.amax = std::nullopt, .stochastic = true, .seed = 7, .step = 4})
                  .ok());
  EXPECT_NE(q3.bytes, q.bytes);
}

TEST(Nvfp4, MatmulAndValidation) {
  const int64_t m = 4, k = 48, n = 5;
  HostTensor xa = filled(DType::kFloat32, {m, k}, 0.0, 2.0, 51),
             xb = filled(DType::kFloat32, {n, k}, 0.0, 0.5, 52);
  HostTensor qa = sentinel(DType::kFloat4E2M1, {m, k}), sa = sentinel(DType::kFloat8E4M3FN, {m, 3});
  HostTensor qb = sentinel(DType::kFloat4E2M1, {n, k}), sb = sentinel(DType::kFloat8E4M3FN, {n, 3});
  mantissa::amp::Nvfp4Matrix a{view(qa), view(sa)}, b{view(qb), view(sb)};
  ASSERT_TRUE(mantissa::amp::nvfp4_quantize(view(xa), a).ok());
  ASSERT_TRUE(mantissa::amp::nvfp4_quantize(view(xb), b).ok());
  HostTensor out(DType::kFloat32, {m, n});
  ASSERT_TRUE(mantissa::amp::nvfp4_matmul(a, b, view(out)).ok());
  const auto val = [&](const HostTensor& q, const HostTensor& s, int64_t r, int64_t c) {
    return q.value(r * k + c) * precision::decode_fp8(s.bits(r * 3 + c / 16), DType::kFloat8E4M3FN);
  };
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, mag = 0.0;
      for (int64_t c = 0; c < k; ++c) {
        const double p = val(qa, sa, i, c) * val(qb, sb, j, c);
        sum += p;
        mag += std::fabs(p);
      }
      const double f = static_cast<double>(a.tensor_scale_inv) * b.tensor_scale_inv;
      EXPECT_LE(std::fabs(out.value(i * n + j) - sum * f), (k + 2) * 0x1p-24 * mag * f)
          << i << "," << j;
    }
  }
  // Refusals: k not a multiple of 16, wrong dtypes or shapes; nothing written.
  HostTensor odd(DType::kFloat32, {2, 20});
  HostTensor q20 = sentinel(DType::kFloat4E2M1, {2, 20}),
             s20 = sentinel(DType::kFloat8E4M3FN, {2, 1});
  mantissa::amp::Nvfp4Matrix bad{view(q20), view(s20)};
  EXPECT_EQ(mantissa::amp::nvfp4_quantize(view(odd), bad).code(), StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(q20) && untouched(s20));
  HostTensor s_wrong = sentinel(DType::kFloat8E5M2, {m, 3});
  mantissa::amp::Nvfp4Matrix bad2{view(qa), view(s_wrong)};
  EXPECT_EQ(mantissa::amp::nvfp4_quantize(view(xa), bad2).code(), StatusCode::kParamInvalid);
  HostTensor out_bad = sentinel(DType::kFloat32, {n, m});
  EXPECT_EQ(mantissa::amp::nvfp4_matmul(a, b, view(out_bad)).code(), StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(out_bad));
}

TEST(Fp8Matmul, Validation) {
  HostTensor a = fp8_codes(DType::kFloat8E4M3FN, {4, 8}, 1),
             b = fp8_codes(DType::kFloat8E4M3FN, {8, 3}, 2);
  HostTensor b_wrong = fp8_codes(DType::kFloat8E4M3FN, {7, 3}, 2);
  HostTensor a_bf16(DType::kBFloat16, {4, 8});
  HostTensor out = sentinel(DType::kFloat32, {4, 3}), out_bad = sentinel(DType::kFloat32, {3, 4});
  HostTensor out_i8 = sentinel(DType::kInt8, {4, 3});
  using mantissa::amp::fp8_matmul;
  EXPECT_EQ(fp8_matmul({view(a_bf16)}, {view(b)}, view(out)).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(fp8_matmul({view(a)}, {view(b_wrong)}, view(out)).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(fp8_matmul({view(a)}, {view(b)}, view(out_bad)).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(fp8_matmul({view(a)}, {view(b)}, view(out_i8)).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(fp8_matmul({view(a)}, {view(b)}, view(out), true).code(), StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(out));
  // MX: scales of the wrong layout are refused through AntiMxQuant's rules, naming the operand.
  HostTensor s_bad = sentinel(DType::kFloat8E8M0, {4, 2, 2}),
             s_ok = sentinel(DType::kFloat8E8M0, {4, 1, 2});
  HostTensor bb = fp8_codes(DType::kFloat8E4M3FN, {3, 8}, 3),
             sb = sentinel(DType::kFloat8E8M0, {3, 1, 2});
  const Status st =
      mantissa::amp::mx_matmul({view(a), view(s_ok)}, {view(bb), view(s_bad)}, view(out));
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(std::string(st.message()).find("b: "), std::string::npos) << st.message();
  EXPECT_TRUE(untouched(out));
  (void)sb;
}

}  // namespace
}  // namespace mantissa::testing
