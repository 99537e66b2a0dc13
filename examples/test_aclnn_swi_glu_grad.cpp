// SwiGlu's backward pass through aclnn, written as a CANN program is: the runtime set up, device
// buffers, the two-phase call, the result copied back. The same inputs as CANN's own
// aclnnSwiGluGrad sample (yGrad [2, 16] = -2..29, x [2, 32] = -2..61, dim -1: A the first 16
// columns of each row, B the last 16); out is x's shape, dA then dB along dim. Prints
// "result[i] is: v".
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_swi_glu_grad.h"

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

static int64_t ShapeSize(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A contiguous ND aclTensor over a device copy of host data.
static int MakeTensor(const std::vector<float>& host, const std::vector<int64_t>& shape,
                      void** device, aclTensor** tensor) {
  const size_t bytes = ShapeSize(shape) * sizeof(float);
  auto ret = aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclrtMalloc failed: %d\n", ret); return ret);
  ret = aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclrtMemcpy failed: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) {
    strides[i] = shape[i + 1] * strides[i + 1];
  }
  *tensor = aclCreateTensor(shape.data(), shape.size(), aclDataType::ACL_FLOAT, strides.data(), 0,
                            aclFormat::ACL_FORMAT_ND, shape.data(), shape.size(), *device);
  return 0;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  auto ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclInit failed: %d\n", ret); return ret);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclrtSetDevice failed: %d\n", ret); return ret);
  ret = aclrtCreateStream(&stream);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclrtCreateStream failed: %d\n", ret); return ret);

  const std::vector<int64_t> yGradShape = {2, 16};
  const std::vector<int64_t> xShape = {2, 32};
  const std::vector<int64_t> outShape = {2, 32};
  std::vector<float> yGradHostData(32), xHostData(64);
  for (int i = 0; i < 32; i++) yGradHostData[i] = static_cast<float>(i - 2);
  for (int i = 0; i < 64; i++) xHostData[i] = static_cast<float>(i - 2);
  void* yGradDevice = nullptr;
  void* xDevice = nullptr;
  void* outDevice = nullptr;
  aclTensor* yGrad = nullptr;
  aclTensor* x = nullptr;
  aclTensor* out = nullptr;
  CHECK_RET(MakeTensor(yGradHostData, yGradShape, &yGradDevice, &yGrad) == 0, return 1);
  CHECK_RET(MakeTensor(xHostData, xShape, &xDevice, &x) == 0, return 1);
  CHECK_RET(MakeTensor(std::vector<float>(64, 0.0f), outShape, &outDevice, &out) == 0, return 1);

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor;
  int64_t dim = -1;
  ret = aclnnSwiGluGradGetWorkspaceSize(yGrad, x, dim, out, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclnnSwiGluGradGetWorkspaceSize failed: %d\n", ret);
            return ret);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, printf("workspace allocation failed: %d\n", ret); return ret);
  }
  ret = aclnnSwiGluGrad(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclnnSwiGluGrad failed: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclrtSynchronizeStream failed: %d\n", ret); return ret);

  const int64_t n = ShapeSize(outShape);
  std::vector<float> result(n, 0.0f);
  ret = aclrtMemcpy(result.data(), n * sizeof(float), outDevice, n * sizeof(float),
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, printf("copy back failed: %d\n", ret); return ret);
  for (int64_t i = 0; i < n; i++) printf("result[%ld] is: %f\n", i, result[i]);

  aclDestroyTensor(yGrad);
  aclDestroyTensor(x);
  aclDestroyTensor(out);
  aclrtFree(yGradDevice);
  aclrtFree(xDevice);
  aclrtFree(outDevice);
  if (workspaceSize > 0) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return 0;
}
