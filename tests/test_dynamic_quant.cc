// DynamicQuant: bits on every target and thread count (against the kit's golden32), the scale
// and the codes of hand-written rows (ties, INT4 nibbles and INT32 words, FP8), NaN, infinities
// and rows of zeros, validation through the C++ API, aclnn with a strided input, op-by-name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dynamic_quant.h"
#include "mantissa/ops/dynamic_quant.h"
#include "op_support.h"
#include "ops/dynamic_quant/dynamic_quant_desc.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::DynamicQuantOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::packed_shape;
using mt::run_two_phases;
using mt::sentinel;
using mt::untouched;
using mt::view;

std::vector<int64_t> scale_shape(std::vector<int64_t> s) {
  s.pop_back();
  return s;
}

struct Call {
  HostTensor x, s, y, scale;
  mantissa::DynamicQuantTensors t;
  mantissa::DynamicQuantParams p;
  Call(DType xd, DType yd, std::vector<int64_t> shape, bool smooth, uint32_t seed = 1)
      : x(filled(xd, shape, 0.0, 2.0, seed)),
        s(filled(xd, {shape.back()}, 1.0, 0.2, seed + 1)),
        y(sentinel(yd, packed_shape(shape, yd))),
        scale(sentinel(DType::kFloat32, scale_shape(shape))) {
    t.x = view(x), t.y = view(y), t.scale = view(scale);
    if (smooth) t.smooth_scales = view(s);
    p.dst_type = yd;
  }
};

const std::vector<DType> kOutputs{DType::kInt8, DType::kInt4, DType::kInt32, DType::kFloat8E4M3FN,
                                  DType::kFloat8E5M2};

TEST(DynamicQuant, BitExactOnEveryTargetAndThreadCount) {
  for (DType xd : {DType::kFloat16, DType::kBFloat16}) {
    for (DType yd : kOutputs) {
      for (const std::vector<int64_t>& shape :
           std::vector<std::vector<int64_t>>{{4, 8}, {5, 264}, {2, 3, 1000}, {1200, 40}}) {
        for (bool smooth : {false, true}) {
          SCOPED_TRACE(std::string(mantissa::dtype_name(xd)) + " -> " + mantissa::dtype_name(yd) +
                       " rows of " + std::to_string(shape.back()) + (smooth ? " smooth" : ""));
          Call ref(xd, yd, shape, smooth);
          mt::apply_golden32<DynamicQuantOp>(ref.t, ref.p);
          mt::for_each_target_and_thread_count([&](const std::string&, int) {
            Call got(xd, yd, shape, smooth);
            ASSERT_TRUE(mantissa::dynamic_quant(got.t, got.p).ok());
            expect_same_bits(got.y, ref.y, "y");
            expect_same_bits(got.scale, ref.scale, "scale");
          });
        }
      }
    }
  }
}

HostTensor fp16_row(const std::vector<float>& v) {
  HostTensor h(DType::kFloat16, {1, static_cast<int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) {
    h.set_bits(static_cast<int64_t>(i), mantissa::float_to_fp16_bits(v[i]));
  }
  return h;
}

// Hand-computed rows: amax 7 gives scale 1 for INT4, so x itself is rounded (ties to even);
// INT4 codes pack low nibble first, INT32 words hold eight codes.
TEST(DynamicQuant, HandWrittenRowsTiesAndPacking) {
  const std::vector<float> xs{7.0f, -7.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f};
  const std::vector<int> codes{7, -7, 0, 2, 2, 0, -2, -2};
  mt::for_each_target_and_thread_count(
      [&](const std::string&, int) {
        HostTensor x = fp16_row(xs);
        for (DType yd : {DType::kInt4, DType::kInt32}) {
          HostTensor y = sentinel(yd, packed_shape({1, 8}, yd)),
                     scale = sentinel(DType::kFloat32, {1});
          ASSERT_TRUE(
              mantissa::dynamic_quant(
                  {.x = view(x), .smooth_scales = std::nullopt, .y = view(y), .scale = view(scale)},
                  {.dst_type = yd})
                  .ok());
          EXPECT_EQ(scale.value(0), 1.0);
          uint32_t word = 0;
          for (int k = 0; k < 8; ++k) word |= (static_cast<uint32_t>(codes[k]) & 0xFu) << (4 * k);
          uint32_t got = 0;
          std::memcpy(&got, y.data(), 4);
          EXPECT_EQ(got, word) << mantissa::dtype_name(yd);
        }
        // INT8: amax 2.54 -> scale 0.02 (fp32), 1.27 / scale = 63.5 -> 64 (tie to even).
        HostTensor x8 = fp16_row({2.54f, 1.27f, -2.54f, 0.0f});
        HostTensor y8 = sentinel(DType::kInt8, {1, 4}), s8 = sentinel(DType::kFloat32, {1});
        ASSERT_TRUE(
            mantissa::dynamic_quant(
                {.x = view(x8), .smooth_scales = std::nullopt, .y = view(y8), .scale = view(s8)},
                {.dst_type = DType::kInt8})
                .ok());
        const float amax = mantissa::fp16_bits_to_float(mantissa::float_to_fp16_bits(2.54f));
        const float sc = amax / 127.0f;
        EXPECT_EQ(s8.bits(0), std::bit_cast<uint32_t>(sc));
        const float half = mantissa::fp16_bits_to_float(mantissa::float_to_fp16_bits(1.27f)) / sc;
        EXPECT_EQ(y8.value(0), 127);
        EXPECT_EQ(y8.value(1), std::nearbyint(half));
        EXPECT_EQ(y8.value(2), -127);
        EXPECT_EQ(y8.value(3), 0);
      },
      {1});
}

// A row of zeros: scale 0, codes 0. A NaN: scale NaN, y 0 (INT8) or the NaN code (FP8). An
// infinity: scale inf, finite elements 0.
TEST(DynamicQuant, ZerosNanAndInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  HostTensor x(DType::kFloat16, {3, 4});
  const std::vector<float> v{0.0f, -0.0f, 0.0f, 0.0f, 1.0f,  nan,
                             2.0f, 3.0f,  1.0f, inf,  -2.0f, 0.0f};
  for (int64_t i = 0; i < 12; ++i) x.set_bits(i, mantissa::float_to_fp16_bits(v[i]));
  mt::for_each_target_and_thread_count(
      [&](const std::string&, int) {
        for (DType yd : {DType::kInt8, DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
          SCOPED_TRACE(mantissa::dtype_name(yd));
          HostTensor y = sentinel(yd, {3, 4}), scale = sentinel(DType::kFloat32, {3});
          ASSERT_TRUE(
              mantissa::dynamic_quant(
                  {.x = view(x), .smooth_scales = std::nullopt, .y = view(y), .scale = view(scale)},
                  {.dst_type = yd})
                  .ok());
          EXPECT_EQ(scale.bits(0), 0u);
          for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(y.bits(i), 0u) << i;
          EXPECT_TRUE(std::isnan(scale.value(1)));
          const uint32_t nan_code =
              yd == DType::kInt8 ? 0u : (yd == DType::kFloat8E4M3FN ? 0x7Fu : 0x7Eu);
          for (int64_t i = 4; i < 8; ++i) EXPECT_EQ(y.bits(i), nan_code) << i;
          EXPECT_EQ(scale.value(2), inf);
          EXPECT_EQ(y.bits(9), nan_code);  // inf / inf
          for (int64_t i : {8, 10, 11}) EXPECT_EQ(y.value(i), 0.0) << i;
        }
      },
      {1});
}

TEST(DynamicQuantValidation, RowsThroughTheCppApi) {
  struct Row {
    const char* what;
    void (*mutate)(Call&, mantissa::DynamicQuantTensors&, mantissa::DynamicQuantParams&);
    StatusCode code;
    const char* named;
  };
  const std::vector<Row> rows{
      {"x missing", [](Call&, auto& t, auto&) { t.x.data = nullptr; }, StatusCode::kParamNullptr,
       "x"},
      {"y missing", [](Call&, auto& t, auto&) { t.y.data = nullptr; }, StatusCode::kParamNullptr,
       "y"},
      {"scale missing", [](Call&, auto& t, auto&) { t.scale.data = nullptr; },
       StatusCode::kParamNullptr, "scale"},
      {"x FLOAT", [](Call&, auto& t, auto&) { t.x.dtype = DType::kFloat32; },
       StatusCode::kParamInvalid, "x"},
      {"x rank 1", [](Call&, auto& t, auto&) { t.x.rank = 1, t.x.shape = {16}; },
       StatusCode::kParamInvalid, "x"},
      {"smooth dtype", [](Call&, auto& t, auto&) { t.smooth_scales->dtype = DType::kBFloat16; },
       StatusCode::kParamInvalid, "smooth_scales"},
      {"smooth shape", [](Call&, auto& t, auto&) { t.smooth_scales->shape[0] = 8; },
       StatusCode::kParamInvalid, "smooth_scales"},
      {"scale dtype", [](Call&, auto& t, auto&) { t.scale.dtype = DType::kFloat16; },
       StatusCode::kParamInvalid, "scale"},
      {"scale shape", [](Call&, auto& t, auto&) { t.scale.shape[0] = 3; },
       StatusCode::kParamInvalid, "scale"},
      {"y dtype not quantized",
       [](Call&, auto& t, auto& p) { t.y.dtype = DType::kFloat16, p.dst_type = DType::kFloat16; },
       StatusCode::kParamInvalid, "y"},
      {"y dtype differs from dst_type", [](Call&, auto&, auto& p) { p.dst_type = DType::kInt4; },
       StatusCode::kParamInvalid, "dst_type"},
      {"y shape", [](Call&, auto& t, auto&) { t.y.shape[1] = 8; }, StatusCode::kParamInvalid,
       "y shape"},
      {"y INT32 shape",
       [](Call&, auto& t, auto& p) { t.y.dtype = DType::kInt32, p.dst_type = DType::kInt32; },
       StatusCode::kParamInvalid, "INT32"},
      {"y overlaps x", [](Call& c, auto& t, auto&) { t.y.data = c.x.data(); },
       StatusCode::kParamInvalid, "y"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    Call c(DType::kFloat16, DType::kInt8, {4, 16}, true);
    r.mutate(c, c.t, c.p);
    const mantissa::Status s = mantissa::dynamic_quant(c.t, c.p);
    EXPECT_EQ(s.code(), r.code) << s.message();
    EXPECT_NE(s.message().find(r.named), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("DynamicQuant"), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(c.y) && untouched(c.scale));
  }
  // INT4 needs an even last dim, packed INT32 a multiple of 8.
  Call odd(DType::kFloat16, DType::kInt4, {2, 7}, false);
  EXPECT_EQ(mantissa::dynamic_quant(odd.t, odd.p).code(), StatusCode::kParamInvalid);
  EXPECT_TRUE(untouched(odd.y));
  Call c12(DType::kFloat16, DType::kInt8, {2, 12}, false);
  HostTensor y32 = sentinel(DType::kInt32, {2, 1});
  c12.t.y = view(y32), c12.p.dst_type = DType::kInt32;
  const mantissa::Status s = mantissa::dynamic_quant(c12.t, c12.p);
  EXPECT_EQ(s.code(), StatusCode::kParamInvalid);
  EXPECT_NE(s.message().find("divisible by 8"), std::string::npos) << s.message();
  EXPECT_TRUE(untouched(y32));
}

// A transposed x staged through the workspace gives the contiguous bits, for INT8 and INT4 (the
// dtype comes from yOut); a null smooth scale is accepted; a null x is 161001.
TEST(DynamicQuantAclnn, StridedInputAndNulls) {
  for (DType yd : {DType::kInt8, DType::kInt4}) {
    SCOPED_TRACE(mantissa::dtype_name(yd));
    Call ref(DType::kBFloat16, yd, {6, 8}, true);
    ASSERT_TRUE(mantissa::dynamic_quant(ref.t, ref.p).ok());
    HostTensor xt(DType::kBFloat16, {8, 6});
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t i = 0; i < 8; ++i) xt.set_bits(i * 6 + r, ref.x.bits(r * 8 + i));
    }
    TensorView xv = view(xt);
    xv.shape = {6, 8};
    Call c(DType::kBFloat16, yd, {6, 8}, true);
    aclTensor* x = acl(xv, {1, 6}, {8, 6});
    aclTensor* s = acl(view(ref.s));
    aclTensor* y = acl(view(c.y));
    aclTensor* sc = acl(view(c.scale));
    ASSERT_EQ(run_two_phases(
                  [&](uint64_t* size, aclOpExecutor** e) {
                    return aclnnDynamicQuantGetWorkspaceSize(x, s, y, sc, size, e);
                  },
                  [](void* ws, uint64_t size, aclOpExecutor* e) {
                    return aclnnDynamicQuant(ws, size, e, nullptr);
                  }),
              ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    expect_same_bits(c.y, ref.y, "y");
    expect_same_bits(c.scale, ref.scale, "scale");
    uint64_t size = 0;
    aclOpExecutor* e = nullptr;
    Call n(DType::kBFloat16, yd, {6, 8}, true);
    aclTensor* y2 = acl(view(n.y));
    EXPECT_EQ(aclnnDynamicQuantGetWorkspaceSize(nullptr, s, y2, sc, &size, &e),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclnnDynamicQuantGetWorkspaceSize(x, s, y2, nullptr, &size, &e),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_TRUE(untouched(n.y));
    // Without smooth scales.
    Call ns(DType::kBFloat16, yd, {6, 8}, false);
    ns.x = ref.x;
    ns.t.x = view(ns.x);
    ASSERT_TRUE(mantissa::dynamic_quant(ns.t, ns.p).ok());
    aclTensor* xc = acl(view(ref.x));
    ASSERT_EQ(run_two_phases(
                  [&](uint64_t* sz, aclOpExecutor** ex) {
                    return aclnnDynamicQuantGetWorkspaceSize(xc, nullptr, y2, sc, sz, ex);
                  },
                  [](void* ws, uint64_t sz, aclOpExecutor* ex) {
                    return aclnnDynamicQuant(ws, sz, ex, nullptr);
                  }),
              ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    expect_same_bits(n.y, ns.y, "y (no smooth scales)");
    for (aclTensor* t : {x, s, y, sc, y2, xc}) aclDestroyTensor(t);
  }
}

// A packed INT4 tensor takes row-major strides only: a transposed view is refused when made.
TEST(DynamicQuantAclnn, PackedOutputsAreRowMajor) {
  HostTensor y = sentinel(DType::kInt4, {6, 8});
  EXPECT_EQ(acl(view(y), {1, 6}, {8, 6}), nullptr);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("row-major"), std::string::npos)
      << aclGetRecentErrMsg();
  aclTensor* ok = acl(view(y));
  EXPECT_NE(ok, nullptr) << aclGetRecentErrMsg();
  aclDestroyTensor(ok);
}

// By name: x and smooth_scales (optional), outputs y and scale, the Int attribute dst_type
// (default INT8).
TEST(DynamicQuantByName, InputsOutputsAndDstType) {
  for (DType yd : {DType::kInt8, DType::kInt4}) {
    SCOPED_TRACE(mantissa::dtype_name(yd));
    Call ref(DType::kFloat16, yd, {4, 16}, true);
    ASSERT_TRUE(mantissa::dynamic_quant(ref.t, ref.p).ok());
    Call c(DType::kFloat16, yd, {4, 16}, true);
    const int64_t xs[] = {4, 16}, ss[] = {16}, sc[] = {4};
    aclTensorDesc* in[] = {aclCreateTensorDesc(ACL_FLOAT16, 2, xs, ACL_FORMAT_ND),
                           aclCreateTensorDesc(ACL_FLOAT16, 1, ss, ACL_FORMAT_ND)};
    aclDataBuffer* ib[] = {aclCreateDataBuffer(c.x.data(), c.x.bytes.size()),
                           aclCreateDataBuffer(c.s.data(), c.s.bytes.size())};
    aclTensorDesc* out[] = {aclCreateTensorDesc(static_cast<aclDataType>(yd), 2, xs, ACL_FORMAT_ND),
                            aclCreateTensorDesc(ACL_FLOAT, 1, sc, ACL_FORMAT_ND)};
    aclDataBuffer* ob[] = {aclCreateDataBuffer(c.y.data(), c.y.bytes.size()),
                           aclCreateDataBuffer(c.scale.data(), c.scale.bytes.size())};
    aclopAttr* attr = aclopCreateAttr();
    if (yd != DType::kInt8) {  // INT8 is the default
      ASSERT_EQ(aclopSetAttrInt(attr, "dst_type", static_cast<int64_t>(yd)), ACL_SUCCESS);
    }
    ASSERT_EQ(aclopCompileAndExecuteV2("DynamicQuant", 2, in, ib, 2, out, ob, attr, ACL_ENGINE_SYS,
                                       ACL_COMPILE_SYS, nullptr, nullptr),
              ACL_SUCCESS)
        << aclGetRecentErrMsg();
    expect_same_bits(c.y, ref.y, "y");
    expect_same_bits(c.scale, ref.scale, "scale");
    for (auto* d : in) aclDestroyTensorDesc(d);
    for (auto* d : out) aclDestroyTensorDesc(d);
    for (auto* b : ib) aclDestroyDataBuffer(b);
    for (auto* b : ob) aclDestroyDataBuffer(b);
    aclopDestroyAttr(attr);
  }
}

}  // namespace

}  // namespace mantissa::testing
