// ForeachNonFiniteCheckAndUnscale through the C++ API: bitwise against the kit's golden32 on
// every SIMD target and thread count for lists of 1, 3 and 300 tensors of mixed sizes and dtypes
// (empty and one-element tensors included), special values, the read-only check at invScale 1,
// the check judged on inputs, and every validation row with nothing written.
//
// Below the C++ API's tests: the aclnn two-phase entry, each section headed "// ====".

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_foreach_non_finite_check_and_unscale.h"
#include "aclop_support.h"
#include "mantissa/dtype.h"
#include "mantissa/ops/foreach_non_finite_check_and_unscale.h"
#include "op_support.h"

namespace mantissa::testing {

namespace {

using Op = detail::ForeachNonFiniteCheckAndUnscaleOp;

// A list of gradients in one arena each, with found_inf and inv_scale.
struct Problem {
  std::vector<std::vector<uint8_t>> mem;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DType> dtypes;
  float found = 0.0f, inv = 1.0f;

  void add(DType d, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    mem.emplace_back(static_cast<size_t>(n) * dtype_size(d) + 4, 0);
    shapes.push_back(std::move(shape));
    dtypes.push_back(d);
  }
  int64_t numel(size_t k) const {
    int64_t n = 1;
    for (int64_t s : shapes[k]) n *= s;
    return n;
  }
  // Normal values around 0 with spread `spread`; `special_pct` percent special values.
  void fill(uint64_t seed, float spread, int special_pct) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, spread);
    for (size_t k = 0; k < mem.size(); ++k) {
      const std::vector<uint32_t> specials = testing::special_bits(dtypes[k]);
      for (int64_t i = 0; i < numel(k); ++i) {
        if (static_cast<int>(rng() % 100) < special_pct) {
          const uint32_t bits = specials[rng() % specials.size()];
          std::memcpy(mem[k].data() + i * dtype_size(dtypes[k]), &bits, dtype_size(dtypes[k]));
        } else {
          store_from_float(dtypes[k], mem[k].data(), i, normal(rng));
        }
      }
    }
  }
  std::vector<TensorView> views() {
    std::vector<TensorView> v;
    for (size_t k = 0; k < mem.size(); ++k) {
      v.emplace_back(mem[k].data(), dtypes[k], std::span<const int64_t>(shapes[k]));
    }
    return v;
  }
  Status run(std::vector<TensorView>& v) {
    ForeachNonFiniteCheckAndUnscaleTensors t{.scaled_grads = v,
                                             .found_inf = TensorView(&found, DType::kFloat32, {1}),
                                             .inv_scale = TensorView(&inv, DType::kFloat32, {1})};
    return foreach_non_finite_check_and_unscale(t);
  }
  void golden() {
    std::vector<TensorView> v = views();
    ForeachNonFiniteCheckAndUnscaleTensors t{.scaled_grads = v,
                                             .found_inf = TensorView(&found, DType::kFloat32, {1}),
                                             .inv_scale = TensorView(&inv, DType::kFloat32, {1})};
    testing::apply_golden32<Op>(t, {});
  }
  bool same_bits(const Problem& o) const {
    if (std::memcmp(&found, &o.found, 4) != 0) return false;
    for (size_t k = 0; k < mem.size(); ++k) {
      if (mem[k] != o.mem[k]) return false;
    }
    return true;
  }
};

// Every target and thread count gives golden32's bits.
void expect_golden_everywhere(const Problem& input) {
  Problem want = input;
  want.golden();
  testing::for_each_target_and_thread_count([&](const std::string&, int) {
    Problem got = input;
    std::vector<TensorView> v = got.views();
    const Status st = got.run(v);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(got.same_bits(want));
  });
}

Problem mixed_list(size_t count, uint64_t seed) {
  Problem p;
  const DType dtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  std::mt19937_64 rng(seed);
  for (size_t k = 0; k < count; ++k) {
    const int64_t kind = static_cast<int64_t>(rng() % 10);
    std::vector<int64_t> shape;
    if (kind == 0)
      shape = {0};  // empty
    else if (kind == 1)
      shape = {};  // rank 0: one element
    else if (kind == 2)
      shape = {1, 1};  // one element
    else if (kind == 3)
      shape = {70000};  // spans several chunks
    else
      shape = {static_cast<int64_t>(rng() % 300) + 1, 3};
    p.add(dtypes[rng() % 3], shape);
  }
  return p;
}

TEST(ForeachNonFiniteCheckAndUnscale, ListsOfOneThreeAndThreeHundredMatchTheReference) {
  for (size_t count : {size_t{1}, size_t{3}, size_t{300}}) {
    SCOPED_TRACE("tensors " + std::to_string(count));
    Problem p = mixed_list(count, count);
    p.fill(count * 7, 1000.0f, 0);
    p.inv = 1.0f / 65536;
    expect_golden_everywhere(p);
    p.inv = 0.3f;  // not a power of two: every product rounds
    expect_golden_everywhere(p);
  }
}

TEST(ForeachNonFiniteCheckAndUnscale, SpecialValuesSetFoundInfAndMatchTheReference) {
  Problem p = mixed_list(40, 3);
  p.fill(11, 10.0f, 5);
  p.inv = 0.25f;
  expect_golden_everywhere(p);
  Problem once = p;
  std::vector<TensorView> v = once.views();
  ASSERT_TRUE(once.run(v).ok());
  EXPECT_EQ(once.found, 1.0f);
}

TEST(ForeachNonFiniteCheckAndUnscale, InvScaleOneOnlyReadsEveryBitStays) {
  Problem p = mixed_list(30, 5);
  p.fill(13, 10.0f, 20);  // NaN payloads and signalling NaNs among them
  p.inv = 1.0f;
  Problem got = p;
  std::vector<TensorView> v = got.views();
  ASSERT_TRUE(got.run(v).ok());
  for (size_t k = 0; k < p.mem.size(); ++k) EXPECT_EQ(got.mem[k], p.mem[k]) << k;
  EXPECT_EQ(got.found, 1.0f);
  expect_golden_everywhere(p);
}

TEST(ForeachNonFiniteCheckAndUnscale, FoundInfJudgedOnInputsNotProducts) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Problem p;
    p.add(d, {5});
    p.fill(1, 1.0f, 0);
    store_from_float(d, p.mem[0].data(), 2, d == DType::kFloat16 ? 65504.0f : 3.0e38f);
    p.inv = 4.0f;  // the product overflows to inf; the input is finite
    std::vector<TensorView> v = p.views();
    ASSERT_TRUE(p.run(v).ok());
    EXPECT_EQ(p.found, 0.0f) << dtype_name(d);
    EXPECT_TRUE(std::isinf(load_as_float(d, p.mem[0].data(), 2)));
  }
}

TEST(ForeachNonFiniteCheckAndUnscale, FoundInfIsNeverCleared) {
  Problem p = mixed_list(3, 9);
  p.fill(2, 1.0f, 0);
  p.found = 2.5f;  // any value stands when nothing is found
  p.inv = 0.5f;
  std::vector<TensorView> v = p.views();
  ASSERT_TRUE(p.run(v).ok());
  EXPECT_EQ(p.found, 2.5f);
}

TEST(ForeachNonFiniteCheckAndUnscale, EmptyListIsANoOp) {
  float found = 0.0f, inv = 0.5f;
  ForeachNonFiniteCheckAndUnscaleTensors t{.scaled_grads = {},
                                           .found_inf = TensorView(&found, DType::kFloat32, {1}),
                                           .inv_scale = TensorView(&inv, DType::kFloat32, {1})};
  EXPECT_TRUE(foreach_non_finite_check_and_unscale(t).ok());
  EXPECT_EQ(found, 0.0f);
}

// ---- Validation: code, a message naming the operator and the argument, nothing written ----

TEST(ForeachNonFiniteCheckAndUnscale, ValidationRowsWriteNothing) {
  // One arena so overlapping views can be made.
  std::vector<float> arena(256);
  for (size_t i = 0; i < arena.size(); ++i) arena[i] = static_cast<float>(i) + 0.5f;
  const std::vector<float> before = arena;
  float* a = arena.data();
  struct Row {
    const char* what;
    StatusCode code;
    const char* needle;
    std::vector<TensorView> grads;
    TensorView found, inv;
  };
  const TensorView found(a + 200, DType::kFloat32, {1}), inv(a + 201, DType::kFloat32, {1});
  const TensorView g0(a, DType::kFloat32, {16}), g1(a + 16, DType::kFloat32, {4, 4});
  std::vector<Row> rows{
      {"null element data",
       StatusCode::kParamNullptr,
       "scaled_grads[1]",
       {g0, TensorView(nullptr, DType::kFloat32, {4})},
       found,
       inv},
      {"int32 element",
       StatusCode::kParamInvalid,
       "scaled_grads[1] dtype INT32",
       {g0, TensorView(a + 16, DType::kInt32, {4})},
       found,
       inv},
      {"fp16 found_inf",
       StatusCode::kParamInvalid,
       "found_inf dtype FLOAT16",
       {g0},
       TensorView(a + 200, DType::kFloat16, {1}),
       inv},
      {"two-element found_inf",
       StatusCode::kTiling,
       "found_inf",
       {g0},
       TensorView(a + 200, DType::kFloat32, {2}),
       inv},
      {"two-element inv_scale",
       StatusCode::kTiling,
       "inv_scale",
       {g0},
       found,
       TensorView(a + 201, DType::kFloat32, {2})},
      {"rank 9 element",
       StatusCode::kParamInvalid,
       "scaled_grads[0] rank 9",
       {TensorView(a, DType::kFloat32, {1, 1, 1, 1, 1, 1, 1, 1, 2})},
       found,
       inv},
      {"strided element",
       StatusCode::kParamInvalid,
       "scaled_grads[1] is not contiguous",
       {g0, TensorView(a + 16, DType::kFloat32, std::vector<int64_t>{4}, std::vector<int64_t>{2})},
       found,
       inv},
      {"overlapping elements",
       StatusCode::kParamInvalid,
       "scaled_grads[0] partially overlaps",
       {g0, TensorView(a + 8, DType::kFloat32, {16})},
       found,
       inv},
      {"found_inf inside a gradient",
       StatusCode::kParamInvalid,
       "overlaps",
       {g0, g1},
       TensorView(a + 3, DType::kFloat32, {1}),
       inv},
      {"inv_scale inside a gradient",
       StatusCode::kParamInvalid,
       "overlaps",
       {g0, g1},
       found,
       TensorView(a + 20, DType::kFloat32, {1})},
  };
  for (Row& r : rows) {
    SCOPED_TRACE(r.what);
    const ForeachNonFiniteCheckAndUnscaleTensors t{
        .scaled_grads = r.grads, .found_inf = r.found, .inv_scale = r.inv};
    const Status v = foreach_non_finite_check_and_unscale_validate(t);
    const Status s = foreach_non_finite_check_and_unscale(t);
    EXPECT_EQ(v.code(), r.code) << v.message();
    EXPECT_EQ(s.code(), r.code) << s.message();
    EXPECT_EQ(s.message(), v.message());
    EXPECT_EQ(s.message().rfind("ForeachNonFiniteCheckAndUnscale: ", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(r.needle), std::string::npos) << s.message();
    EXPECT_EQ(arena, before) << "a rejected call wrote";
  }
}

}  // namespace

// ==== The aclnn entry: =======================================================
// aclnnForeachNonFiniteCheckAndUnscale through the C API: the same bits as the C++ API, and
// upstream's limits and codes (more than 256 tensors, mixed dtypes and wrong element counts
// 561002; an empty tensor or an unsupported dtype 161002; nulls 161001), nothing written on
// error. Also op-by-name with a dynamic input list.

namespace aclnn {

namespace {

using mantissa::DType;

// Host memory for a list of fp32/fp16/bf16 gradients and the two scalars.
struct Host {
  std::vector<std::vector<uint8_t>> grads;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<aclDataType> dtypes;
  float found = 0.0f, inv = 0.375f;

  void add(aclDataType d, std::vector<int64_t> shape, float first) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    const auto dt = static_cast<DType>(d);
    grads.emplace_back(std::max<size_t>(8, static_cast<size_t>(n) * mantissa::dtype_size(dt)), 0);
    for (int64_t i = 0; i < n; ++i) {
      mantissa::store_from_float(dt, grads.back().data(), i, first + 0.7f * static_cast<float>(i));
    }
    shapes.push_back(std::move(shape));
    dtypes.push_back(d);
  }
  std::vector<std::vector<uint8_t>> snapshot() const {
    auto s = grads;
    s.emplace_back(reinterpret_cast<const uint8_t*>(&found),
                   reinterpret_cast<const uint8_t*>(&found) + 4);
    return s;
  }
};

aclTensor* tensor(void* data, aclDataType d, const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return aclCreateTensor(shape.data(), shape.size(), d, strides.data(), 0, ACL_FORMAT_ND,
                         shape.data(), shape.size(), data);
}

// Runs both phases; returns the first non-success status.
aclnnStatus run_aclnn(Host& h, std::vector<int64_t> found_shape = {1}) {
  std::vector<aclTensor*> elements;
  for (size_t k = 0; k < h.grads.size(); ++k) {
    elements.push_back(tensor(h.grads[k].data(), h.dtypes[k], h.shapes[k]));
  }
  aclTensorList* list = aclCreateTensorList(elements.data(), elements.size());
  aclTensor* found = tensor(&h.found, ACL_FLOAT, found_shape);
  aclTensor* inv = tensor(&h.inv, ACL_FLOAT, {1});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus s =
      aclnnForeachNonFiniteCheckAndUnscaleGetWorkspaceSize(list, found, inv, &size, &executor);
  if (s == ACLNN_SUCCESS) {
    std::vector<uint64_t> ws((size + 7) / 8);
    s = aclnnForeachNonFiniteCheckAndUnscale(ws.empty() ? nullptr : ws.data(), size, executor,
                                             nullptr);
  }
  aclDestroyTensorList(list);
  aclDestroyTensor(found);
  aclDestroyTensor(inv);
  return s;
}

// The C++ API on a copy: the reference bits.
Host cxx(const Host& in) {
  Host h = in;
  std::vector<mantissa::TensorView> views;
  for (size_t k = 0; k < h.grads.size(); ++k) {
    views.emplace_back(h.grads[k].data(), static_cast<DType>(h.dtypes[k]),
                       std::span<const int64_t>(h.shapes[k]));
  }
  const mantissa::ForeachNonFiniteCheckAndUnscaleTensors t{
      .scaled_grads = views,
      .found_inf = mantissa::TensorView(&h.found, DType::kFloat32, {1}),
      .inv_scale = mantissa::TensorView(&h.inv, DType::kFloat32, {1})};
  EXPECT_TRUE(mantissa::foreach_non_finite_check_and_unscale(t).ok());
  return h;
}

TEST(AclnnForeachNonFiniteCheckAndUnscale, SameBitsAsTheCxxApi) {
  for (aclDataType d : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    Host h;
    h.add(d, {2, 3}, 1.0f);
    h.add(d, {}, -2.0f);
    h.add(d, {40000}, 0.1f);
    const Host want = cxx(h);
    ASSERT_EQ(run_aclnn(h), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(h.snapshot(), want.snapshot());
  }
}

TEST(AclnnForeachNonFiniteCheckAndUnscale, UpstreamLimitsAndCodesWriteNothing) {
  struct Row {
    const char* what;
    aclnnStatus code;
    Host host;
    std::vector<int64_t> found_shape{1};
  };
  std::vector<Row> rows;
  {
    Row r{"257 tensors", ACLNN_ERR_INNER_TILING_ERROR, {}};
    for (int k = 0; k < 257; ++k) r.host.add(ACL_FLOAT, {2}, 1.0f);
    rows.push_back(std::move(r));
  }
  {
    Row r{"mixed dtypes", ACLNN_ERR_INNER_TILING_ERROR, {}};
    r.host.add(ACL_FLOAT, {2}, 1.0f);
    r.host.add(ACL_FLOAT16, {2}, 1.0f);
    rows.push_back(std::move(r));
  }
  {
    Row r{"empty tensor", ACLNN_ERR_PARAM_INVALID, {}};
    r.host.add(ACL_FLOAT, {2}, 1.0f);
    r.host.add(ACL_FLOAT, {0}, 1.0f);
    rows.push_back(std::move(r));
  }
  {
    Row r{"double gradient", ACLNN_ERR_PARAM_INVALID, {}};
    r.host.add(ACL_DOUBLE, {2}, 1.0f);
    rows.push_back(std::move(r));
  }
  {
    Row r{"two-element foundInf", ACLNN_ERR_INNER_TILING_ERROR, {}, {2}};
    r.host.add(ACL_FLOAT, {2}, 1.0f);
    rows.push_back(std::move(r));
  }
  for (Row& r : rows) {
    SCOPED_TRACE(r.what);
    // A two-element foundInf needs two elements of memory.
    std::vector<float> found2{0.0f, 0.0f};
    const auto before = r.host.snapshot();
    EXPECT_EQ(run_aclnn(r.host, r.found_shape), r.code) << aclGetRecentErrMsg();
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("ForeachNonFiniteCheckAndUnscale"),
              std::string::npos);
    EXPECT_EQ(r.host.snapshot(), before);
  }
}

TEST(AclnnForeachNonFiniteCheckAndUnscale, NullsAre161001) {
  Host h;
  h.add(ACL_FLOAT, {2}, 1.0f);
  aclTensor* e = tensor(h.grads[0].data(), ACL_FLOAT, h.shapes[0]);
  aclTensorList* list = aclCreateTensorList(&e, 1);
  aclTensor* found = tensor(&h.found, ACL_FLOAT, {1});
  aclTensor* inv = tensor(&h.inv, ACL_FLOAT, {1});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(
      aclnnForeachNonFiniteCheckAndUnscaleGetWorkspaceSize(nullptr, found, inv, &size, &executor),
      ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(
      aclnnForeachNonFiniteCheckAndUnscaleGetWorkspaceSize(list, nullptr, inv, &size, &executor),
      ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(
      aclnnForeachNonFiniteCheckAndUnscaleGetWorkspaceSize(list, found, nullptr, &size, &executor),
      ACLNN_ERR_PARAM_NULLPTR);
  aclDestroyTensorList(list);
  aclDestroyTensor(found);
  aclDestroyTensor(inv);
}

TEST(AclopForeachNonFiniteCheckAndUnscale, DynamicInputListGivesTheCxxBits) {
  for (int count : {0, 1, 3}) {
    SCOPED_TRACE("tensors " + std::to_string(count));
    mantissa::testing::aclop_support::Call c("ForeachNonFiniteCheckAndUnscale");
    Host h;
    for (int k = 0; k < count; ++k) h.add(ACL_BF16, {3, static_cast<int64_t>(k + 1)}, 0.5f * k);
    for (int k = 0; k < count; ++k) c.add_in(ACL_BF16, h.shapes[k]);
    c.add_in(ACL_FLOAT, {1});
    c.add_in(ACL_FLOAT, {1});
    c.allocate();
    for (int k = 0; k < count; ++k) c.in(k).mem = h.grads[k];
    c.in(count).set(0, 0.0f);
    c.in(count + 1).set(0, h.inv);
    ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
    const Host want = cxx(h);
    for (int k = 0; k < count; ++k) EXPECT_EQ(c.in(k).mem, want.grads[k]) << k;
  }
}

TEST(AclopForeachNonFiniteCheckAndUnscale, TooFewInputsIsRejected) {
  mantissa::testing::aclop_support::Call c("ForeachNonFiniteCheckAndUnscale");
  c.add_in(ACL_FLOAT, {1});
  c.allocate();
  EXPECT_EQ(c.run(), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("at least 2"), std::string::npos)
      << aclGetRecentErrMsg();
}

}  // namespace

}  // namespace aclnn

}  // namespace mantissa::testing
