// Quantize: bits on every target and thread count (against the kit's golden32), every tie and
// the saturation of each output dtype against values written by hand, NaN and infinities,
// per-tensor and per-channel scales on every axis, validation through the C++ API, aclnn with a
// strided input, and op-by-name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quantize.h"
#include "mantissa/ops/quantize.h"
#include "op_support.h"
#include "ops/quantize/quantize_desc.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::QuantizeOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::run_two_phases;
using mt::sentinel;
using mt::untouched;
using mt::view;

const std::vector<DType> kOutputs{DType::kInt8, DType::kUInt8, DType::kInt32, DType::kFloat8E4M3FN,
                                  DType::kFloat8E5M2};

HostTensor uniform_scales(DType d, int64_t n, double lo, double hi, uint32_t seed) {
  HostTensor h(d, {n});
  for (int64_t i = 0; i < n; ++i) {
    const double u =
        lo + (hi - lo) * static_cast<double>((seed * 2654435761u + i * 40503u) % 1000) / 1000.0;
    h.set_bits(i, mantissa::precision::round_to_bits(u, d));
  }
  return h;
}

HostTensor int_tensor(DType d, int64_t n, int64_t lo, int64_t hi) {
  HostTensor h(d, {n});
  for (int64_t i = 0; i < n; ++i) {
    h.set_bits(i, static_cast<uint32_t>(static_cast<int32_t>(lo + (i * 37) % (hi - lo + 1))));
  }
  return h;
}

struct Problem {
  DType x, y;
  std::vector<int64_t> shape;
  int64_t channels;  // 1: per tensor
  int32_t axis;
  std::optional<DType> zp;
};

std::vector<Problem> problems() {
  std::vector<Problem> p;
  for (DType x : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (DType y : kOutputs) {
      const DType zp = y == DType::kFloat8E4M3FN || y == DType::kFloat8E5M2 ? DType::kFloat32 : y;
      p.push_back({x, y, {3, 70001}, 1, 1, std::nullopt});  // several parallel pieces
      p.push_back({x, y, {5, 3, 37}, 1, 1, zp});
      p.push_back({x, y, {6, 33}, 33, 1, zp});                   // last axis: per-lane scales
      p.push_back({x, y, {7, 70}, 7, 0, zp});                    // first axis
      p.push_back({x, y, {3, 5, 19}, 5, -2, zp});                // middle axis
      p.push_back({x, y, {2, 40000}, 40000, -1, std::nullopt});  // a row across pieces
    }
  }
  return p;
}

struct Call {
  HostTensor x, s, z, y;
  mantissa::QuantizeTensors t;
  Call(const Problem& pr, double spread)
      : x(filled(pr.x, pr.shape, 0.0, spread, 1)),
        s(uniform_scales(pr.x == DType::kFloat32 ? DType::kFloat32 : pr.x, pr.channels, 0.01, 0.05,
                         2)),
        y(sentinel(pr.y, pr.shape)) {
    if (pr.zp) {
      if (*pr.zp == DType::kInt8) z = int_tensor(*pr.zp, pr.channels, -20, 20);
      if (*pr.zp == DType::kUInt8) z = int_tensor(*pr.zp, pr.channels, 100, 150);
      if (*pr.zp == DType::kInt32) z = int_tensor(*pr.zp, pr.channels, -1000, 1000);
      if (*pr.zp == DType::kFloat32) z = filled(DType::kFloat32, {pr.channels}, 0.0, 2.0, 3);
    }
    t.x = view(x), t.scales = view(s), t.y = view(y);
    if (pr.zp) t.zero_points = view(z);
  }
};

TEST(Quantize, BitExactOnEveryTargetAndThreadCount) {
  for (const Problem& pr : problems()) {
    SCOPED_TRACE(std::string(mantissa::dtype_name(pr.x)) + " -> " + mantissa::dtype_name(pr.y) +
                 " channels " + std::to_string(pr.channels) + " axis " + std::to_string(pr.axis));
    const mantissa::QuantizeParams p{.dtype = pr.y, .axis = pr.axis};
    Call ref(pr, 3.0);
    mt::apply_golden32<QuantizeOp>(ref.t, p);
    mt::for_each_target_and_thread_count([&](const std::string&, int) {
      Call got(pr, 3.0);
      ASSERT_TRUE(mantissa::quantize(got.t, p).ok());
      expect_same_bits(got.y, ref.y, "y");
    });
  }
}

// x / 0.5 lands on k/2 for k in [-12, 12]: ties go to even, on every target.
TEST(Quantize, TiesGoToEvenOnEveryTarget) {
  HostTensor x(DType::kFloat32, {25}), s(DType::kFloat32, {1});
  for (int k = -12; k <= 12; ++k) x.set_bits(k + 12, std::bit_cast<uint32_t>(k / 4.0f));
  s.set_bits(0, std::bit_cast<uint32_t>(0.5f));
  mt::for_each_target_and_thread_count(
      [&](const std::string&, int) {
        for (DType d : {DType::kInt8, DType::kInt32}) {
          HostTensor y = sentinel(d, {25});
          ASSERT_TRUE(
              mantissa::quantize(
                  {.x = view(x), .scales = view(s), .zero_points = std::nullopt, .y = view(y)},
                  {.dtype = d, .axis = 0})
                  .ok());
          for (int k = -12; k <= 12; ++k) {
            // k / 2 rounded half to even, by hand: floor, then up when past .5 or on an odd .5.
            const int fl = (k >= 0 ? k : k - 1) / 2;  // floor(k / 2)
            int expect = fl;
            if (k % 2 != 0 && (fl % 2 != 0)) expect = fl + 1;
            EXPECT_EQ(y.value(k + 12), expect) << mantissa::dtype_name(d) << " k " << k;
          }
        }
      },
      {1});
}

// Saturation, NaN and infinities for each dtype, values written by hand.
TEST(Quantize, SaturationNanAndInfinities) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> xs{
      300.0f, -300.0f, 3e9f, -3e9f, 1e6f, -1e6f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
      -0.0f,  17.0f,   19.0f};
  struct Expect {
    DType d;
    std::vector<double> values;  // decoded outputs; NaN compared by code below
  };
  const double nan = std::nan("");
  const std::vector<Expect> expects{
      {DType::kInt8, {127, -128, 127, -128, 127, -128, 127, -128, 0, 0, 17, 19}},
      {DType::kUInt8, {255, 0, 255, 0, 255, 0, 255, 0, 0, 0, 17, 19}},
      {DType::kInt32,
       {300, -300, 2147483647, -2147483648.0, 1e6, -1e6, 2147483647, -2147483648.0, 0, 0, 17, 19}},
      // E4M3FN: 16 and 18 are neighbours (17: tie to 16, even), 18 and 20 (19: tie to 20).
      {DType::kFloat8E4M3FN, {288, -288, 448, -448, 448, -448, 448, -448, nan, -0.0, 16, 20}},
      {DType::kFloat8E5M2,
       {320, -320, 57344, -57344, 57344, -57344, 57344, -57344, nan, -0.0, 16, 20}},
  };
  HostTensor x(DType::kFloat32, {static_cast<int64_t>(xs.size())}), s(DType::kFloat32, {1});
  for (std::size_t i = 0; i < xs.size(); ++i) {
    x.set_bits(static_cast<int64_t>(i), std::bit_cast<uint32_t>(xs[i]));
  }
  s.set_bits(0, std::bit_cast<uint32_t>(1.0f));
  mt::for_each_target_and_thread_count(
      [&](const std::string&, int) {
        for (const Expect& e : expects) {
          SCOPED_TRACE(mantissa::dtype_name(e.d));
          HostTensor y = sentinel(e.d, x.shape);
          ASSERT_TRUE(
              mantissa::quantize(
                  {.x = view(x), .scales = view(s), .zero_points = std::nullopt, .y = view(y)},
                  {.dtype = e.d, .axis = 0})
                  .ok());
          for (std::size_t i = 0; i < xs.size(); ++i) {
            const double got = y.value(static_cast<int64_t>(i));
            if (std::isnan(e.values[i])) {
              // The canonical NaN codes.
              EXPECT_EQ(y.bits(static_cast<int64_t>(i)),
                        e.d == DType::kFloat8E4M3FN ? 0x7Fu : 0x7Eu);
            } else {
              EXPECT_EQ(got, e.values[i]) << "x " << xs[i];
              EXPECT_EQ(std::signbit(got), std::signbit(e.values[i])) << "x " << xs[i];
            }
          }
        }
      },
      {1});
}

// Zero points of every dtype shift before rounding and saturation: 2.5 + 1 = 3.5 -> 4, 126.6 +
// 1 -> 127.6 -> 127 (saturated), uint8 250 + 10 -> 255.
TEST(Quantize, ZeroPointsOfEveryDtype) {
  HostTensor x(DType::kFloat32, {2, 2}), s(DType::kFloat32, {2});
  const float xv[] = {2.5f, 126.6f, 250.0f, -0.4f};
  for (int i = 0; i < 4; ++i) x.set_bits(i, std::bit_cast<uint32_t>(xv[i]));
  s.set_bits(0, std::bit_cast<uint32_t>(1.0f)), s.set_bits(1, std::bit_cast<uint32_t>(1.0f));
  struct Row {
    DType y, z;
    std::vector<double> zp, expect;
  };
  const std::vector<Row> rows{
      {DType::kInt8, DType::kInt8, {1, 1}, {4, 127, 127, 1}},
      {DType::kInt8, DType::kInt32, {1, -200}, {4, -73, 127, -200 < -128 ? -128 : 0}},
      {DType::kUInt8, DType::kUInt8, {10, 10}, {12, 137, 255, 10}},
      {DType::kInt32, DType::kFloat32, {0.5, 0.25}, {3, 127, 250, 0}},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(mantissa::dtype_name(r.y)) + " zp " + mantissa::dtype_name(r.z));
    HostTensor z(r.z, {2});
    for (int64_t i = 0; i < 2; ++i) {
      z.set_bits(i, r.z == DType::kFloat32 ? std::bit_cast<uint32_t>(static_cast<float>(r.zp[i]))
                                           : static_cast<uint32_t>(static_cast<int32_t>(r.zp[i])));
    }
    HostTensor y = sentinel(r.y, {2, 2});
    ASSERT_TRUE(
        mantissa::quantize({.x = view(x), .scales = view(s), .zero_points = view(z), .y = view(y)},
                           {.dtype = r.y, .axis = 1})
            .ok());
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(y.value(i), r.expect[i]) << i;
  }
}

struct VCall {
  HostTensor x = filled(DType::kFloat16, {4, 8}, 0.0, 1.0, 7);
  HostTensor s = uniform_scales(DType::kFloat32, 8, 0.1, 0.2, 1);
  HostTensor z = int_tensor(DType::kInt8, 8, -3, 3);
  HostTensor y = sentinel(DType::kInt8, {4, 8});
  mantissa::QuantizeParams p{.dtype = DType::kInt8, .axis = 1};
  mantissa::QuantizeTensors tensors() {
    return {.x = view(x), .scales = view(s), .zero_points = view(z), .y = view(y)};
  }
};

TEST(QuantizeValidation, RowsThroughTheCppApi) {
  struct Row {
    const char* what;
    void (*mutate)(VCall&, mantissa::QuantizeTensors&);
    StatusCode code;
    const char* named;
  };
  const std::vector<Row> rows{
      {"x missing", [](VCall&, auto& t) { t.x.data = nullptr; }, StatusCode::kParamNullptr, "x"},
      {"scales missing", [](VCall&, auto& t) { t.scales.data = nullptr; },
       StatusCode::kParamNullptr, "scales"},
      {"y missing", [](VCall&, auto& t) { t.y.data = nullptr; }, StatusCode::kParamNullptr, "y"},
      {"x dtype", [](VCall&, auto& t) { t.x.dtype = DType::kInt32; }, StatusCode::kParamInvalid,
       "x"},
      {"x rank 0", [](VCall&, auto& t) { t.x.rank = 0, t.y.rank = 0; }, StatusCode::kParamInvalid,
       "x"},
      {"scales dtype", [](VCall&, auto& t) { t.scales.dtype = DType::kInt32; },
       StatusCode::kParamInvalid, "scales"},
      {"scales fp16 with x fp32",
       [](VCall& c, auto& t) {
         t.x.dtype = DType::kFloat32, t.x.data = c.y.data();  // any buffer large enough
         t.scales.dtype = DType::kFloat16;
       },
       StatusCode::kParamInvalid, "scales"},
      {"scales rank 2",
       [](VCall&, auto& t) {
         t.scales.rank = 2, t.scales.shape = {1, 8};
       },
       StatusCode::kParamInvalid, "scales"},
      {"scales size", [](VCall&, auto& t) { t.scales.shape[0] = 3; }, StatusCode::kParamInvalid,
       "scales"},
      {"zero_points size", [](VCall&, auto& t) { t.zero_points->shape[0] = 1; },
       StatusCode::kParamInvalid, "zero_points"},
      {"zero_points dtype", [](VCall&, auto& t) { t.zero_points->dtype = DType::kFloat16; },
       StatusCode::kParamInvalid, "zero_points"},
      {"zero_points bf16 with x fp16",
       [](VCall&, auto& t) {
         t.zero_points->dtype = DType::kBFloat16, t.zero_points->shape[0] = 4;
       },
       StatusCode::kParamInvalid, "zero_points"},
      {"y dtype differs from dtype", [](VCall&, auto& t) { t.y.dtype = DType::kUInt8; },
       StatusCode::kParamInvalid, "dtype"},
      {"y dtype not a quantized one", [](VCall&, auto& t) { t.y.dtype = DType::kFloat16; },
       StatusCode::kParamInvalid, "y"},
      {"y shape", [](VCall&, auto& t) { t.y.shape[0] = 2; }, StatusCode::kParamInvalid, "y"},
      {"y overlaps x", [](VCall& c, auto& t) { t.y.data = c.x.data(); }, StatusCode::kParamInvalid,
       "y"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    VCall c;
    mantissa::QuantizeTensors t = c.tensors();
    r.mutate(c, t);
    const mantissa::Status s = mantissa::quantize(t, c.p);
    EXPECT_EQ(s.code(), r.code) << s.message();
    EXPECT_NE(s.message().find(r.named), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("Quantize"), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(c.y));
  }
  // Attribute rows.
  struct PRow {
    const char* what;
    mantissa::QuantizeParams p;
    const char* named;
  };
  const std::vector<PRow> prows{
      {"dtype HIFLOAT8", {.dtype = DType::kHiFloat8, .axis = 1}, "HIFLOAT8"},
      {"dtype FLOAT", {.dtype = DType::kFloat32, .axis = 1}, "dtype"},
      {"axis 2", {.dtype = DType::kInt8, .axis = 2}, "axis"},
      {"axis -3", {.dtype = DType::kInt8, .axis = -3}, "axis"},
      {"axis 0: 8 scales for a dim of 4", {.dtype = DType::kInt8, .axis = 0}, "scales"},
  };
  for (const PRow& r : prows) {
    SCOPED_TRACE(r.what);
    VCall c;
    const mantissa::Status s = mantissa::quantize(c.tensors(), r.p);
    EXPECT_EQ(s.code(), StatusCode::kParamInvalid) << s.message();
    EXPECT_NE(s.message().find(r.named), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(c.y));
  }
  // One scale: axis is not used (its default 1 with a rank-1 x is accepted).
  HostTensor x1 = filled(DType::kFloat32, {5}, 0.0, 1.0, 3),
             s1 = uniform_scales(DType::kFloat32, 1, 0.1, 0.1, 1);
  HostTensor y1 = sentinel(DType::kInt8, {5});
  EXPECT_TRUE(mantissa::quantize(
                  {.x = view(x1), .scales = view(s1), .zero_points = std::nullopt, .y = view(y1)},
                  {.dtype = DType::kInt8, .axis = 1})
                  .ok());
  EXPECT_FALSE(untouched(y1));
}

// A transposed x staged through the workspace gives the contiguous bits; a strided FP8 output
// too; null zero points are accepted; null x is 161001.
TEST(QuantizeAclnn, StridedTensorsAndNulls) {
  VCall ref;
  ref.p.dtype = DType::kFloat8E4M3FN;
  ref.y = sentinel(DType::kFloat8E4M3FN, {4, 8});
  HostTensor zf = filled(DType::kFloat32, {8}, 0.0, 2.0, 5);
  mantissa::QuantizeTensors rt = ref.tensors();
  rt.zero_points = view(zf);
  ASSERT_TRUE(mantissa::quantize(rt, ref.p).ok());
  // x^T stored as [8][4] and viewed as [4, 8] with strides {1, 4}; y stored transposed too.
  HostTensor xt(DType::kFloat16, {8, 4}), yt = sentinel(DType::kFloat8E4M3FN, {8, 4});
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < 8; ++i) xt.set_bits(i * 4 + r, ref.x.bits(r * 8 + i));
  }
  TensorView xv = view(xt), yv = view(yt);
  xv.shape = {4, 8}, yv.shape = {4, 8};
  aclTensor* x = acl(xv, {1, 4}, {8, 4});
  aclTensor* s = acl(view(ref.s));
  aclTensor* z = acl(view(zf));
  aclTensor* y = acl(yv, {1, 4}, {8, 4});
  ASSERT_EQ(run_two_phases(
                [&](uint64_t* size, aclOpExecutor** e) {
                  return aclnnQuantizeGetWorkspaceSize(x, s, z, ACL_FLOAT8_E4M3FN, 1, y, size, e);
                },
                [](void* ws, uint64_t size, aclOpExecutor* e) {
                  return aclnnQuantize(ws, size, e, nullptr);
                }),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(yt.bits(i * 4 + r), ref.y.bits(r * 8 + i));
  }
  // Null zero points: x / scale alone.
  HostTensor y2 = sentinel(DType::kInt8, {4, 8}), y2ref = sentinel(DType::kInt8, {4, 8});
  mantissa::QuantizeTensors t2 = ref.tensors();
  t2.zero_points = std::nullopt, t2.y = view(y2ref);
  ASSERT_TRUE(mantissa::quantize(t2, {.dtype = DType::kInt8, .axis = -1}).ok());
  aclTensor* yc = acl(view(y2));
  ASSERT_EQ(run_two_phases(
                [&](uint64_t* size, aclOpExecutor** e) {
                  return aclnnQuantizeGetWorkspaceSize(x, s, nullptr, ACL_INT8, -1, yc, size, e);
                },
                [](void* ws, uint64_t size, aclOpExecutor* e) {
                  return aclnnQuantize(ws, size, e, nullptr);
                }),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(y2, y2ref, "y (no zero points)");
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  HostTensor y3 = sentinel(DType::kInt8, {4, 8});
  aclTensor* y3h = acl(view(y3));
  EXPECT_EQ(aclnnQuantizeGetWorkspaceSize(nullptr, s, z, ACL_INT8, 1, y3h, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnQuantizeGetWorkspaceSize(x, s, z, ACL_UINT8, 1, y3h, &size, &e),
            ACLNN_ERR_PARAM_INVALID);  // out is INT8
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("dtype"), std::string::npos);
  EXPECT_TRUE(untouched(y3));
  for (aclTensor* t : {x, s, z, y, yc, y3h}) aclDestroyTensor(t);
}

aclError by_name(std::vector<std::pair<aclDataType, std::vector<int64_t>>> in,
                 std::vector<void*> in_data, std::vector<std::size_t> in_bytes,
                 std::pair<aclDataType, std::vector<int64_t>> out, void* out_data,
                 std::size_t out_bytes, aclopAttr* attr) {
  std::vector<aclTensorDesc*> id;
  std::vector<aclDataBuffer*> ib;
  for (std::size_t i = 0; i < in.size(); ++i) {
    id.push_back(aclCreateTensorDesc(in[i].first, static_cast<int>(in[i].second.size()),
                                     in[i].second.data(), ACL_FORMAT_ND));
    ib.push_back(aclCreateDataBuffer(in_data[i], in_bytes[i]));
  }
  aclTensorDesc* od = aclCreateTensorDesc(out.first, static_cast<int>(out.second.size()),
                                          out.second.data(), ACL_FORMAT_ND);
  aclDataBuffer* ob = aclCreateDataBuffer(out_data, out_bytes);
  const aclError rc =
      aclopCompileAndExecuteV2("Quantize", static_cast<int>(id.size()), id.data(), ib.data(), 1,
                               &od, &ob, attr, ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, nullptr);
  for (auto* d : id) aclDestroyTensorDesc(d);
  for (auto* b : ib) aclDestroyDataBuffer(b);
  aclDestroyTensorDesc(od);
  aclDestroyDataBuffer(ob);
  return rc;
}

// By name: x, scales, zero_points (optional: an ACL_DT_UNDEFINED descriptor), the Int attribute
// dtype (required) and axis (default 1).
TEST(QuantizeByName, InputsAndAttributes) {
  VCall ref;
  ASSERT_TRUE(mantissa::quantize(ref.tensors(), ref.p).ok());
  VCall c;
  aclopAttr* attr = aclopCreateAttr();
  ASSERT_EQ(aclopSetAttrInt(attr, "dtype", ACL_INT8), ACL_SUCCESS);
  ASSERT_EQ(by_name({{ACL_FLOAT16, {4, 8}}, {ACL_FLOAT, {8}}, {ACL_INT8, {8}}},
                    {c.x.data(), c.s.data(), c.z.data()},
                    {c.x.bytes.size(), c.s.bytes.size(), c.z.bytes.size()}, {ACL_INT8, {4, 8}},
                    c.y.data(), c.y.bytes.size(), attr),
            ACL_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(c.y, ref.y, "y");
  // Without dtype: refused, nothing written.
  aclopDestroyAttr(attr);
  attr = aclopCreateAttr();
  HostTensor y2 = sentinel(DType::kInt8, {4, 8});
  EXPECT_NE(by_name({{ACL_FLOAT16, {4, 8}}, {ACL_FLOAT, {8}}, {ACL_INT8, {8}}},
                    {c.x.data(), c.s.data(), c.z.data()},
                    {c.x.bytes.size(), c.s.bytes.size(), c.z.bytes.size()}, {ACL_INT8, {4, 8}},
                    y2.data(), y2.bytes.size(), attr),
            ACL_SUCCESS);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("dtype"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(untouched(y2));
  aclopDestroyAttr(attr);
  // CANN's String form of dtype: "torch.qint8" is INT8; an unknown string is refused.
  VCall c3;
  attr = aclopCreateAttr();
  ASSERT_EQ(aclopSetAttrString(attr, "dtype", "torch.qint8"), ACL_SUCCESS);
  ASSERT_EQ(by_name({{ACL_FLOAT16, {4, 8}}, {ACL_FLOAT, {8}}, {ACL_INT8, {8}}},
                    {c.x.data(), c.s.data(), c.z.data()},
                    {c.x.bytes.size(), c.s.bytes.size(), c.z.bytes.size()}, {ACL_INT8, {4, 8}},
                    c3.y.data(), c3.y.bytes.size(), attr),
            ACL_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(c3.y, ref.y, "y (dtype \"torch.qint8\")");
  ASSERT_EQ(aclopSetAttrString(attr, "dtype", "torch.int8"), ACL_SUCCESS);
  HostTensor y4 = sentinel(DType::kInt8, {4, 8});
  EXPECT_NE(by_name({{ACL_FLOAT16, {4, 8}}, {ACL_FLOAT, {8}}, {ACL_INT8, {8}}},
                    {c.x.data(), c.s.data(), c.z.data()},
                    {c.x.bytes.size(), c.s.bytes.size(), c.z.bytes.size()}, {ACL_INT8, {4, 8}},
                    y4.data(), y4.bytes.size(), attr),
            ACL_SUCCESS);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("torch.quint8"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(untouched(y4));
  // A string for an attribute that has none (axis) is refused.
  ASSERT_EQ(aclopSetAttrString(attr, "dtype", "torch.qint8"), ACL_SUCCESS);
  ASSERT_EQ(aclopSetAttrString(attr, "axis", "1"), ACL_SUCCESS);
  EXPECT_NE(by_name({{ACL_FLOAT16, {4, 8}}, {ACL_FLOAT, {8}}, {ACL_INT8, {8}}},
                    {c.x.data(), c.s.data(), c.z.data()},
                    {c.x.bytes.size(), c.s.bytes.size(), c.z.bytes.size()}, {ACL_INT8, {4, 8}},
                    y4.data(), y4.bytes.size(), attr),
            ACL_SUCCESS);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("axis"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(untouched(y4));
  aclopDestroyAttr(attr);
}

}  // namespace

}  // namespace mantissa::testing
