// QuantMax: y and amax bit for bit on every target and thread count (against the kit's
// golden32); every FP8 code, every tie between neighbouring codes and the saturation against an
// FP8 reference written here by enumeration; amax's NaN, infinity, signed-zero and empty rules;
// validation through the C++ API (nothing written); aclnn with a strided input and its roundMode
// and dstType rules; op-by-name.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quant_max.h"
#include "mantissa/ops/quant_max.h"
#include "op_support.h"
#include "ops/quant_max/quant_max_desc.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::QuantMaxOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::run_two_phases;
using mt::sentinel;
using mt::untouched;
using mt::view;

// ---- An FP8 reference, by enumeration of the OCP encodings ---------------------------------

struct Fp8Format {
  DType dtype;
  int exponent_bits, mantissa_bits, bias;
  bool ieee;  // E5M2: exponent all ones is inf / NaN; E4M3FN: only S.1111.111 is NaN
};
const Fp8Format kE4M3{DType::kFloat8E4M3FN, 4, 3, 7, false};
const Fp8Format kE5M2{DType::kFloat8E5M2, 5, 2, 15, true};

// The value of code c (NaN for the NaN codes, +-inf for E5M2's infinities).
double decode(const Fp8Format& f, uint32_t c) {
  const bool negative = (c & 0x80) != 0;
  const uint32_t e = (c >> f.mantissa_bits) & ((1u << f.exponent_bits) - 1);
  const uint32_t m = c & ((1u << f.mantissa_bits) - 1);
  const uint32_t e_max = (1u << f.exponent_bits) - 1;
  double v;
  if (f.ieee && e == e_max) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::nan("");
  } else if (!f.ieee && e == e_max && m == (1u << f.mantissa_bits) - 1) {
    v = std::nan("");
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias - f.mantissa_bits);
  } else {
    v = std::ldexp(static_cast<double>(m + (1u << f.mantissa_bits)),
                   static_cast<int>(e) - f.bias - f.mantissa_bits);
  }
  return negative ? -v : v;
}

// The code of x: the nearest finite code, a tie to the code with an even mantissa, beyond the
// largest finite value the largest finite code (saturation, infinities included); NaN the
// canonical NaN code (E4M3FN 0x7F, E5M2 0x7E). -0 keeps its sign.
uint32_t encode(const Fp8Format& f, double x) {
  if (std::isnan(x)) return f.ieee ? 0x7Eu : 0x7Fu;
  const uint32_t sign = std::signbit(x) ? 0x80u : 0u;
  uint32_t largest = sign;  // the finite code of largest magnitude: what x beyond it becomes
  for (uint32_t c = sign; c < sign + 0x80; ++c) {
    if (std::isfinite(decode(f, c)) && std::fabs(decode(f, c)) > std::fabs(decode(f, largest))) {
      largest = c;
    }
  }
  if (std::fabs(x) >= std::fabs(decode(f, largest))) return largest;
  uint32_t best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (uint32_t c = sign; c < sign + 0x80; ++c) {
    const double v = decode(f, c);
    if (!std::isfinite(v)) continue;
    const double err = std::fabs(v - x);
    if (err < best_err || (err == best_err && (c & 1) == 0)) best = c, best_err = err;
  }
  return best;
}

HostTensor scalar_f32(float v) {
  HostTensor h(DType::kFloat32, {1});
  h.set_bits(0, std::bit_cast<uint32_t>(v));
  return h;
}

HostTensor of_floats(const std::vector<float>& xs) {
  HostTensor h(DType::kFloat32, {static_cast<int64_t>(xs.size())});
  for (std::size_t i = 0; i < xs.size(); ++i) {
    h.set_bits(static_cast<int64_t>(i), std::bit_cast<uint32_t>(xs[i]));
  }
  return h;
}

Status run(HostTensor& x, HostTensor& s, HostTensor& y, HostTensor& amax, DType dst) {
  return mantissa::quant_max({.x = view(x), .scale = view(s), .y = view(y), .amax = view(amax)},
                             {.round_mode = mantissa::QuantMaxRoundMode::kRint, .dst_type = dst});
}

TEST(QuantMax, BitExactOnEveryTargetAndThreadCount) {
  const std::vector<std::vector<int64_t>> shapes{{3, 70001}, {1}, {7, 9}, {2, 3, 5, 41}};
  for (DType xd : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (DType yd : {DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
      for (const auto& shape : shapes) {
        SCOPED_TRACE(std::string(mantissa::dtype_name(xd)) + " -> " + mantissa::dtype_name(yd) +
                     " numel " + std::to_string(shape.back()));
        HostTensor x = filled(xd, shape, 0.0, 40.0, 7), s = scalar_f32(3.5f);
        HostTensor yref = sentinel(yd, shape), aref = sentinel(xd, {1});
        mt::apply_golden32<QuantMaxOp>(
            {.x = view(x), .scale = view(s), .y = view(yref), .amax = view(aref)},
            {.dst_type = yd});
        mt::for_each_target_and_thread_count([&](const std::string&, int) {
          HostTensor y = sentinel(yd, shape), amax = sentinel(xd, {1});
          ASSERT_TRUE(run(x, s, y, amax, yd).ok());
          expect_same_bits(y, yref, "y");
          expect_same_bits(amax, aref, "amax");
        });
      }
    }
  }
}

// Every code's value with scale 1 gives the code back (NaNs: the canonical code); every midpoint
// of two neighbouring finite codes goes to the even one, and the values just beside it to the
// nearer; values beyond the largest finite one saturate. Against the enumeration above.
TEST(QuantMax, EveryCodeTieAndSaturationAgainstAnFp8Reference) {
  for (const Fp8Format& f : {kE4M3, kE5M2}) {
    SCOPED_TRACE(mantissa::dtype_name(f.dtype));
    std::vector<float> xs;
    for (uint32_t c = 0; c < 256; ++c) xs.push_back(static_cast<float>(decode(f, c)));
    for (uint32_t c = 0; c < 0x7F; ++c) {
      const double a = decode(f, c), b = decode(f, c + 1);
      if (!std::isfinite(a) || !std::isfinite(b)) continue;
      for (double sign : {1.0, -1.0}) {
        const auto mid = static_cast<float>(sign * (a + b) / 2);  // exact in fp32
        xs.push_back(mid);
        xs.push_back(std::nextafter(mid, 0.0f));
        xs.push_back(std::nextafter(mid, sign * std::numeric_limits<float>::infinity()));
      }
    }
    for (float v : {1e6f, -1e6f, 3e38f, -3e38f, std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity(), 1e-30f, -1e-30f}) {
      xs.push_back(v);
    }
    HostTensor x = of_floats(xs), s = scalar_f32(1.0f);
    mt::for_each_target_and_thread_count(
        [&](const std::string&, int) {
          HostTensor y = sentinel(f.dtype, x.shape), amax = sentinel(DType::kFloat32, {1});
          ASSERT_TRUE(run(x, s, y, amax, f.dtype).ok());
          for (std::size_t i = 0; i < xs.size(); ++i) {
            ASSERT_EQ(y.bits(static_cast<int64_t>(i)), encode(f, xs[i]))
                << "x " << xs[i] << " (element " << i << ")";
          }
          // A NaN code's value is among the inputs: amax is NaN.
          EXPECT_EQ(amax.bits(0), 0x7FC00000u);
        },
        {1, 3});
  }
}

// The product is one fp32 rounding before the FP8 one: 1.0000001f * 17 rounds in fp32 to
// 17.000002 (above the E4M3 tie at 17, between 16 and 18), so y is 18, not the tie's even 16.
TEST(QuantMax, TheProductIsRoundedToFp32First) {
  HostTensor x = of_floats({1.0000001f, 1.0f}), s = scalar_f32(17.0f);
  HostTensor y = sentinel(DType::kFloat8E4M3FN, {2}), amax = sentinel(DType::kFloat32, {1});
  ASSERT_TRUE(run(x, s, y, amax, DType::kFloat8E4M3FN).ok());
  EXPECT_EQ(y.bits(0), encode(kE4M3, 18.0));
  EXPECT_EQ(y.bits(1), encode(kE4M3, 16.0));  // 17 is the tie of 16 and 18: even 16
  EXPECT_EQ(amax.bits(0), std::bit_cast<uint32_t>(1.0000001f));
}

TEST(QuantMax, AmaxRules) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Row {
    std::vector<float> x;
    uint32_t amax;
  };
  std::vector<float> late(70001, 1.5f);  // a NaN in the last parallel piece, at its end
  late.back() = -nan;
  std::vector<float> big(70001, 0.25f);
  big[40000] = -1000.0f;
  const std::vector<Row> rows{
      {{-0.0f, -0.0f}, 0x00000000u},                         // |-0| is +0
      {{1.0f, -inf, 2.0f}, 0x7F800000u},                     // +inf
      {{1.0f, nan, 2.0f}, 0x7FC00000u},                      // NaN, canonical
      {late, 0x7FC00000u},                                   // whichever piece holds it
      {big, std::bit_cast<uint32_t>(1000.0f)},               // the max of the pieces
      {{1e-45f, -2e-45f}, std::bit_cast<uint32_t>(2e-45f)},  // subnormals, exactly
  };
  for (const Row& r : rows) {
    HostTensor x = of_floats(r.x), s = scalar_f32(1.0f);
    mt::for_each_target_and_thread_count(
        [&](const std::string&, int) {
          HostTensor y = sentinel(DType::kFloat8E5M2, x.shape),
                     amax = sentinel(DType::kFloat32, {1});
          ASSERT_TRUE(run(x, s, y, amax, DType::kFloat8E5M2).ok());
          EXPECT_EQ(amax.bits(0), r.amax) << "first x " << r.x[0];
        },
        {1, 3});
  }
  // fp16 and bf16: amax in x's dtype, exactly; NaN as that dtype's canonical NaN.
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    HostTensor x(d, {3}), s = scalar_f32(2.0f);
    x.set_bits(0, mantissa::precision::round_to_bits(-3.25, d));
    x.set_bits(1, mantissa::precision::round_to_bits(0.5, d));
    x.set_bits(2, d == DType::kFloat16 ? 0x7C01u : 0x7F81u);  // a signalling NaN
    HostTensor y = sentinel(DType::kFloat8E4M3FN, {3}), amax = sentinel(d, {1});
    ASSERT_TRUE(run(x, s, y, amax, DType::kFloat8E4M3FN).ok());
    EXPECT_EQ(amax.bits(0), d == DType::kFloat16 ? 0x7E00u : 0x7FC0u);
    EXPECT_EQ(y.bits(0), encode(kE4M3, -6.5));
    EXPECT_EQ(y.bits(2), 0x7Fu);
    x.set_bits(2, 0);
    ASSERT_TRUE(run(x, s, y, amax, DType::kFloat8E4M3FN).ok());
    EXPECT_EQ(amax.bits(0), mantissa::precision::round_to_bits(3.25, d));
  }
  // Empty x: amax +0, nothing else written.
  HostTensor x(DType::kFloat32, {0, 4}), s = scalar_f32(1.0f);
  HostTensor y = sentinel(DType::kFloat8E4M3FN, {0, 4}), amax = sentinel(DType::kFloat32, {1});
  ASSERT_TRUE(run(x, s, y, amax, DType::kFloat8E4M3FN).ok());
  EXPECT_EQ(amax.bits(0), 0u);
}

TEST(QuantMaxValidation, RowsThroughTheCppApi) {
  struct Row {
    const char* what;
    std::function<void(mantissa::QuantMaxTensors&, mantissa::QuantMaxParams&)> mutate;
    StatusCode code;
    const char* message;
  };
  HostTensor x9(DType::kFloat32, {1, 1, 1, 1, 1, 1, 1, 1, 2});
  HostTensor y9 = sentinel(DType::kFloat8E4M3FN, {1, 1, 1, 1, 1, 1, 1, 1, 2});
  HostTensor s2(DType::kFloat32, {2}), s16(DType::kFloat16, {1});
  HostTensor a16 = sentinel(DType::kFloat16, {1});
  HostTensor y5 = sentinel(DType::kFloat8E5M2, {4, 8}), ybad = sentinel(DType::kInt8, {4, 8});
  HostTensor yshape = sentinel(DType::kFloat8E4M3FN, {8, 4});
  const std::vector<Row> rows{
      {"hifloat8", [](auto&, auto& p) { p.dst_type = DType::kHiFloat8; }, StatusCode::kParamInvalid,
       "HIFLOAT8"},
      {"dst int8", [](auto&, auto& p) { p.dst_type = DType::kInt8; }, StatusCode::kParamInvalid,
       "dst_type 2"},
      {"y not dst", [&](auto& t, auto&) { t.y = view(y5); }, StatusCode::kParamInvalid,
       "differs from dst_type"},
      {"y int8", [&](auto& t, auto&) { t.y = view(ybad); }, StatusCode::kParamInvalid, "y"},
      {"y shape", [&](auto& t, auto&) { t.y = view(yshape); }, StatusCode::kParamInvalid, "y"},
      {"round", [](auto&, auto& p) { p.round_mode = mantissa::QuantMaxRoundMode::kRound; },
       StatusCode::kParamInvalid, "rint"},
      {"scale two", [&](auto& t, auto&) { t.scale = view(s2); }, StatusCode::kParamInvalid,
       "scale"},
      {"scale fp16", [&](auto& t, auto&) { t.scale = view(s16); }, StatusCode::kParamInvalid,
       "scale"},
      {"amax dtype", [&](auto& t, auto&) { t.amax = view(a16); }, StatusCode::kParamInvalid,
       "amax"},
      {"rank 9",
       [&](auto& t, auto&) {
         t.x = view(x9);
         t.y = view(y9);
       },
       StatusCode::kParamInvalid, "rank"},
      {"null x", [](auto& t, auto&) { t.x.data = nullptr; }, StatusCode::kParamNullptr, "x"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    HostTensor x = filled(DType::kFloat32, {4, 8}, 0.0, 3.0, 1), s = scalar_f32(1.0f);
    HostTensor y = sentinel(DType::kFloat8E4M3FN, {4, 8}), amax = sentinel(DType::kFloat32, {1});
    mantissa::QuantMaxTensors t{.x = view(x), .scale = view(s), .y = view(y), .amax = view(amax)};
    mantissa::QuantMaxParams p;
    r.mutate(t, p);
    const Status st = mantissa::quant_max(t, p);
    EXPECT_EQ(st.code(), r.code) << st.message();
    EXPECT_NE(std::string(st.message()).find(r.message), std::string::npos) << st.message();
    EXPECT_NE(std::string(st.message()).find("QuantMax"), std::string::npos) << st.message();
    EXPECT_TRUE(untouched(y));
    EXPECT_TRUE(untouched(amax));
    EXPECT_TRUE(untouched(y5));
  }
}

TEST(QuantMaxAclnn, StridedInputRoundModesAndDstTypes) {
  HostTensor x = filled(DType::kBFloat16, {4, 8}, 0.0, 30.0, 3), s = scalar_f32(0.75f);
  HostTensor yref = sentinel(DType::kFloat8E5M2, {4, 8}), aref = sentinel(DType::kBFloat16, {1});
  ASSERT_TRUE(run(x, s, yref, aref, DType::kFloat8E5M2).ok());
  // x^T stored as [8][4] and viewed as [4, 8] with strides {1, 4}.
  HostTensor xt(DType::kBFloat16, {8, 4});
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < 8; ++i) xt.set_bits(i * 4 + r, x.bits(r * 8 + i));
  }
  TensorView xv = view(xt);
  xv.shape = {4, 8};
  HostTensor y = sentinel(DType::kFloat8E5M2, {4, 8}), amax = sentinel(DType::kBFloat16, {1});
  aclTensor* xa = acl(xv, {1, 4}, {8, 4});
  aclTensor* sa = acl(view(s));
  aclTensor* ya = acl(view(y));
  aclTensor* aa = acl(view(amax));
  char rint[] = "rint", round[] = "round", bogus[] = "Rint";
  ASSERT_EQ(run_two_phases(
                [&](uint64_t* size, aclOpExecutor** e) {
                  return aclnnQuantMaxGetWorkspaceSize(xa, sa, rint, 35, ya, aa, size, e);
                },
                [](void* ws, uint64_t size, aclOpExecutor* e) {
                  return aclnnQuantMax(ws, size, e, nullptr);
                }),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(y, yref, "y");
  expect_same_bits(amax, aref, "amax");
  HostTensor y2 = sentinel(DType::kFloat8E5M2, {4, 8}), a2 = sentinel(DType::kBFloat16, {1});
  aclTensor* y2a = acl(view(y2));
  aclTensor* a2a = acl(view(a2));
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnQuantMaxGetWorkspaceSize(xa, sa, nullptr, 35, y2a, a2a, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnQuantMaxGetWorkspaceSize(xa, sa, bogus, 35, y2a, a2a, &size, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("Rint"), std::string::npos);
  EXPECT_EQ(aclnnQuantMaxGetWorkspaceSize(xa, sa, round, 35, y2a, a2a, &size, &e),
            ACLNN_ERR_PARAM_INVALID);  // HIFLOAT8's mode
  EXPECT_EQ(aclnnQuantMaxGetWorkspaceSize(xa, sa, rint, 34, y2a, a2a, &size, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("HIFLOAT8"), std::string::npos);
  EXPECT_EQ(aclnnQuantMaxGetWorkspaceSize(xa, sa, rint, 36, y2a, a2a, &size, &e),
            ACLNN_ERR_PARAM_INVALID);  // y is E5M2
  EXPECT_EQ(aclnnQuantMaxGetWorkspaceSize(xa, sa, rint, int64_t{1} << 40, y2a, a2a, &size, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclnnQuantMaxGetWorkspaceSize(xa, sa, rint, 35, nullptr, a2a, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(untouched(y2));
  EXPECT_TRUE(untouched(a2));
  for (aclTensor* t : {xa, sa, ya, aa, y2a, a2a}) aclDestroyTensor(t);
}

// By name: inputs x, scale; outputs y, amax; attributes round_mode (CANN's String "Rint", or an
// Int) and dst_type (required).
TEST(QuantMaxByName, InputsOutputsAndAttributes) {
  HostTensor x = filled(DType::kFloat16, {4, 8}, 0.0, 30.0, 4), s = scalar_f32(2.0f);
  HostTensor yref = sentinel(DType::kFloat8E4M3FN, {4, 8}), aref = sentinel(DType::kFloat16, {1});
  ASSERT_TRUE(run(x, s, yref, aref, DType::kFloat8E4M3FN).ok());
  auto by_name = [&](aclopAttr* attr, HostTensor& y, HostTensor& amax) {
    std::vector<int64_t> xs{4, 8}, one{1};
    aclTensorDesc* in[2] = {aclCreateTensorDesc(ACL_FLOAT16, 2, xs.data(), ACL_FORMAT_ND),
                            aclCreateTensorDesc(ACL_FLOAT, 1, one.data(), ACL_FORMAT_ND)};
    aclDataBuffer* ib[2] = {aclCreateDataBuffer(x.data(), x.bytes.size()),
                            aclCreateDataBuffer(s.data(), s.bytes.size())};
    aclTensorDesc* out[2] = {aclCreateTensorDesc(ACL_FLOAT8_E4M3FN, 2, xs.data(), ACL_FORMAT_ND),
                             aclCreateTensorDesc(ACL_FLOAT16, 1, one.data(), ACL_FORMAT_ND)};
    aclDataBuffer* ob[2] = {aclCreateDataBuffer(y.data(), y.bytes.size()),
                            aclCreateDataBuffer(amax.data(), amax.bytes.size())};
    const aclError rc = aclopCompileAndExecuteV2("QuantMax", 2, in, ib, 2, out, ob, attr,
                                                 ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, nullptr);
    for (int i = 0; i < 2; ++i) {
      aclDestroyTensorDesc(in[i]), aclDestroyTensorDesc(out[i]);
      aclDestroyDataBuffer(ib[i]), aclDestroyDataBuffer(ob[i]);
    }
    return rc;
  };
  aclopAttr* attr = aclopCreateAttr();
  ASSERT_EQ(aclopSetAttrString(attr, "round_mode", "Rint"), ACL_SUCCESS);
  ASSERT_EQ(aclopSetAttrInt(attr, "dst_type", ACL_FLOAT8_E4M3FN), ACL_SUCCESS);
  HostTensor y = sentinel(DType::kFloat8E4M3FN, {4, 8}), amax = sentinel(DType::kFloat16, {1});
  ASSERT_EQ(by_name(attr, y, amax), ACL_SUCCESS) << aclGetRecentErrMsg();
  expect_same_bits(y, yref, "y");
  expect_same_bits(amax, aref, "amax");
  // HIFLOAT8's mode: refused, nothing written.
  ASSERT_EQ(aclopSetAttrString(attr, "round_mode", "Hybrid"), ACL_SUCCESS);
  HostTensor y2 = sentinel(DType::kFloat8E4M3FN, {4, 8}), a2 = sentinel(DType::kFloat16, {1});
  EXPECT_NE(by_name(attr, y2, a2), ACL_SUCCESS);
  EXPECT_TRUE(untouched(y2));
  EXPECT_TRUE(untouched(a2));
  aclopDestroyAttr(attr);
  // Without dst_type: refused.
  attr = aclopCreateAttr();
  EXPECT_NE(by_name(attr, y2, a2), ACL_SUCCESS);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("dst_type"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(untouched(y2));
  aclopDestroyAttr(attr);
}

}  // namespace
}  // namespace mantissa::testing
