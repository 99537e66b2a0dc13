// Unscaling a list of gradients and checking them for Inf/NaN with
// aclnnForeachNonFiniteCheckAndUnscale, as a CANN program does: two fp32 gradients in one
// aclTensorList (which owns them), foundInf and invScale one-element fp32 tensors, both phases,
// then the results copied back. A second call with an inf shows foundInf set.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_foreach_non_finite_check_and_unscale.h"

namespace {

aclTensor* DeviceTensor(const std::vector<float>& host, const std::vector<int64_t>& shape,
                        void** device) {
  const size_t bytes = host.size() * sizeof(float);
  if (aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return nullptr;
  aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND,
                         shape.data(), shape.size(), *device);
}

std::vector<float> ToHost(void* device, size_t n) {
  std::vector<float> host(n);
  aclrtMemcpy(host.data(), n * sizeof(float), device, n * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
  return host;
}

// One unscale call over g1 [2, 3] and g2 [1, 3]; prints both and foundInf.
int Unscale(const char* label, std::vector<float> g1, std::vector<float> g2, float inv,
            aclrtStream stream) {
  void *d1 = nullptr, *d2 = nullptr, *dfound = nullptr, *dinv = nullptr;
  aclTensor* t1 = DeviceTensor(g1, {2, 3}, &d1);
  aclTensor* t2 = DeviceTensor(g2, {1, 3}, &d2);
  aclTensor* found = DeviceTensor({0.0f}, {1}, &dfound);
  aclTensor* scale = DeviceTensor({inv}, {1}, &dinv);
  std::vector<aclTensor*> grads{t1, t2};
  aclTensorList* list = aclCreateTensorList(grads.data(), grads.size());
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnForeachNonFiniteCheckAndUnscaleGetWorkspaceSize(
      list, found, scale, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    std::printf("GetWorkspaceSize failed: %d %s\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0) aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST);
  ret = aclnnForeachNonFiniteCheckAndUnscale(workspace, workspace_size, executor, stream);
  if (ret != ACL_SUCCESS) {
    std::printf("aclnnForeachNonFiniteCheckAndUnscale failed: %d %s\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  aclrtSynchronizeStream(stream);
  std::printf("%s g1:", label);
  for (float v : ToHost(d1, 6)) std::printf(" %f", v);
  std::printf("\n%s g2:", label);
  for (float v : ToHost(d2, 3)) std::printf(" %f", v);
  std::printf("\n%s foundInf: %f\n", label, ToHost(dfound, 1)[0]);
  aclDestroyTensorList(list);  // destroys t1 and t2 too
  aclDestroyTensor(found);
  aclDestroyTensor(scale);
  for (void* p : {d1, d2, dfound, dinv, workspace}) {
    if (p != nullptr) aclrtFree(p);
  }
  return 0;
}

}  // namespace

int main() {
  aclrtStream stream = nullptr;
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS ||
      aclrtCreateStream(&stream) != ACL_SUCCESS) {
    std::printf("runtime initialisation failed\n");
    return 1;
  }
  int rc = Unscale("finite", {1, 2, 3, 4, 5, 6}, {7, 8, 9}, 3.1f, stream);
  rc |= Unscale("with-inf", {1, 2, 3, 4, 5, 6}, {7, 1.0f / 0.0f, 9}, 0.5f, stream);
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  return rc;
}
