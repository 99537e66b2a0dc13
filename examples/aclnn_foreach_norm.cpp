// The norm of each tensor of a list with aclnnForeachNorm, as a CANN program does: two fp32
// tensors (x1 [2, 3] holding 1..6, x2 [1, 3] holding 7, 8, 9) in one aclTensorList, two
// one-element outputs of shape [1, 1] in another, p as an aclScalar; both phases, then the
// norms copied back. Run for p = 2 (a FLOAT scalar), 1 (INT64) and +inf (DOUBLE).
#include "aclnnop/aclnn_foreach_norm.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"

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

float ToHost(void* device) {
  float v = 0.0f;
  aclrtMemcpy(&v, sizeof(v), device, sizeof(v), ACL_MEMCPY_DEVICE_TO_HOST);
  return v;
}

// One call with p given by `scalar`; prints both norms.
int Norms(const char* label, aclScalar* scalar, aclrtStream stream) {
  void *dx1 = nullptr, *dx2 = nullptr, *dout1 = nullptr, *dout2 = nullptr;
  std::vector<aclTensor*> xs{DeviceTensor({1, 2, 3, 4, 5, 6}, {2, 3}, &dx1),
                             DeviceTensor({7, 8, 9}, {1, 3}, &dx2)};
  std::vector<aclTensor*> outs{DeviceTensor({0}, {1, 1}, &dout1),
                               DeviceTensor({0}, {1, 1}, &dout2)};
  aclTensorList* x = aclCreateTensorList(xs.data(), xs.size());
  aclTensorList* out = aclCreateTensorList(outs.data(), outs.size());
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnForeachNormGetWorkspaceSize(x, scalar, out, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    std::printf("aclnnForeachNormGetWorkspaceSize failed: %d %s\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0) aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST);
  ret = aclnnForeachNorm(workspace, workspace_size, executor, stream);
  if (ret != ACL_SUCCESS) {
    std::printf("aclnnForeachNorm failed: %d %s\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  aclrtSynchronizeStream(stream);
  std::printf("%s out1: %f\n%s out2: %f\n", label, ToHost(dout1), label, ToHost(dout2));
  aclDestroyTensorList(x);  // destroys the tensors it holds too
  aclDestroyTensorList(out);
  for (void* p : {dx1, dx2, dout1, dout2, workspace}) {
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
  float two = 2.0f;
  int64_t one = 1;
  double inf = INFINITY;
  aclScalar* p2 = aclCreateScalar(&two, ACL_FLOAT);
  aclScalar* p1 = aclCreateScalar(&one, ACL_INT64);
  aclScalar* pinf = aclCreateScalar(&inf, ACL_DOUBLE);
  int rc = Norms("p=2", p2, stream);
  rc |= Norms("p=1", p1, stream);
  rc |= Norms("p=inf", pinf, stream);
  aclDestroyScalar(p2);
  aclDestroyScalar(p1);
  aclDestroyScalar(pinf);
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  return rc;
}
