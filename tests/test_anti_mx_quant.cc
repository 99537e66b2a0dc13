// AntiMxQuant: bits on every target and thread count against the kit's golden32 (both FP8
// formats, every output dtype, last and earlier axes, odd block counts); the inverse of
// DynamicMxQuant on values it represents; NaN, zero and extreme scale codes; validation through
// the C++ API; aclnn with a strided input; op-by-name.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_anti_mx_quant.h"
#include "mantissa/ops/anti_mx_quant.h"
#include "mantissa/ops/dynamic_mx_quant.h"
#include "op_support.h"
#include "ops/anti_mx_quant/anti_mx_quant_desc.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::AntiMxQuantOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::run_two_phases;
using mt::sentinel;
using mt::untouched;
using mt::view;

std::vector<int64_t> scale_shape(std::vector<int64_t> x, int64_t axis) {
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  const int64_t blocks = (x[axis] + 31) / 32;
  x[axis] = (blocks + 1) / 2;
  x.push_back(2);
  return x;
}

// Every code of x's format and scale codes spread over E8M0's range, NaN included.
HostTensor codes(DType d, std::vector<int64_t> shape, uint32_t seed) {
  HostTensor h(d, std::move(shape));
  for (int64_t i = 0; i < h.numel(); ++i) h.set_bits(i, (i * 37 + seed) & 0xFF);
  return h;
}

TEST(AntiMxQuant, BitExactOnEveryTargetAndThreadCount) {
  struct Shape {
    std::vector<int64_t> dims;
    int64_t axis;
  };
  const std::vector<Shape> shapes{{{4, 96}, -1},  {{3, 100}, 1},    {{2, 70, 19}, 1},
                                  {{65, 300}, 0}, {{600, 130}, -1}, {{7}, 0}};
  for (DType xd : {DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    for (DType yd : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (const Shape& sh : shapes) {
        SCOPED_TRACE(std::string(mantissa::dtype_name(xd)) + " -> " + mantissa::dtype_name(yd) +
                     " axis " + std::to_string(sh.axis));
        HostTensor x = codes(xd, sh.dims, 3);
        HostTensor s = codes(DType::kFloat8E8M0, scale_shape(sh.dims, sh.axis), 11);
        HostTensor yref = sentinel(yd, sh.dims);
        const mantissa::AntiMxQuantParams p{.axis = sh.axis, .dst_type = yd};
        mt::apply_golden32<AntiMxQuantOp>({.x = view(x), .mxscale = view(s), .y = view(yref)}, p);
        mt::for_each_target_and_thread_count([&](const std::string&, int) {
          HostTensor y = sentinel(yd, sh.dims);
          ASSERT_TRUE(
              mantissa::anti_mx_quant({.x = view(x), .mxscale = view(s), .y = view(y)}, p).ok());
          expect_same_bits(y, yref, "y");
        });
      }
    }
  }
}

// DynamicMxQuant then AntiMxQuant gives back every value that one FP8 code of its block's scale
// represents: x = code value * 2^k with k the block's.
TEST(AntiMxQuant, InvertsDynamicMxQuant) {
  HostTensor x(DType::kFloat32, {3, 64});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v =
        std::ldexp(static_cast<float>(1 + (i % 7)) / 4.0f, static_cast<int>(i / 64) * 5);
    x.set_bits(i, std::bit_cast<uint32_t>(i % 5 == 0 ? -v : v));
  }
  for (DType fp8 : {DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    HostTensor q = sentinel(fp8, {3, 64}), s = sentinel(DType::kFloat8E8M0, {3, 1, 2});
    ASSERT_TRUE(mantissa::dynamic_mx_quant({.x = view(x), .y = view(q), .mxscale = view(s)},
                                           {.dst_type = fp8, .scale_alg = 1})
                    .ok());
    HostTensor y = sentinel(DType::kFloat32, {3, 64});
    ASSERT_TRUE(mantissa::anti_mx_quant({.x = view(q), .mxscale = view(s), .y = view(y)},
                                        {.dst_type = DType::kFloat32})
                    .ok());
    expect_same_bits(y, x, mantissa::dtype_name(fp8));
  }
}

// FLOAT4 x: every one of the 16 codes of each format against its value times its block's factor,
// on every target and thread count; and DynamicMxQuant's FLOAT4 output dequantized back.
TEST(AntiMxQuant, Fp4CodesAndTheRoundTrip) {
  static constexpr float kE2M1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (DType xd : {DType::kFloat4E2M1, DType::kFloat4E1M2}) {
    SCOPED_TRACE(mantissa::dtype_name(xd));
    HostTensor x(xd, {4, 64});
    for (int64_t i = 0; i < x.numel(); ++i) x.set_bits(i, static_cast<uint32_t>(i % 16));
    HostTensor s(DType::kFloat8E8M0, {4, 1, 2});
    const uint32_t codes[] = {127, 130, 0, 0xFF, 254, 1, 120, 127};
    for (int64_t k = 0; k < 8; ++k) s.set_bits(k, codes[k]);
    HostTensor want(DType::kFloat32, {4, 64});
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t c = 0; c < 64; ++c) {
        const uint32_t q = static_cast<uint32_t>((r * 64 + c) % 16);
        const float m = xd == DType::kFloat4E2M1 ? kE2M1[q & 7] : static_cast<float>(q & 7) / 4;
        const uint32_t code = codes[r * 2 + c / 32];
        const float f = code == 0xFF ? std::numeric_limits<float>::quiet_NaN()
                                     : std::ldexp(1.0f, static_cast<int>(code) - 127);
        const float v = ((q & 8) ? -m : m) * f;
        want.set_bits(r * 64 + c, std::isnan(v) ? 0x7FC00000u : std::bit_cast<uint32_t>(v));
      }
    }
    mt::for_each_target_and_thread_count([&](const std::string&, int) {
      HostTensor y = sentinel(DType::kFloat32, {4, 64});
      ASSERT_TRUE(mantissa::anti_mx_quant({.x = view(x), .mxscale = view(s), .y = view(y)},
                                          {.dst_type = DType::kFloat32})
                      .ok());
      expect_same_bits(y, want, "y");
    });
  }
  // x = k / 4 * 2^e (FLOAT4_E1M2's values at block scales): quantized and dequantized exactly.
  HostTensor x(DType::kFloat32, {2, 64});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = std::ldexp(static_cast<float>(1 + i % 7) / 4.0f, static_cast<int>(i / 32) * 3);
    x.set_bits(i, std::bit_cast<uint32_t>(i % 3 == 0 ? -v : v));
  }
  HostTensor q = sentinel(DType::kFloat4E1M2, {2, 64}), s = sentinel(DType::kFloat8E8M0, {2, 1, 2});
  ASSERT_TRUE(mantissa::dynamic_mx_quant({.x = view(x), .y = view(q), .mxscale = view(s)},
                                         {.dst_type = DType::kFloat4E1M2})
                  .ok());
  HostTensor y = sentinel(DType::kFloat32, {2, 64});
  ASSERT_TRUE(mantissa::anti_mx_quant({.x = view(q), .mxscale = view(s), .y = view(y)},
                                      {.dst_type = DType::kFloat32})
                  .ok());
  expect_same_bits(y, x, "round trip");
}

TEST(AntiMxQuant, SpecialCodes) {
  // x E4M3FN: 1.0 (0x38), -0 (0x80), NaN (0x7F), 448 (0x7E); scale codes per block below.
  HostTensor x(DType::kFloat8E4M3FN, {4, 32});
  for (int64_t r = 0; r < 4; ++r) {
    const uint32_t v[] = {0x38, 0x80, 0x7F, 0x7E};
    for (int64_t c = 0; c < 32; ++c) x.set_bits(r * 32 + c, v[c % 4]);
  }
  HostTensor s(DType::kFloat8E8M0, {4, 1, 2});
  const uint32_t scodes[] = {127, 0xFF, 0, 254};
  for (int64_t r = 0; r < 4; ++r) s.set_bits(r * 2, scodes[r]), s.set_bits(r * 2 + 1, 0);
  HostTensor y = sentinel(DType::kFloat32, {4, 32});
  ASSERT_TRUE(mantissa::anti_mx_quant({.x = view(x), .mxscale = view(s), .y = view(y)},
                                      {.dst_type = DType::kFloat32})
                  .ok());
  auto f = [&](int64_t r, int64_t c) { return std::bit_cast<float>(y.bits(r * 32 + c)); };
  EXPECT_EQ(f(0, 0), 1.0f);                    // code 127: 2^0
  EXPECT_EQ(y.bits(0 * 32 + 1), 0x80000000u);  // -0 stays -0
  EXPECT_EQ(y.bits(0 * 32 + 2), 0x7FC00000u);  // an FP8 NaN: canonical
  EXPECT_EQ(f(0, 3), 448.0f);
  EXPECT_EQ(y.bits(1 * 32 + 0), 0x7FC00000u);  // scale NaN: every element NaN
  EXPECT_EQ(f(2, 0), 0x1p-127f);               // code 0: 2^-127, an fp32 subnormal
  EXPECT_EQ(f(2, 3), 448.0f * 0x1p-127f);
  EXPECT_EQ(f(3, 0), 0x1p127f);                                // code 254: 2^127
  EXPECT_EQ(f(3, 3), std::numeric_limits<float>::infinity());  // 448 * 2^127 overflows
}

TEST(AntiMxQuantValidation, RowsThroughTheCppApi) {
  struct Row {
    const char* what;
    std::function<void(mantissa::AntiMxQuantTensors&, mantissa::AntiMxQuantParams&)> mutate;
    const char* message;
  };
  HostTensor s_bad = sentinel(DType::kFloat8E8M0, {4, 1, 2});  // 3 blocks need 2 pairs
  HostTensor s_u8 = sentinel(DType::kUInt8, {4, 2, 2});
  HostTensor x16(DType::kFloat16, {4, 96});
  HostTensor y16 = sentinel(DType::kFloat16, {4, 96});
  const std::vector<Row> rows{
      {"dst int8", [](auto&, auto& p) { p.dst_type = DType::kInt8; }, "dst_type 2"},
      {"y not dst", [&](auto& t, auto&) { t.y = view(y16); }, "differs from dst_type"},
      {"scale shape", [&](auto& t, auto&) { t.mxscale = view(s_bad); }, "mxscale shape"},
      {"scale uint8", [&](auto& t, auto&) { t.mxscale = view(s_u8); }, "mxscale"},
      {"x fp16", [&](auto& t, auto&) { t.x = view(x16); }, "x"},
      {"axis 2", [](auto&, auto& p) { p.axis = 2; }, "axis"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    HostTensor x = codes(DType::kFloat8E4M3FN, {4, 96}, 1);
    HostTensor s = codes(DType::kFloat8E8M0, {4, 2, 2}, 2);
    HostTensor y = sentinel(DType::kBFloat16, {4, 96});
    mantissa::AntiMxQuantTensors t{.x = view(x), .mxscale = view(s), .y = view(y)};
    mantissa::AntiMxQuantParams p;
    r.mutate(t, p);
    const Status st = mantissa::anti_mx_quant(t, p);
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid) << st.message();
    EXPECT_NE(std::string(st.message()).find(r.message), std::string::npos) << st.message();
    EXPECT_NE(std::string(st.message()).find("AntiMxQuant"), std::string::npos);
    EXPECT_TRUE(untouched(y));
    EXPECT_TRUE(untouched(y16));
  }
}

TEST(AntiMxQuantAclnn, StridedInputAndByName) {
  HostTensor x = codes(DType::kFloat8E5M2, {4, 64}, 5), s = codes(DType::kFloat8E8M0, {4, 1, 2}, 9);
  HostTensor yref = sentinel(DType::kFloat16, {4, 64});
  const mantissa::AntiMxQuantParams p{.axis = -1, .dst_type = DType::kFloat16};
  ASSERT_TRUE(mantissa::anti_mx_quant({.x = view(x), .mxscale = view(s), .y = view(yref)}, p).ok());
  HostTensor xt(DType::kFloat8E5M2, {64, 4});
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < 64; ++i) xt.set_bits(i * 4 + r, x.bits(r * 64 + i));
  }
  TensorView xv = view(xt);
  xv.shape = {4, 64};
  HostTensor y = sentinel(DType::kFloat16, {4, 64});
  aclTensor* xa = acl(xv, {1, 4}, {64, 4});
  aclTensor* sa = acl(view(s));
  aclTensor* ya = acl(view(y));
  ASSERT_EQ(run_two_phases(
                [&](uint64_t* size, aclOpExecutor** e) {
                  return aclnnAntiMxQuantGetWorkspaceSize(xa, sa, -1, 1, ya, size, e);
                },
                [](void* ws, uint64_t size, aclOpExecutor* e) {
                  return aclnnAntiMxQuant(ws, size, e, nullptr);
                }),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(y, yref, "y");
  HostTensor y2 = sentinel(DType::kFloat16, {4, 64});
  aclTensor* y2a = acl(view(y2));
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnAntiMxQuantGetWorkspaceSize(xa, sa, -1, 27, y2a, &size, &e),
            ACLNN_ERR_PARAM_INVALID);  // y is FLOAT16
  EXPECT_EQ(aclnnAntiMxQuantGetWorkspaceSize(xa, nullptr, -1, 1, y2a, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(untouched(y2));
  for (aclTensor* t : {xa, sa, ya, y2a}) aclDestroyTensor(t);
  // By name: inputs x, mxscale; output y; attributes axis, dst_type.
  HostTensor y3 = sentinel(DType::kFloat16, {4, 64});
  std::vector<int64_t> xs{4, 64}, ss{4, 1, 2};
  aclTensorDesc* in[2] = {aclCreateTensorDesc(ACL_FLOAT8_E5M2, 2, xs.data(), ACL_FORMAT_ND),
                          aclCreateTensorDesc(ACL_FLOAT8_E8M0, 3, ss.data(), ACL_FORMAT_ND)};
  aclDataBuffer* ib[2] = {aclCreateDataBuffer(x.data(), x.bytes.size()),
                          aclCreateDataBuffer(s.data(), s.bytes.size())};
  aclTensorDesc* od = aclCreateTensorDesc(ACL_FLOAT16, 2, xs.data(), ACL_FORMAT_ND);
  aclDataBuffer* ob = aclCreateDataBuffer(y3.data(), y3.bytes.size());
  aclopAttr* attr = aclopCreateAttr();
  ASSERT_EQ(aclopSetAttrInt(attr, "dst_type", ACL_FLOAT16), ACL_SUCCESS);
  ASSERT_EQ(aclopCompileAndExecuteV2("AntiMxQuant", 2, in, ib, 1, &od, &ob, attr, ACL_ENGINE_SYS,
                                     ACL_COMPILE_SYS, nullptr, nullptr),
            ACL_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(y3, yref, "y (by name)");
  for (int i = 0; i < 2; ++i) aclDestroyTensorDesc(in[i]), aclDestroyDataBuffer(ib[i]);
  aclDestroyTensorDesc(od);
  aclDestroyDataBuffer(ob);
  aclopDestroyAttr(attr);
}

}  // namespace
}  // namespace mantissa::testing
