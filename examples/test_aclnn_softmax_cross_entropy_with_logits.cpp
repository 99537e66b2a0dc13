// SoftmaxCrossEntropyWithLogits through aclnn, written as CANN's own sample for it is written,
// with the same under-allocation: its output buffers are sized from int16 host vectors (16 x 2 =
// 32 bytes for loss, 64 x 2 = 128 bytes for backprop) while the tensors describe fp32 [16] and
// [16, 4], so the operator writes 64 and 256 bytes into them. CANN survives it (its device memory
// is padded and pooled); so must this runtime: the overrun lands in the buffers' own spare bytes,
// and MANTISSA_DEBUG_MEMORY=1 reports it at aclrtFree. features are 1 and labels 2 everywhere, so
// every row's loss is -sum(2 log(1/4)) = 8 ln 4. Prints "loss[i] is: v".
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_softmax_cross_entropy_with_logits.h"

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

// A contiguous ND fp32 aclTensor over a device buffer sized from the host vector's element type
// (as the upstream sample sizes it: ShapeSize(shape) * sizeof(T)).
template <typename T>
static int MakeTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, void** device,
                      aclTensor** tensor) {
  const size_t bytes = ShapeSize(shape) * sizeof(T);
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
  int32_t device_id = 0;
  aclrtStream stream = nullptr;
  auto ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclInit failed: %d\n", ret); return ret);
  ret = aclrtSetDevice(device_id);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclrtSetDevice failed: %d\n", ret); return ret);
  ret = aclrtCreateStream(&stream);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclrtCreateStream failed: %d\n", ret); return ret);

  const std::vector<int64_t> in_shape = {16, 4}, loss_shape = {16};
  const std::vector<float> features_host(16 * 4, 1.0f), labels_host(16 * 4, 2.0f);
  const std::vector<int16_t> loss_host(16, 8), backprop_host(16 * 4, 9);  // upstream's types
  void *features_dev = nullptr, *labels_dev = nullptr, *loss_dev = nullptr, *backprop_dev = nullptr;
  aclTensor *features = nullptr, *labels = nullptr, *loss = nullptr, *backprop = nullptr;
  CHECK_RET(MakeTensor(features_host, in_shape, &features_dev, &features) == 0, return 1);
  CHECK_RET(MakeTensor(labels_host, in_shape, &labels_dev, &labels) == 0, return 1);
  CHECK_RET(MakeTensor(loss_host, loss_shape, &loss_dev, &loss) == 0, return 1);
  CHECK_RET(MakeTensor(backprop_host, in_shape, &backprop_dev, &backprop) == 0, return 1);

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnSoftmaxCrossEntropyWithLogitsGetWorkspaceSize(features, labels, loss, backprop,
                                                           &workspace_size, &executor);
  CHECK_RET(ret == ACL_SUCCESS, printf("GetWorkspaceSize failed: %d\n", ret); return ret);
  void* workspace = nullptr;
  if (workspace_size > 0) {
    ret = aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, printf("workspace aclrtMalloc failed: %d\n", ret); return ret);
  }
  ret = aclnnSoftmaxCrossEntropyWithLogits(workspace, workspace_size, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclnnSoftmaxCrossEntropyWithLogits failed: %d\n", ret);
            return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclrtSynchronizeStream failed: %d\n", ret); return ret);

  // Read back as the upstream sample does: 16 fp32 values from the 32-byte buffer.
  std::vector<float> result(16, 0.0f);
  ret = aclrtMemcpy(result.data(), result.size() * sizeof(float), loss_dev,
                    result.size() * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, printf("copy back failed: %d\n", ret); return ret);
  for (size_t i = 0; i < result.size(); ++i) printf("loss[%zu] is: %.9g\n", i, result[i]);

  aclDestroyTensor(features);
  aclDestroyTensor(labels);
  aclDestroyTensor(loss);
  aclDestroyTensor(backprop);
  aclrtFree(features_dev);
  aclrtFree(labels_dev);
  aclrtFree(loss_dev);
  aclrtFree(backprop_dev);
  if (workspace_size > 0) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(device_id);
  aclFinalize();
  return 0;
}
