// CrossEntropyLoss and CrossEntropyLossGrad through aclnn, written as a CANN program is: the
// runtime set up, device buffers, the two-phase calls, the results copied back. The first batch
// is CANN's own aclnnCrossEntropyLoss sample (input [2, 5], targets 0 and 0, mean; upstream prints
// loss 1.0937543), then its gradient; the second has class weights, label smoothing, an ignored
// row and the sum reduction. Prints "<name>: v v ...".
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_cross_entropy_loss.h"
#include "aclnnop/aclnn_cross_entropy_loss_grad.h"

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
template <typename T>
static int CreateAclTensor(const std::vector<T>& host, const std::vector<int64_t>& shape,
                           void** device, aclDataType dataType, aclTensor** tensor) {
  const size_t bytes = ShapeSize(shape) * sizeof(T);
  auto ret = aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclrtMalloc failed: %d\n", ret); return ret);
  ret = aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclrtMemcpy failed: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) {
    strides[i] = shape[i + 1] * strides[i + 1];
  }
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0,
                            aclFormat::ACL_FORMAT_ND, shape.data(), shape.size(), *device);
  return 0;
}

static std::vector<float> CopyBack(void* device, int64_t n) {
  std::vector<float> host(n, 0.0f);
  aclrtMemcpy(host.data(), n * sizeof(float), device, n * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
  return host;
}

static void Print(const char* name, const std::vector<float>& values) {
  printf("%s:", name);
  for (float v : values) printf(" %.9g", v);
  printf("\n");
}

// Runs phase two with a workspace of the size phase one reported.
static int RunPhaseTwo(uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream,
                       aclnnStatus (*phaseTwo)(void*, uint64_t, aclOpExecutor*, aclrtStream)) {
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

// One forward and backward: loss and logProb, then the gradient for gradLoss = 1.
static int RunBatch(const char* label, aclrtStream stream, const std::vector<float>& inputData,
                    int64_t rows, int64_t classes, const std::vector<int64_t>& targetData,
                    const std::vector<float>* weightData, const char* reduction,
                    double labelSmoothing) {
  const bool none = reduction[0] == 'n';
  const std::vector<int64_t> inputShape = {rows, classes}, rowShape = {rows},
                             classShape = {classes};
  const std::vector<int64_t> lossShape = none ? rowShape : std::vector<int64_t>{1};
  const std::vector<int64_t> gradShape = none ? rowShape : std::vector<int64_t>{};
  const int64_t ignoreIndex = -100;
  void* inputDev = nullptr;
  void* targetDev = nullptr;
  void* weightDev = nullptr;
  void* lossDev = nullptr;
  void* logProbDev = nullptr;
  void* zlossDev = nullptr;
  void* lseDev = nullptr;
  void* gradLossDev = nullptr;
  void* xGradDev = nullptr;
  aclTensor* input = nullptr;
  aclTensor* target = nullptr;
  aclTensor* weight = nullptr;
  aclTensor* loss = nullptr;
  aclTensor* logProb = nullptr;
  aclTensor* zloss = nullptr;
  aclTensor* lse = nullptr;
  aclTensor* gradLoss = nullptr;
  aclTensor* xGrad = nullptr;
  int ok = CreateAclTensor(inputData, inputShape, &inputDev, ACL_FLOAT, &input);
  ok |= CreateAclTensor(targetData, rowShape, &targetDev, ACL_INT64, &target);
  if (weightData != nullptr) {
    ok |= CreateAclTensor(*weightData, classShape, &weightDev, ACL_FLOAT, &weight);
  }
  ok |= CreateAclTensor(std::vector<float>(ShapeSize(lossShape), 0), lossShape, &lossDev, ACL_FLOAT,
                        &loss);
  ok |= CreateAclTensor(std::vector<float>(rows * classes, 0), inputShape, &logProbDev, ACL_FLOAT,
                        &logProb);
  ok |= CreateAclTensor(std::vector<float>(ShapeSize(lossShape), 0), lossShape, &zlossDev,
                        ACL_FLOAT, &zloss);
  ok |= CreateAclTensor(std::vector<float>(rows, 0), rowShape, &lseDev, ACL_FLOAT, &lse);
  ok |= CreateAclTensor(std::vector<float>(ShapeSize(gradShape), 1.0f), gradShape, &gradLossDev,
                        ACL_FLOAT, &gradLoss);
  ok |= CreateAclTensor(std::vector<float>(rows * classes, 0), inputShape, &xGradDev, ACL_FLOAT,
                        &xGrad);
  CHECK_RET(ok == 0, return 1);

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor;
  auto ret = aclnnCrossEntropyLossGetWorkspaceSize(input, target, weight, reduction, ignoreIndex,
                                                   labelSmoothing, 0.0, false, loss, logProb, zloss,
                                                   lse, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, printf("aclnnCrossEntropyLossGetWorkspaceSize failed: %d\n", ret);
            return ret);
  CHECK_RET(RunPhaseTwo(workspaceSize, executor, stream, aclnnCrossEntropyLoss) == 0, return 1);
  ret = aclnnCrossEntropyLossGradGetWorkspaceSize(gradLoss, logProb, target, weight, nullptr,
                                                  nullptr, reduction, ignoreIndex, labelSmoothing,
                                                  0.0, xGrad, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            printf("aclnnCrossEntropyLossGradGetWorkspaceSize failed: %d\n", ret);
            return ret);
  CHECK_RET(RunPhaseTwo(workspaceSize, executor, stream, aclnnCrossEntropyLossGrad) == 0, return 1);

  char name[64];
  snprintf(name, sizeof(name), "%s loss", label);
  Print(name, CopyBack(lossDev, ShapeSize(lossShape)));
  snprintf(name, sizeof(name), "%s logProb", label);
  Print(name, CopyBack(logProbDev, rows * classes));
  snprintf(name, sizeof(name), "%s xGrad", label);
  Print(name, CopyBack(xGradDev, rows * classes));

  for (aclTensor* t : {input, target, weight, loss, logProb, zloss, lse, gradLoss, xGrad}) {
    if (t != nullptr) aclDestroyTensor(t);
  }
  for (void* d : {inputDev, targetDev, weightDev, lossDev, logProbDev, zlossDev, lseDev,
                  gradLossDev, xGradDev}) {
    if (d != nullptr) aclrtFree(d);
  }
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

  // CANN's sample: input [2, 5], targets 0 and 0, no weight, mean.
  CHECK_RET(RunBatch("upstream", stream, {5, 0, 3, 3, 7, 9, 3, 5, 2, 4}, 2, 5, {0, 0}, nullptr,
                     "mean", 0.0) == 0,
            return 1);
  // Class weights, label smoothing 0.1, the second row ignored, sum.
  const std::vector<float> weight = {0.5f, 1.0f, 2.0f, 1.5f};
  CHECK_RET(RunBatch("weighted", stream,
                     {2.0f, 1.0f, 0.1f, -1.0f, 0.5f, 2.5f, 0.3f, 0.0f, -1.0f, 0.0f, 3.0f, 1.0f}, 3,
                     4, {1, -100, 3}, &weight, "sum", 0.1) == 0,
            return 1);

  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return 0;
}
