// The host runtime (init, devices, streams, memory) and aclTensor creation, through the C API.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

namespace mantissa::testing {

namespace {

std::string recent() { return aclGetRecentErrMsg(); }

TEST(CompatRuntime, RecentErrorIsEmptyOnAFreshThread) {
  std::string seen = "not run";
  std::thread([&] { seen = aclGetRecentErrMsg(); }).join();
  EXPECT_EQ(seen, "");
  // A failure on this thread is not visible on another one.
  ASSERT_NE(aclrtFree(nullptr), ACL_SUCCESS);
  EXPECT_NE(recent(), "");
  std::thread([&] { seen = aclGetRecentErrMsg(); }).join();
  EXPECT_EQ(seen, "");
}

TEST(CompatRuntime, InitFinalizeAndRepeats) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_NE(recent().find("aclInit"), std::string::npos);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE);
  // Initialising again after a finalize is allowed.
  EXPECT_EQ(aclInit("unused.json"), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST(CompatRuntime, OnlyDeviceZeroExists) {
  EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_INVALID_DEVICE);
  EXPECT_NE(recent().find("device 1"), std::string::npos);
  EXPECT_EQ(aclrtSetDevice(-1), ACL_ERROR_INVALID_DEVICE);
  int32_t id = 7;
  EXPECT_EQ(aclrtGetDevice(&id), ACL_SUCCESS);
  EXPECT_EQ(id, 0);
  EXPECT_EQ(aclrtGetDevice(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtResetDevice(3), ACL_ERROR_INVALID_DEVICE);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

TEST(CompatRuntime, StreamsAreCheckedHandles) {
  EXPECT_EQ(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM);
  aclrtStream a = nullptr, b = nullptr;
  ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(aclrtSynchronizeStream(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);  // the default stream
  EXPECT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(a), ACL_ERROR_INVALID_RESOURCE_HANDLE);
  EXPECT_EQ(aclrtSynchronizeStream(a), ACL_ERROR_INVALID_RESOURCE_HANDLE);
  int not_a_stream = 0;
  EXPECT_EQ(aclrtDestroyStream(&not_a_stream), ACL_ERROR_INVALID_RESOURCE_HANDLE);
  EXPECT_NE(recent().find("not a live stream"), std::string::npos);
  EXPECT_EQ(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
}

TEST(CompatRuntime, MallocIsAlignedAndWritable) {
  for (size_t size :
       {size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{1} << 20}) {
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << size;
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << size;
    std::memset(p, 0xA5, size);  // the whole size is usable (ASan checks the bounds)
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  }
  for (auto policy : {ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY}) {
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, 128, policy), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  }
}

TEST(CompatRuntime, MallocAndFreeErrors) {
  int marker = 0;
  void* p = &marker;
  EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(p, &marker);  // untouched on failure
  EXPECT_NE(recent().find("size is 0"), std::string::npos);
  EXPECT_EQ(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMalloc(&p, SIZE_MAX, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC);
  EXPECT_EQ(aclrtMalloc(&p, SIZE_MAX - 200, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC);
  EXPECT_EQ(p, &marker);

  EXPECT_EQ(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFree(&marker), ACL_ERROR_INVALID_PARAM);  // not from aclrtMalloc
  void* q = nullptr;
  ASSERT_EQ(aclrtMalloc(&q, 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(q), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(q), ACL_ERROR_INVALID_PARAM);  // freed twice
}

TEST(CompatRuntime, MemcpyCopiesEveryKind) {
  for (auto kind : {ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST,
                    ACL_MEMCPY_DEVICE_TO_DEVICE}) {
    const std::vector<uint8_t> src = {1, 2, 3, 4, 5};
    std::vector<uint8_t> dst(8, 0xEE);
    ASSERT_EQ(aclrtMemcpy(dst.data(), dst.size(), src.data(), src.size(), kind), ACL_SUCCESS);
    EXPECT_EQ(dst, (std::vector<uint8_t>{1, 2, 3, 4, 5, 0xEE, 0xEE, 0xEE}));
  }
  uint8_t one = 9;
  uint8_t other = 4;
  EXPECT_EQ(aclrtMemcpy(&one, 1, &other, 0, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(one, 9);
}

TEST(CompatRuntime, MemcpyErrorsWriteNothing) {
  const std::vector<uint8_t> src(16, 7);
  std::vector<uint8_t> dst(8, 0xEE);
  const std::vector<uint8_t> before = dst;
  EXPECT_EQ(aclrtMemcpy(dst.data(), 8, src.data(), 9, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("exceeds destMax"), std::string::npos);
  EXPECT_EQ(aclrtMemcpy(nullptr, 8, src.data(), 4, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(dst.data(), 8, nullptr, 4, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(dst.data(), 8, nullptr, 0, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  for (int bad_kind : {-1, 4, 100}) {
    EXPECT_EQ(aclrtMemcpy(dst.data(), 8, src.data(), 4, static_cast<aclrtMemcpyKind>(bad_kind)),
              ACL_ERROR_INVALID_PARAM)
        << bad_kind;
  }
  EXPECT_EQ(dst, before);
}

// --- aclCreateTensor -------------------------------------------------------------------------

TEST(CompatTensor, AcceptsValidViews) {
  float data[64] = {};
  const int64_t dims[] = {2, 3}, strides[] = {3, 1}, storage[] = {6};
  aclTensor* t = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, data);
  ASSERT_NE(t, nullptr) << recent();
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);

  // Rank 0 (no dims at all), one element in a rank-0 storage.
  aclTensor* scalar =
      aclCreateTensor(nullptr, 0, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data);
  ASSERT_NE(scalar, nullptr) << recent();
  EXPECT_EQ(aclDestroyTensor(scalar), ACLNN_SUCCESS);

  // A transposed view, a view at an offset, a null stride (row-major), rank 9 (rank limits are
  // the operators'), an empty view, a null data pointer, and dtypes no operator supports.
  const int64_t tdims[] = {3, 2}, tstrides[] = {1, 3};
  const int64_t odims[] = {4}, ostrides[] = {2}, ostorage[] = {16};
  const int64_t nine[] = {1, 1, 1, 1, 1, 1, 1, 1, 2}, nine_storage[] = {2};
  const int64_t empty[] = {0, 5};
  std::vector<aclTensor*> made = {
      aclCreateTensor(tdims, 2, ACL_FLOAT, tstrides, 0, ACL_FORMAT_ND, storage, 1, data),
      aclCreateTensor(odims, 1, ACL_FLOAT16, ostrides, 9, ACL_FORMAT_ND, ostorage, 1, data),
      aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, data),
      aclCreateTensor(nine, 9, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nine_storage, 1, data),
      aclCreateTensor(empty, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, empty, 2, nullptr),
      aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_NCHW, storage, 1, nullptr),
      aclCreateTensor(dims, 2, ACL_STRING, strides, 0, ACL_FORMAT_ND, storage, 1, data),
      aclCreateTensor(dims, 2, static_cast<aclDataType>(30), strides, 0, ACL_FORMAT_ND, storage, 1,
                      data),
      aclCreateTensor(dims, 2, static_cast<aclDataType>(-7), strides, 0, ACL_FORMAT_ND, storage, 1,
                      data),
  };
  for (size_t i = 0; i < made.size(); ++i) {
    ASSERT_NE(made[i], nullptr) << i << ": " << recent();
    EXPECT_EQ(aclDestroyTensor(made[i]), ACLNN_SUCCESS);
  }
}

TEST(CompatTensor, RejectsBadArgumentsWithAReason) {
  float data[16] = {};
  const int64_t dims[] = {2, 3}, strides[] = {3, 1}, storage[] = {6};
  const int64_t negative[] = {2, -3};
  const int64_t huge[] = {INT64_MAX / 2, 4};
  const int64_t huge_storage[] = {INT64_MAX / 2, 4};
  const int64_t big_strides[] = {4, 1};
  const int64_t back_strides[] = {-3, 1};
  const int64_t small_storage[] = {5};
  const int64_t elems8[] = {INT64_MAX / 2};
  const int64_t one[] = {1};
  struct Case {
    const char* what;
    aclTensor* t;
    const char* reason;
  };
  const Case cases[] = {
      {"null dims with a count",
       aclCreateTensor(nullptr, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, data),
       "viewDims is null"},
      {"null storage dims with a count",
       aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, nullptr, 1, data),
       "storageDims is null"},
      {"negative view dim",
       aclCreateTensor(negative, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, data),
       "viewDims[1] is -3"},
      {"negative storage dim",
       aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, negative, 2, data),
       "storageDims[1] is -3"},
      {"view count overflows",
       aclCreateTensor(huge, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, huge, 2, data), "overflows"},
      {"storage count overflows",
       aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, huge_storage, 2, data),
       "overflows"},
      {"storage bytes overflow",
       aclCreateTensor(one, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, elems8, 1, data), "overflows"},
      {"negative offset",
       aclCreateTensor(dims, 2, ACL_FLOAT, strides, -1, ACL_FORMAT_ND, storage, 1, data),
       "offset -1"},
      {"offset past the storage",
       aclCreateTensor(dims, 2, ACL_FLOAT, strides, 1, ACL_FORMAT_ND, storage, 1, data),
       "does not fit"},
      {"strides past the storage",
       aclCreateTensor(dims, 2, ACL_FLOAT, big_strides, 0, ACL_FORMAT_ND, storage, 1, data),
       "does not fit"},
      {"negative stride before the storage",
       aclCreateTensor(dims, 2, ACL_FLOAT, back_strides, 0, ACL_FORMAT_ND, storage, 1, data),
       "does not fit"},
      {"storage smaller than the view",
       aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, small_storage, 1, data),
       "does not fit"},
      {"a [2, 3] view in a rank-0 (one-element) storage",
       aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, nullptr, 0, data),
       "does not fit"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.t, nullptr) << c.what;
    if (c.t != nullptr) aclDestroyTensor(c.t);
  }
  // Each rejection records its own reason; check them one at a time.
  EXPECT_EQ(aclCreateTensor(nullptr, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, data),
            nullptr);
  EXPECT_NE(recent().find("aclCreateTensor"), std::string::npos);
  EXPECT_NE(recent().find("viewDims is null"), std::string::npos);
  EXPECT_EQ(aclCreateTensor(negative, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, data),
            nullptr);
  EXPECT_NE(recent().find("viewDims[1] is -3"), std::string::npos);
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, strides, 1, ACL_FORMAT_ND, storage, 1, data),
            nullptr);
  EXPECT_NE(recent().find("does not fit"), std::string::npos);
  // A negative stride that stays inside the storage is accepted (a reversed view).
  const int64_t rev_dims[] = {3}, rev_strides[] = {-1}, rev_storage[] = {3};
  aclTensor* rev =
      aclCreateTensor(rev_dims, 1, ACL_FLOAT, rev_strides, 2, ACL_FORMAT_ND, rev_storage, 1, data);
  ASSERT_NE(rev, nullptr) << recent();
  EXPECT_EQ(aclDestroyTensor(rev), ACLNN_SUCCESS);
}

TEST(CompatTensor, DestroyChecksTheHandle) {
  float data[1] = {};
  aclTensor* t =
      aclCreateTensor(nullptr, 0, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_ERR_PARAM_INVALID);  // destroyed twice
  EXPECT_NE(recent().find("not a live aclTensor"), std::string::npos);
  int garbage = 0;
  EXPECT_EQ(aclDestroyTensor(reinterpret_cast<aclTensor*>(&garbage)), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_SUCCESS);
}

}  // namespace

}  // namespace mantissa::testing
