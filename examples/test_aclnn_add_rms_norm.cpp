// aclnnAddRmsNorm sample: x1 and x2 [2, 16] and gamma [16] (fp32, the values of CANN's own
// sample), epsilon 1e-6; prints y, then rstd (shape [2, 1]), then x = x1 + x2.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_add_rms_norm.h"

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

namespace {

int64_t GetShapeSize(const std::vector<int64_t>& shape) {
  int64_t size = 1;
  for (int64_t d : shape) size *= d;
  return size;
}

// Host memory is device memory on the CPU: the tensor is created over the vector itself.
aclTensor* CreateAclTensor(std::vector<float>& host, const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND,
                         shape.data(), shape.size(), host.data());
}

}  // namespace

int main() {
  // 1. Initialisation (as on a device).
  int32_t deviceId = 0;
  aclrtStream stream = nullptr;
  CHECK_RET(aclInit(nullptr) == ACL_SUCCESS, printf("aclInit failed\n"); return 1);
  CHECK_RET(aclrtSetDevice(deviceId) == ACL_SUCCESS, printf("aclrtSetDevice failed\n"); return 1);
  CHECK_RET(aclrtCreateStream(&stream) == ACL_SUCCESS, printf("aclrtCreateStream failed\n");
            return 1);

  // 2. Inputs and outputs.
  std::vector<int64_t> xShape = {2, 16}, gammaShape = {16}, rstdShape = {2, 1};
  std::vector<float> x1HostData, x2HostData, gammaHostData;
  for (int i = 0; i < 32; ++i) {
    x1HostData.push_back(static_cast<float>(i % 8));
    x2HostData.push_back(static_cast<float>(i % 8));
  }
  for (int i = 0; i < 16; ++i) gammaHostData.push_back(static_cast<float>(i % 8));
  std::vector<float> yHostData(GetShapeSize(xShape), 0.0f), xHostData(GetShapeSize(xShape), 0.0f);
  std::vector<float> rstdHostData(GetShapeSize(rstdShape), 0.0f);
  double epsilon = 1e-6;
  aclTensor* x1 = CreateAclTensor(x1HostData, xShape);
  aclTensor* x2 = CreateAclTensor(x2HostData, xShape);
  aclTensor* gamma = CreateAclTensor(gammaHostData, gammaShape);
  aclTensor* y = CreateAclTensor(yHostData, xShape);
  aclTensor* rstd = CreateAclTensor(rstdHostData, rstdShape);
  aclTensor* x = CreateAclTensor(xHostData, xShape);

  // 3. The two phases.
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnAddRmsNormGetWorkspaceSize(x1, x2, gamma, epsilon, y, rstd, x,
                                                    &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclnnAddRmsNormGetWorkspaceSize failed. ERROR: %d (%s)\n",
                                       ret, aclGetRecentErrMsg());
            return 1);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    CHECK_RET(aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS,
              printf("allocate workspace failed\n");
              return 1);
  }
  ret = aclnnAddRmsNorm(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            printf("aclnnAddRmsNorm failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return 1);
  CHECK_RET(aclrtSynchronizeStream(stream) == ACL_SUCCESS,
            printf("aclrtSynchronizeStream failed\n");
            return 1);

  // 4. The results.
  for (size_t i = 0; i < yHostData.size(); ++i) printf("result[%zu] is: %f\n", i, yHostData[i]);
  for (size_t i = 0; i < rstdHostData.size(); ++i) {
    printf("rstd[%zu] is: %.9g\n", i, rstdHostData[i]);
  }
  for (size_t i = 0; i < xHostData.size(); ++i) printf("x[%zu] is: %f\n", i, xHostData[i]);

  // 5. Release.
  for (aclTensor* t : {x1, x2, gamma, y, rstd, x}) aclDestroyTensor(t);
  if (workspaceAddr != nullptr) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return 0;
}
