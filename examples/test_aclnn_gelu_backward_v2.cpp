// GeluV2 and GeluBackwardV2 through aclnn, written as a CANN program is: the runtime set up, device
// buffers, the two-phase calls, the results copied back. x = -4, -3.5, ..., 3.5 (16 values), the
// erf form (approximate 0 / "none") forward, then its derivative with gradOutput = 1 and with
// gradOutput = 0.5; prints "gelu[i] is: v", "grad[i] is: v" and "half_grad[i] is: v" with 9
// significant digits.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu_backward_v2.h"
#include "aclnnop/aclnn_gelu_v2.h"

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

static int Print(const char* name, void* device, int64_t n) {
  std::vector<float> result(n, 0.0f);
  auto ret = aclrtMemcpy(result.data(), n * sizeof(float), device, n * sizeof(float),
                         ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, printf("copy back failed: %d\n", ret); return ret);
  for (int64_t i = 0; i < n; i++) printf("%s[%ld] is: %.9g\n", name, i, result[i]);
  return 0;
}

// Runs a phase-two call with the workspace phase one asked for.
template <class PhaseTwo>
static int RunPhaseTwo(uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream,
                       PhaseTwo phaseTwo) {
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    auto ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, printf("workspace allocation failed: %d\n", ret); return ret);
  }
  auto ret = phaseTwo(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, printf("phase two failed: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclrtSynchronizeStream failed: %d\n", ret); return ret);
  if (workspaceSize > 0) aclrtFree(workspace);
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

  const std::vector<int64_t> shape = {2, 8};
  const int64_t n = ShapeSize(shape);
  std::vector<float> xHost(n), ones(n, 1.0f), halves(n, 0.5f);
  for (int64_t i = 0; i < n; i++) xHost[i] = -4.0f + 0.5f * static_cast<float>(i);
  void *xDevice = nullptr, *yDevice = nullptr, *dyDevice = nullptr, *halfDevice = nullptr,
       *gradDevice = nullptr;
  aclTensor *x = nullptr, *y = nullptr, *dy = nullptr, *half = nullptr, *grad = nullptr;
  CHECK_RET(MakeTensor(xHost, shape, &xDevice, &x) == 0, return 1);
  CHECK_RET(MakeTensor(std::vector<float>(n, 0.0f), shape, &yDevice, &y) == 0, return 1);
  CHECK_RET(MakeTensor(ones, shape, &dyDevice, &dy) == 0, return 1);
  CHECK_RET(MakeTensor(halves, {1}, &halfDevice, &half) == 0, return 1);  // broadcast
  CHECK_RET(MakeTensor(std::vector<float>(n, 0.0f), shape, &gradDevice, &grad) == 0, return 1);

  // y = GELU(x), the erf form.
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor;
  int64_t approximate = 0;
  ret = aclnnGeluV2GetWorkspaceSize(x, approximate, y, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclnnGeluV2GetWorkspaceSize failed: %d\n", ret);
            return ret);
  CHECK_RET(RunPhaseTwo(workspaceSize, executor, stream, aclnnGeluV2) == 0, return 1);
  CHECK_RET(Print("gelu", yDevice, n) == 0, return 1);

  // grad = 1 * GELU'(x), then 0.5 (one value, broadcast) * GELU'(x).
  char none[] = "none";
  ret = aclnnGeluBackwardV2GetWorkspaceSize(dy, x, none, grad, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclnnGeluBackwardV2GetWorkspaceSize failed: %d\n", ret);
            return ret);
  CHECK_RET(RunPhaseTwo(workspaceSize, executor, stream, aclnnGeluBackwardV2) == 0, return 1);
  CHECK_RET(Print("grad", gradDevice, n) == 0, return 1);
  ret = aclnnGeluBackwardV2GetWorkspaceSize(half, x, none, grad, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclnnGeluBackwardV2GetWorkspaceSize failed: %d\n", ret);
            return ret);
  CHECK_RET(RunPhaseTwo(workspaceSize, executor, stream, aclnnGeluBackwardV2) == 0, return 1);
  CHECK_RET(Print("half_grad", gradDevice, n) == 0, return 1);

  for (aclTensor* t : {x, y, dy, half, grad}) aclDestroyTensor(t);
  for (void* p : {xDevice, yDevice, dyDevice, halfDevice, gradDevice}) aclrtFree(p);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return 0;
}
