// aclnnApplyAdamWV2 in the aclnn style: one AdamW step with AMSGrad and maximize on a [2, 4] fp32
// parameter, updating var, m, v and the running maximum of v in place, then printing them.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_apply_adam_w_v2.h"

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

namespace {

int64_t ShapeSize(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Copies `host` into new device memory and wraps it in a contiguous ND aclTensor.
int CreateTensor(const std::vector<float>& host, const std::vector<int64_t>& shape, void** device,
                 aclTensor** tensor) {
  const size_t bytes = static_cast<size_t>(ShapeSize(shape)) * sizeof(float);
  int ret = aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("aclrtMalloc failed: %d\n", ret); return ret);
  ret = aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("aclrtMemcpy failed: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = shape[i + 1] * strides[i + 1];
  }
  *tensor = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND,
                            shape.data(), shape.size(), *device);
  CHECK_RET(*tensor != nullptr, std::printf("aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
            return 1);
  return 0;
}

void Print(const char* name, void* device, int64_t n) {
  std::vector<float> host(static_cast<size_t>(n));
  aclrtMemcpy(host.data(), host.size() * sizeof(float), device, host.size() * sizeof(float),
              ACL_MEMCPY_DEVICE_TO_HOST);
  std::printf("%s:", name);
  for (float x : host) std::printf(" %.9g", x);
  std::printf("\n");
}

}  // namespace

int main() {
  int ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("aclInit failed: %d\n", ret); return ret);
  ret = aclrtSetDevice(0);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("aclrtSetDevice failed: %d\n", ret); return ret);
  aclrtStream stream = nullptr;
  ret = aclrtCreateStream(&stream);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("aclrtCreateStream failed: %d\n", ret); return ret);

  const std::vector<int64_t> shape = {2, 4};
  const std::vector<int64_t> scalar = {1};
  // The state (updated in place), the gradient and the step count (one step already taken).
  const std::vector<std::vector<float>> hosts = {
      {0.5f, -0.25f, 1.0f, -1.5f, 0.75f, 0.0f, -0.5f, 2.0f},     // varRef
      {0.1f, -0.05f, 0.0f, 0.2f, -0.1f, 0.05f, 0.0f, -0.2f},     // mRef
      {0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f, 0.07f, 0.08f},  // vRef
      {0.02f, 0.01f, 0.05f, 0.03f, 0.06f, 0.05f, 0.08f, 0.07f},  // maxGradNormOptionalRef
      {0.3f, -0.2f, 0.1f, -0.4f, 0.25f, -0.15f, 0.05f, 0.5f},    // grad
      {1.0f}};                                                   // step (fp32)
  const char* names[] = {"var", "m", "v", "maxGradNorm", "grad", "step"};
  void* device[6] = {};
  aclTensor* tensors[6] = {};
  for (int i = 0; i < 6; ++i) {
    ret = CreateTensor(hosts[i], hosts[i].size() == 1 ? scalar : shape, &device[i], &tensors[i]);
    CHECK_RET(ret == 0, std::printf("creating %s failed\n", names[i]); return ret);
  }

  // Phase one: validate and plan; AMSGrad and maximize on, PyTorch's AdamW hyper-parameters.
  const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, weightDecay = 1e-2f, eps = 1e-8f;
  const bool amsgrad = true, maximize = true;
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnApplyAdamWV2GetWorkspaceSize(tensors[0], tensors[1], tensors[2], tensors[3],
                                          tensors[4], tensors[5], lr, beta1, beta2, weightDecay,
                                          eps, amsgrad, maximize, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("aclnnApplyAdamWV2GetWorkspaceSize failed: %d %s\n",
                                            ret, aclGetRecentErrMsg());
            return ret);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, std::printf("workspace allocation failed: %d\n", ret);
              return ret);
  }
  // Phase two: run (and free the executor).
  ret = aclnnApplyAdamWV2(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            std::printf("aclnnApplyAdamWV2 failed: %d %s\n", ret, aclGetRecentErrMsg());
            return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("aclrtSynchronizeStream failed: %d\n", ret);
            return ret);

  std::printf("aclnnApplyAdamWV2 in place, workspace %llu bytes\n",
              static_cast<unsigned long long>(workspaceSize));
  for (int i = 0; i < 4; ++i) Print(names[i], device[i], ShapeSize(shape));

  for (int i = 0; i < 6; ++i) {
    aclDestroyTensor(tensors[i]);
    aclrtFree(device[i]);
  }
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
