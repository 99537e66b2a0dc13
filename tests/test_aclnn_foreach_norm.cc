// aclnnForeachNorm through the C API: upstream's published sample inputs, the same bits as the
// C++ API for every p form (FLOAT, DOUBLE, INT64 scalars), and the codes: nulls 161001; a
// scalar that is not live or of another dtype, an unsupported p, out[i] not of x[i]'s dtype, a
// length mismatch or a strided element 161002; mixed dtypes in x or out, a rank above 8 and an
// out[i] without exactly one element 561002; nothing written on error. Also op-by-name with the
// dynamic output list "y" and p as the "scalar" input tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_foreach_norm.h"
#include "mantissa/dtype.h"
#include "mantissa/ops/foreach_norm.h"
#include "test_aclop_common.h"

namespace {

using mantissa::DType;

aclTensor* tensor(void* data, aclDataType d, const std::vector<int64_t>& shape,
                  std::vector<int64_t> strides = {}) {
  if (strides.empty()) {
    strides.assign(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  }
  int64_t reach = 1;
  for (size_t i = 0; i < shape.size(); ++i) reach += (shape[i] - 1) * strides[i];
  const std::vector<int64_t> storage{std::max<int64_t>(reach, 0)};
  return aclCreateTensor(shape.data(), shape.size(), d, strides.data(), 0, ACL_FORMAT_ND,
                         storage.data(), 1, data);
}

// Host memory for a list x and its outputs; the C handles made on demand.
struct Host {
  std::vector<std::vector<uint8_t>> x, out;
  std::vector<std::vector<int64_t>> shapes, out_shapes;
  std::vector<aclDataType> dtypes, out_dtypes;
  std::vector<std::vector<int64_t>> strides;  // empty: contiguous

  void add(aclDataType d, std::vector<int64_t> shape, float first, float step = 0.7f) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    const auto dt = static_cast<DType>(d);
    x.emplace_back(std::max<size_t>(8, static_cast<size_t>(n) * mantissa::dtype_size(dt)), 0);
    for (int64_t i = 0; i < n; ++i) {
      mantissa::store_from_float(dt, x.back().data(), i, first + step * static_cast<float>(i));
    }
    shapes.push_back(std::move(shape));
    dtypes.push_back(d);
    strides.emplace_back();
    out.emplace_back(8, 0x5A);
    out_shapes.push_back({1});
    out_dtypes.push_back(d);
  }
  float result(size_t k) const {
    return mantissa::load_as_float(static_cast<DType>(out_dtypes[k]), out[k].data(), 0);
  }
};

struct Scalar {
  aclDataType dtype = ACL_FLOAT;
  double p = 2.0;
};

// Both phases; returns the first non-success status.
aclnnStatus run_aclnn(Host& h, Scalar s = {}) {
  std::vector<aclTensor*> xe, oe;
  for (size_t k = 0; k < h.x.size(); ++k) {
    xe.push_back(tensor(h.x[k].data(), h.dtypes[k], h.shapes[k], h.strides[k]));
  }
  for (size_t k = 0; k < h.out.size(); ++k) {
    oe.push_back(tensor(h.out[k].data(), h.out_dtypes[k], h.out_shapes[k]));
  }
  aclTensorList* xl = aclCreateTensorList(xe.data(), xe.size());
  aclTensorList* ol = aclCreateTensorList(oe.data(), oe.size());
  float f = static_cast<float>(s.p);
  int64_t i = std::isfinite(s.p) ? static_cast<int64_t>(s.p) : 0;
  int32_t i32 = static_cast<int32_t>(i);
  void* value = s.dtype == ACL_FLOAT    ? static_cast<void*>(&f)
                : s.dtype == ACL_DOUBLE ? static_cast<void*>(&s.p)
                : s.dtype == ACL_INT32  ? static_cast<void*>(&i32)
                                        : static_cast<void*>(&i);
  aclScalar* scalar = aclCreateScalar(value, s.dtype);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus st = aclnnForeachNormGetWorkspaceSize(xl, scalar, ol, &size, &executor);
  if (st == ACLNN_SUCCESS) {
    std::vector<uint64_t> ws((size + 7) / 8);
    st = aclnnForeachNorm(ws.empty() ? nullptr : ws.data(), size, executor, nullptr);
  }
  aclDestroyTensorList(xl);
  aclDestroyTensorList(ol);
  aclDestroyScalar(scalar);
  return st;
}

// The C++ API on a copy: the reference bits.
Host cxx(const Host& in, double p) {
  Host h = in;
  std::vector<mantissa::TensorView> x, out;
  for (size_t k = 0; k < h.x.size(); ++k) {
    x.emplace_back(h.x[k].data(), static_cast<DType>(h.dtypes[k]),
                   std::span<const int64_t>(h.shapes[k]));
    out.emplace_back(h.out[k].data(), static_cast<DType>(h.out_dtypes[k]),
                     std::span<const int64_t>(h.out_shapes[k]));
  }
  EXPECT_TRUE(mantissa::foreach_norm({.x = x, .out = out}, {.p = p}).ok());
  return h;
}

TEST(AclnnForeachNorm, UpstreamSampleInputs) {
  // x[0] = [[1, 2, 3], [4, 5, 6]], x[1] = [[7, 8, 9]], out shapes [1, 1], p = 2 as FLOAT.
  Host h;
  h.add(ACL_FLOAT, {2, 3}, 1.0f, 1.0f);
  h.add(ACL_FLOAT, {1, 3}, 7.0f, 1.0f);
  h.out_shapes = {{1, 1}, {1, 1}};
  ASSERT_EQ(run_aclnn(h), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(h.result(0), static_cast<float>(std::sqrt(91.0)));
  EXPECT_EQ(h.result(1), static_cast<float>(std::sqrt(194.0)));
}

TEST(AclnnForeachNorm, EveryScalarFormGivesTheCxxBits) {
  const double inf = std::numeric_limits<double>::infinity();
  for (aclDataType d : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    for (int count : {0, 1, 3, 300}) {
      Host h;
      for (int k = 0; k < count; ++k) {
        std::vector<int64_t> shape{(k * 37) % 90, 3};  // includes empty tensors
        if (k % 7 == 1) shape = {};                    // rank 0
        if (k == 2) shape = {5000};                    // two reduction blocks
        h.add(d, shape, -1.0f + 0.01f * static_cast<float>(k), 0.37f);
      }
      for (double p : {2.0, 1.0, inf}) {
        const Host want = cxx(h, p);
        for (aclDataType sd : {ACL_FLOAT, ACL_DOUBLE, ACL_INT64}) {
          if (sd == ACL_INT64 && std::isinf(p)) continue;
          SCOPED_TRACE(testing::Message() << "dtype " << d << " tensors " << count << " p " << p
                                          << " scalar dtype " << sd);
          Host got = h;
          ASSERT_EQ(run_aclnn(got, {sd, p}), ACLNN_SUCCESS) << aclGetRecentErrMsg();
          EXPECT_EQ(got.out, want.out);
        }
      }
    }
  }
}

TEST(AclnnForeachNorm, NullsAre161001) {
  Host h;
  h.add(ACL_FLOAT, {2}, 1.0f);
  aclTensor* xe = tensor(h.x[0].data(), ACL_FLOAT, h.shapes[0]);
  aclTensor* oe = tensor(h.out[0].data(), ACL_FLOAT, {1});
  aclTensorList* xl = aclCreateTensorList(&xe, 1);
  aclTensorList* ol = aclCreateTensorList(&oe, 1);
  float two = 2.0f;
  aclScalar* s = aclCreateScalar(&two, ACL_FLOAT);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(nullptr, s, ol, &size, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(xl, nullptr, ol, &size, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("scalar is null"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(xl, s, nullptr, &size, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(xl, s, ol, nullptr, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(xl, s, ol, &size, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  // A destroyed scalar is detected, not read.
  aclDestroyScalar(s);
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(xl, s, ol, &size, &executor), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("not a live aclScalar"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(h.out[0], std::vector<uint8_t>(8, 0x5A));
  aclDestroyTensorList(xl);
  aclDestroyTensorList(ol);
}

TEST(AclnnForeachNorm, RejectedCallsWriteNothing) {
  struct Row {
    const char* what;
    aclnnStatus code;
    const char* needle;
    void (*mutate)(Host&, Scalar&);
  };
  const std::vector<Row> rows{
      {"FLOAT16 scalar", ACLNN_ERR_PARAM_INVALID, "scalar dtype FLOAT16",
       [](Host&, Scalar& s) { s.dtype = ACL_FLOAT16; }},
      {"INT32 scalar", ACLNN_ERR_PARAM_INVALID, "scalar dtype INT32",
       [](Host&, Scalar& s) { s.dtype = ACL_INT32; }},
      {"p = 3", ACLNN_ERR_PARAM_INVALID, "p is 3", [](Host&, Scalar& s) { s.p = 3.0; }},
      {"p = 0.5 as DOUBLE", ACLNN_ERR_PARAM_INVALID, "p is 0.5",
       [](Host&, Scalar& s) { s.dtype = ACL_DOUBLE, s.p = 0.5; }},
      {"p = NaN", ACLNN_ERR_PARAM_INVALID, "p is nan",
       [](Host&, Scalar& s) { s.p = std::numeric_limits<double>::quiet_NaN(); }},
      {"mixed x dtypes", ACLNN_ERR_INNER_TILING_ERROR, "x[1] dtype FLOAT16 differs from x[0]",
       [](Host& h, Scalar&) { h.dtypes[1] = h.out_dtypes[1] = ACL_FLOAT16; }},
      {"mixed out dtypes", ACLNN_ERR_INNER_TILING_ERROR,
       "out[2] dtype BFLOAT16 differs from out[0]",
       [](Host& h, Scalar&) { h.out_dtypes[2] = ACL_BF16; }},
      {"out of another dtype than x", ACLNN_ERR_PARAM_INVALID, "out[0]",
       [](Host& h, Scalar&) {
         h.out_dtypes = {ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16};
       }},
      {"INT32 x", ACLNN_ERR_PARAM_INVALID, "x[0] dtype INT32",
       [](Host& h, Scalar&) {
         h.dtypes = {ACL_INT32, ACL_INT32, ACL_INT32};
         h.out_dtypes = h.dtypes;
       }},
      {"out shorter than x", ACLNN_ERR_PARAM_INVALID, "out holds 2 tensors but x holds 3",
       [](Host& h, Scalar&) {
         h.out.pop_back(), h.out_shapes.pop_back(), h.out_dtypes.pop_back();
       }},
      {"rank 9 x[1]", ACLNN_ERR_INNER_TILING_ERROR, "x[1] rank 9 is above 8",
       [](Host& h, Scalar&) { h.shapes[1] = {1, 1, 1, 1, 1, 1, 1, 2, 2}; }},
      {"rank 9 out[0]", ACLNN_ERR_INNER_TILING_ERROR, "out[0] rank 9 is above 8",
       [](Host& h, Scalar&) { h.out_shapes[0] = {1, 1, 1, 1, 1, 1, 1, 1, 1}; }},
      {"two-element out[1]", ACLNN_ERR_INNER_TILING_ERROR, "out[1]",
       [](Host& h, Scalar&) { h.out_shapes[1] = {2}; }},
      {"strided x[2]", ACLNN_ERR_PARAM_INVALID, "x[2]",
       [](Host& h, Scalar&) { h.strides[2] = {2}, h.shapes[2] = {2}; }},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    Host h;
    h.add(ACL_FLOAT, {4}, 1.0f);
    h.add(ACL_FLOAT, {2, 2}, -3.0f);
    h.add(ACL_FLOAT, {5}, 0.5f);
    Scalar s;
    r.mutate(h, s);
    const Host before = h;
    EXPECT_EQ(run_aclnn(h, s), r.code) << aclGetRecentErrMsg();
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find(r.needle), std::string::npos)
        << aclGetRecentErrMsg();
    EXPECT_EQ(h.out, before.out);
    EXPECT_EQ(h.x, before.x);
  }
}

TEST(AclopForeachNorm, DynamicOutputListGivesTheCxxBits) {
  for (int count : {0, 1, 3}) {
    SCOPED_TRACE("tensors " + std::to_string(count));
    aclop_test::Call c("ForeachNorm");
    Host h;
    for (int k = 0; k < count; ++k) h.add(ACL_BF16, {3, static_cast<int64_t>(k + 1)}, 0.5f * k);
    for (int k = 0; k < count; ++k) c.add_in(ACL_BF16, h.shapes[k]);
    c.add_in(ACL_INT64, {});  // p
    for (int k = 0; k < count; ++k) c.add_out(ACL_BF16, {1});
    c.allocate();
    for (int k = 0; k < count; ++k) c.in(k).mem = h.x[k];
    const int64_t one = 1;
    std::memcpy(c.in(count).mem.data(), &one, sizeof(one));
    ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
    const Host want = cxx(h, 1.0);
    for (int k = 0; k < count; ++k) {
      EXPECT_EQ(0, std::memcmp(c.out(k).mem.data(), want.out[k].data(), 2)) << k;
    }
  }
}

TEST(AclopForeachNorm, ScalarInputAndOutputCountRules) {
  auto base = [] {
    aclop_test::Call c("ForeachNorm");
    c.add_in(ACL_FLOAT, {4});
    c.add_in(ACL_FLOAT, {3});
    c.add_in(ACL_FLOAT, {1});  // p
    c.add_out(ACL_FLOAT, {1});
    c.add_out(ACL_FLOAT, {1});
    return c;
  };
  {
    aclop_test::Call c = base();
    c.in(2).dims = {2};
    aclop_test::expect_rejected_untouched(c, ACLNN_ERR_PARAM_INVALID, "two-element p",
                                          "(scalar) dims [2]");
  }
  {
    aclop_test::Call c = base();
    c.in(2).dtype = ACL_FLOAT16;
    aclop_test::expect_rejected_untouched(c, ACLNN_ERR_PARAM_INVALID, "FLOAT16 p",
                                          "(scalar) dtype FLOAT16");
  }
  {
    aclop_test::Call c = base();
    c.outs().pop_back();
    aclop_test::expect_rejected_untouched(c, ACLNN_ERR_PARAM_INVALID, "one output for two x",
                                          "out holds 1 tensors but x holds 2");
  }
  {
    aclop_test::Call c = base();
    c.set_float("p", 2.0f);  // p is an input by name, not an attribute
    aclop_test::expect_rejected_untouched(c, ACLNN_ERR_PARAM_INVALID, "p as an attribute",
                                          "unknown attribute \"p\"");
  }
}

}  // namespace
