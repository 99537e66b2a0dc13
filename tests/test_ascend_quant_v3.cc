// AscendQuantV3: bits on every target and thread count (against the kit's golden32) for every
// round mode and output dtype, every tie of every round mode against values written by hand,
// saturation and NaN, INT4/INT32 packing, validation through the C++ API, aclnn (roundMode
// strings, a strided input) and op-by-name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_ascend_quant_v3.h"
#include "mantissa/ops/ascend_quant_v3.h"
#include "op_support.h"
#include "ops/ascend_quant_v3/ascend_quant_v3_desc.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::QuantRoundMode;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::AscendQuantV3Op;
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

const std::vector<QuantRoundMode> kModes{QuantRoundMode::kRound, QuantRoundMode::kFloor,
                                         QuantRoundMode::kCeil, QuantRoundMode::kTrunc};

struct Call {
  HostTensor x, s, o, y;
  mantissa::AscendQuantV3Tensors t;
  Call(DType xd, DType yd, std::vector<int64_t> shape, int64_t channels, bool offset, double spread)
      : x(filled(xd, shape, 0.0, spread, 1)),
        s(filled(xd == DType::kFloat32 ? DType::kFloat32 : xd, {channels}, 2.0, 0.5, 2)),
        o(filled(xd == DType::kFloat32 ? DType::kFloat32 : xd, {channels}, 0.0, 2.0, 3)),
        y(sentinel(yd, packed_shape(shape, yd))) {
    t.x = view(x), t.scale = view(s), t.y = view(y);
    if (offset) t.offset = view(o);
  }
};

TEST(AscendQuantV3, BitExactOnEveryTargetAndThreadCount) {
  struct Shape {
    std::vector<int64_t> dims;
    int64_t channels;
    int32_t axis;
  };
  const std::vector<Shape> shapes{
      {{3, 70000}, 1, -1}, {{6, 48}, 48, -1}, {{3, 5, 16}, 5, -2}, {{2, 40000}, 40000, 1}};
  for (DType xd : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (DType yd :
         {DType::kInt8, DType::kInt4, DType::kInt32, DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
      const bool fp8 = yd == DType::kFloat8E4M3FN || yd == DType::kFloat8E5M2;
      for (QuantRoundMode m : kModes) {
        if (fp8 && m != QuantRoundMode::kRound) continue;
        for (const Shape& sh : shapes) {
          // The shapes of several chunks (the first and the last) with one round mode: the
          // modes differ per lane, which the small shapes check on every target; the chunking
          // does not depend on the mode (every mode on them took three times as long).
          const bool several_chunks = sh.dims.back() >= 40000;
          if (several_chunks && m != QuantRoundMode::kRound) continue;
          for (bool sqrt_mode : {false, true}) {
            SCOPED_TRACE(std::string(mantissa::dtype_name(xd)) + " -> " + mantissa::dtype_name(yd) +
                         " " + mantissa::quant_round_mode_name(m) + " axis " +
                         std::to_string(sh.axis) + (sqrt_mode ? " sqrt" : ""));
            const mantissa::AscendQuantV3Params p{
                .sqrt_mode = sqrt_mode, .round_mode = m, .dst_type = yd, .axis = sh.axis};
            const double spread = yd == DType::kInt8 ? 20.0 : 2.0;
            Call ref(xd, yd, sh.dims, sh.channels, !sqrt_mode, spread);
            mt::apply_golden32<AscendQuantV3Op>(ref.t, p);
            mt::for_each_target_and_thread_count(
                [&](const std::string&, int) {
                  Call got(xd, yd, sh.dims, sh.channels, !sqrt_mode, spread);
                  ASSERT_TRUE(mantissa::ascend_quant_v3(got.t, p).ok());
                  expect_same_bits(got.y, ref.y, "y");
                },
                {1, 3});
          }
        }
      }
    }
  }
}

// x * 1 for x = k / 2, k in [-9, 9], and 2.7, -2.7: each mode by hand, INT8 and INT4.
TEST(AscendQuantV3, EveryModeAndTieByHand) {
  std::vector<float> xs;
  for (int k = -9; k <= 9; ++k) xs.push_back(static_cast<float>(k) / 2.0f);
  xs.push_back(2.7f), xs.push_back(-2.7f), xs.push_back(0.25f);  // an even count (INT4)
  auto expect = [](QuantRoundMode m, float v) {
    switch (m) {
      case QuantRoundMode::kFloor: return std::floor(v);
      case QuantRoundMode::kCeil: return std::ceil(v);
      case QuantRoundMode::kTrunc: return std::trunc(v);
      default: {
        // Half to even by hand.
        const float f = std::floor(v);
        if (v - f > 0.5f) return f + 1.0f;
        if (v - f < 0.5f) return f;
        return std::fmod(f, 2.0f) == 0.0f ? f : f + 1.0f;
      }
    }
  };
  HostTensor x(DType::kFloat32, {static_cast<int64_t>(xs.size())}), s(DType::kFloat32, {1});
  for (std::size_t i = 0; i < xs.size(); ++i) {
    x.set_bits(static_cast<int64_t>(i), std::bit_cast<uint32_t>(xs[i]));
  }
  s.set_bits(0, std::bit_cast<uint32_t>(1.0f));
  mt::for_each_target_and_thread_count(
      [&](const std::string&, int) {
        for (QuantRoundMode m : kModes) {
          for (DType yd : {DType::kInt8, DType::kInt4}) {
            SCOPED_TRACE(std::string(mantissa::quant_round_mode_name(m)) + " " +
                         mantissa::dtype_name(yd));
            HostTensor y = sentinel(yd, x.shape);
            ASSERT_TRUE(mantissa::ascend_quant_v3(
                            {.x = view(x), .scale = view(s), .offset = std::nullopt, .y = view(y)},
                            {.sqrt_mode = false, .round_mode = m, .dst_type = yd, .axis = -1})
                            .ok());
            for (std::size_t i = 0; i < xs.size(); ++i) {
              const double want = std::clamp<double>(
                  expect(m, xs[i]), yd == DType::kInt4 ? -8 : -128, yd == DType::kInt4 ? 7 : 127);
              EXPECT_EQ(y.value(static_cast<int64_t>(i)), want) << "x " << xs[i];
            }
          }
        }
      },
      {1});
}

// Saturation and NaN: INT8 +-1000 -> 127 / -128, INT4 +-1000 -> 7 / -8, NaN -> 0; FP8 +-1e6 ->
// +-max, NaN -> the canonical code. The INT32 word holds the INT4 codes, low nibble first.
TEST(AscendQuantV3, SaturationNanAndPacking) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> xs{1000.0f, -1000.0f, nan, 3.0f, -3.0f, 0.0f, 1.0f, -1.0f};
  HostTensor x(DType::kFloat32, {1, 8}), s(DType::kFloat32, {1});
  for (int64_t i = 0; i < 8; ++i) x.set_bits(i, std::bit_cast<uint32_t>(xs[i]));
  s.set_bits(0, std::bit_cast<uint32_t>(1.0f));
  auto run = [&](DType yd, HostTensor& y) {
    return mantissa::ascend_quant_v3(
        {.x = view(x), .scale = view(s), .offset = std::nullopt, .y = view(y)},
        {.sqrt_mode = false, .round_mode = QuantRoundMode::kRound, .dst_type = yd, .axis = -1});
  };
  HostTensor y8 = sentinel(DType::kInt8, {1, 8});
  ASSERT_TRUE(run(DType::kInt8, y8).ok());
  const std::vector<double> want8{127, -128, 0, 3, -3, 0, 1, -1};
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(y8.value(i), want8[i]) << i;
  HostTensor y32 = sentinel(DType::kInt32, {1, 1});
  ASSERT_TRUE(run(DType::kInt32, y32).ok());
  // Codes 7, -8, 0, 3, -3, 0, 1, -1 as nibbles 7, 8, 0, 3, D, 0, 1, F (element 0 lowest).
  EXPECT_EQ(y32.bits(0), 0xF10D3087u);
  HostTensor y4 = sentinel(DType::kInt4, {1, 8});
  ASSERT_TRUE(run(DType::kInt4, y4).ok());
  EXPECT_EQ(std::memcmp(y4.data(), y32.data(), 4), 0);
  HostTensor yf = sentinel(DType::kFloat8E4M3FN, {1, 8});
  ASSERT_TRUE(run(DType::kFloat8E4M3FN, yf).ok());
  EXPECT_EQ(yf.value(0), 448.0);
  EXPECT_EQ(yf.value(1), -448.0);
  EXPECT_EQ(yf.bits(2), 0x7Fu);
}

struct VCall {
  HostTensor x = filled(DType::kFloat16, {4, 8}, 0.0, 1.0, 7);
  HostTensor s = filled(DType::kFloat16, {8}, 2.0, 0.5, 1);
  HostTensor o = filled(DType::kFloat16, {8}, 0.0, 1.0, 2);
  HostTensor y = sentinel(DType::kInt8, {4, 8});
  mantissa::AscendQuantV3Params p{};
  mantissa::AscendQuantV3Tensors tensors() {
    return {.x = view(x), .scale = view(s), .offset = view(o), .y = view(y)};
  }
};

TEST(AscendQuantV3Validation, RowsThroughTheCppApi) {
  struct Row {
    const char* what;
    void (*mutate)(VCall&, mantissa::AscendQuantV3Tensors&, mantissa::AscendQuantV3Params&);
    StatusCode code;
    const char* named;
  };
  const std::vector<Row> rows{
      {"x missing", [](VCall&, auto& t, auto&) { t.x.data = nullptr; }, StatusCode::kParamNullptr,
       "x"},
      {"scale missing", [](VCall&, auto& t, auto&) { t.scale.data = nullptr; },
       StatusCode::kParamNullptr, "scale"},
      {"x dtype", [](VCall&, auto& t, auto&) { t.x.dtype = DType::kInt8; },
       StatusCode::kParamInvalid, "x"},
      {"scale dtype", [](VCall&, auto& t, auto&) { t.scale.dtype = DType::kBFloat16; },
       StatusCode::kParamInvalid, "scale"},
      {"offset dtype", [](VCall&, auto& t, auto&) { t.offset->dtype = DType::kBFloat16; },
       StatusCode::kParamInvalid, "offset"},
      {"offset shape", [](VCall&, auto& t, auto&) { t.offset->shape[0] = 4; },
       StatusCode::kParamInvalid, "offset"},
      {"scale size",
       [](VCall&, auto& t, auto& p) { t.scale.shape[0] = 4, t.offset = std::nullopt, p.axis = -1; },
       StatusCode::kParamInvalid, "scale"},
      {"round_mode 4",
       [](VCall&, auto&, auto& p) { p.round_mode = static_cast<QuantRoundMode>(4); },
       StatusCode::kParamInvalid, "round_mode"},
      {"FP8 with floor",
       [](VCall&, auto& t, auto& p) {
         t.y.dtype = DType::kFloat8E4M3FN, p.dst_type = DType::kFloat8E4M3FN;
         p.round_mode = QuantRoundMode::kFloor;
       },
       StatusCode::kParamInvalid, "round_mode"},
      {"dst_type differs from y", [](VCall&, auto&, auto& p) { p.dst_type = DType::kInt4; },
       StatusCode::kParamInvalid, "dst_type"},
      {"axis 0 of a rank-3 x",
       [](VCall&, auto& t, auto& p) {
         t.x.rank = 3, t.x.shape = {1, 4, 8}, t.y.rank = 3, t.y.shape = {1, 4, 8};
         p.axis = 0;
       },
       StatusCode::kParamInvalid, "axis"},
      {"axis 2", [](VCall&, auto&, auto& p) { p.axis = 2; }, StatusCode::kParamInvalid, "axis"},
      {"y INT32 shape",
       [](VCall&, auto& t, auto& p) { t.y.dtype = DType::kInt32, p.dst_type = DType::kInt32; },
       StatusCode::kParamInvalid, "INT32"},
      {"y overlaps x", [](VCall& c, auto& t, auto&) { t.y.data = c.x.data(); },
       StatusCode::kParamInvalid, "y"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    VCall c;
    mantissa::AscendQuantV3Tensors t = c.tensors();
    r.mutate(c, t, c.p);
    const mantissa::Status s = mantissa::ascend_quant_v3(t, c.p);
    EXPECT_EQ(s.code(), r.code) << s.message();
    EXPECT_NE(s.message().find(r.named), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("AscendQuantV2"), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(c.y));
  }
}

// roundMode strings map to the modes; unknown ones, "hybrid" and null are refused; a transposed
// x staged through the workspace gives the contiguous bits.
TEST(AscendQuantV3Aclnn, RoundModeStringsAndStridedInput) {
  VCall ref;
  ref.p.round_mode = QuantRoundMode::kCeil;
  ASSERT_TRUE(mantissa::ascend_quant_v3(ref.tensors(), ref.p).ok());
  HostTensor xt(DType::kFloat16, {8, 4});
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < 8; ++i) xt.set_bits(i * 4 + r, ref.x.bits(r * 8 + i));
  }
  TensorView xv = view(xt);
  xv.shape = {4, 8};
  VCall c;
  aclTensor* x = acl(xv, {1, 4}, {8, 4});
  aclTensor* s = acl(view(ref.s));
  aclTensor* o = acl(view(ref.o));
  aclTensor* y = acl(view(c.y));
  ASSERT_EQ(run_two_phases(
                [&](uint64_t* size, aclOpExecutor** e) {
                  return aclnnAscendQuantV3GetWorkspaceSize(x, s, o, false, "ceil", 2, -1, y, size,
                                                            e);
                },
                [](void* ws, uint64_t size, aclOpExecutor* e) {
                  return aclnnAscendQuantV3(ws, size, e, nullptr);
                }),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(c.y, ref.y, "y");
  VCall n;
  aclTensor* y2 = acl(view(n.y));
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  for (const char* bad : {"hybrid", "Round", "nearest"}) {
    EXPECT_EQ(aclnnAscendQuantV3GetWorkspaceSize(x, s, o, false, bad, 2, -1, y2, &size, &e),
              ACLNN_ERR_PARAM_INVALID)
        << bad;
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("roundMode"), std::string::npos);
  }
  EXPECT_EQ(aclnnAscendQuantV3GetWorkspaceSize(x, s, o, false, nullptr, 2, -1, y2, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnAscendQuantV3GetWorkspaceSize(x, s, o, false, "round", 3, -1, y2, &size, &e),
            ACLNN_ERR_PARAM_INVALID);  // y is INT8
  EXPECT_TRUE(untouched(n.y));
  for (aclTensor* t : {x, s, o, y, y2}) aclDestroyTensor(t);
}

// By name: AscendQuantV2 with x, scale, offset, output y, attributes sqrt_mode, round_mode (an
// Int holding the mode number), dst_type, axis.
TEST(AscendQuantV3ByName, InputsAndAttributes) {
  VCall ref;
  ref.p.round_mode = QuantRoundMode::kTrunc;
  ref.p.sqrt_mode = true;
  ASSERT_TRUE(mantissa::ascend_quant_v3(ref.tensors(), ref.p).ok());
  VCall c;
  const int64_t xs[] = {4, 8}, ss[] = {8};
  aclTensorDesc* in[] = {aclCreateTensorDesc(ACL_FLOAT16, 2, xs, ACL_FORMAT_ND),
                         aclCreateTensorDesc(ACL_FLOAT16, 1, ss, ACL_FORMAT_ND),
                         aclCreateTensorDesc(ACL_FLOAT16, 1, ss, ACL_FORMAT_ND)};
  aclDataBuffer* ib[] = {aclCreateDataBuffer(c.x.data(), c.x.bytes.size()),
                         aclCreateDataBuffer(c.s.data(), c.s.bytes.size()),
                         aclCreateDataBuffer(c.o.data(), c.o.bytes.size())};
  aclTensorDesc* out[] = {aclCreateTensorDesc(ACL_INT8, 2, xs, ACL_FORMAT_ND)};
  aclDataBuffer* ob[] = {aclCreateDataBuffer(c.y.data(), c.y.bytes.size())};
  aclopAttr* attr = aclopCreateAttr();
  ASSERT_EQ(aclopSetAttrBool(attr, "sqrt_mode", 1), ACL_SUCCESS);
  ASSERT_EQ(aclopSetAttrInt(attr, "round_mode", 3), ACL_SUCCESS);
  ASSERT_EQ(aclopCompileAndExecuteV2("AscendQuantV2", 3, in, ib, 1, out, ob, attr, ACL_ENGINE_SYS,
                                     ACL_COMPILE_SYS, nullptr, nullptr),
            ACL_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(c.y, ref.y, "y");
  // CANN's String form: "trunc" gives the same bits; "hybrid" is refused.
  std::memset(c.y.data(), mt::kSentinel, c.y.bytes.size());
  ASSERT_EQ(aclopSetAttrString(attr, "round_mode", "trunc"), ACL_SUCCESS);
  ASSERT_EQ(aclopCompileAndExecuteV2("AscendQuantV2", 3, in, ib, 1, out, ob, attr, ACL_ENGINE_SYS,
                                     ACL_COMPILE_SYS, nullptr, nullptr),
            ACL_SUCCESS)
      << aclGetRecentErrMsg();
  expect_same_bits(c.y, ref.y, "y (round_mode \"trunc\")");
  std::memset(c.y.data(), mt::kSentinel, c.y.bytes.size());
  ASSERT_EQ(aclopSetAttrString(attr, "round_mode", "hybrid"), ACL_SUCCESS);
  EXPECT_NE(aclopCompileAndExecuteV2("AscendQuantV2", 3, in, ib, 1, out, ob, attr, ACL_ENGINE_SYS,
                                     ACL_COMPILE_SYS, nullptr, nullptr),
            ACL_SUCCESS);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("round_mode"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(untouched(c.y));
  for (auto* d : in) aclDestroyTensorDesc(d);
  for (auto* d : out) aclDestroyTensorDesc(d);
  for (auto* b : ib) aclDestroyDataBuffer(b);
  for (auto* b : ob) aclDestroyDataBuffer(b);
  aclopDestroyAttr(attr);
}

}  // namespace

}  // namespace mantissa::testing
