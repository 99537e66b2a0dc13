// The training loss with aclnnSoftmaxCrossEntropyWithLogits, as a CANN program calls it: features
// and labels [16, 4] fp32 (CANN's own sample uses features all 1 and labels all 2), loss [16] and
// backprop [16, 4], both phases, results copied back; then a classifier-like batch: 3 rows of
// logits with one-hot labels.
#include "aclnnop/aclnn_softmax_cross_entropy_with_logits.h"

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

std::vector<float> ToHost(void* device, size_t n) {
  std::vector<float> host(n);
  aclrtMemcpy(host.data(), n * sizeof(float), device, n * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
  return host;
}

int Run(const char* label, const std::vector<float>& x, const std::vector<float>& y, int64_t rows,
        int64_t classes, aclrtStream stream) {
  void *dx = nullptr, *dy = nullptr, *dloss = nullptr, *dbp = nullptr;
  aclTensor* features = DeviceTensor(x, {rows, classes}, &dx);
  aclTensor* labels = DeviceTensor(y, {rows, classes}, &dy);
  aclTensor* loss = DeviceTensor(std::vector<float>(rows, 8.0f), {rows}, &dloss);
  aclTensor* backprop =
      DeviceTensor(std::vector<float>(rows * classes, 9.0f), {rows, classes}, &dbp);
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnSoftmaxCrossEntropyWithLogitsGetWorkspaceSize(
      features, labels, loss, backprop, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    std::printf("GetWorkspaceSize failed: %d %s\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0) aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST);
  ret = aclnnSoftmaxCrossEntropyWithLogits(workspace, workspace_size, executor, stream);
  if (ret != ACL_SUCCESS) {
    std::printf("aclnnSoftmaxCrossEntropyWithLogits failed: %d %s\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  aclrtSynchronizeStream(stream);
  std::printf("%s loss:", label);
  for (float v : ToHost(dloss, rows)) std::printf(" %.6f", v);
  std::printf("\n%s backprop:", label);
  for (float v : ToHost(dbp, rows * classes)) std::printf(" %.6f", v);
  std::printf("\n");
  for (aclTensor* t : {features, labels, loss, backprop}) aclDestroyTensor(t);
  for (void* p : {dx, dy, dloss, dbp, workspace}) {
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
  int rc = Run("constant", std::vector<float>(16 * 4, 1.0f), std::vector<float>(16 * 4, 2.0f), 16,
               4, stream);
  rc |= Run("classifier", {2.0f, 1.0f, 0.1f, 0.5f, 2.5f, 0.3f, -1.0f, 0.0f, 3.0f},
            {1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 1.0f}, 3, 3, stream);
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  return rc;
}
