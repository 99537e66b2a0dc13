// aclnnForeachNonFiniteCheckAndUnscale through the C API: the same bits as the C++ API, and
// upstream's limits and codes (more than 256 tensors, mixed dtypes and wrong element counts
// 561002; an empty tensor or an unsupported dtype 161002; nulls 161001), nothing written on
// error. Also op-by-name with a dynamic input list.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_foreach_non_finite_check_and_unscale.h"
#include "mantissa/dtype.h"
#include "mantissa/ops/foreach_non_finite_check_and_unscale.h"
#include "test_aclop_common.h"

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
    aclop_test::Call c("ForeachNonFiniteCheckAndUnscale");
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
  aclop_test::Call c("ForeachNonFiniteCheckAndUnscale");
  c.add_in(ACL_FLOAT, {1});
  c.allocate();
  EXPECT_EQ(c.run(), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("at least 2"), std::string::npos)
      << aclGetRecentErrMsg();
}

}  // namespace
