// aclnnQuantMax sample: x [4, 4] (fp32, the values of CANN's own sample), scale 1, dstType 36
// (FLOAT8_E4M3FN), roundMode "rint"; prints y's codes and amax.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quant_max.h"

namespace {

template <class T>
aclTensor* make_tensor(std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType dt) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return aclCreateTensor(shape.data(), shape.size(), dt, strides.data(), 0, ACL_FORMAT_ND,
                         shape.data(), shape.size(), host.data());
}

}  // namespace

int main() {
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  std::vector<float> x{1.0f, -2.0f, 3.0f, -4.0f,  5.0f,    -6.0f,  7.0f,    -8.0f,
                       0.5f, -0.5f, 0.0f, 448.0f, -448.0f, 0.125f, -0.125f, 2.5f};
  std::vector<float> scale{1.0f};
  std::vector<uint8_t> y(16, 0);
  std::vector<float> amax{0.0f};
  aclTensor* tx = make_tensor(x, {4, 4}, ACL_FLOAT);
  aclTensor* ts = make_tensor(scale, {1}, ACL_FLOAT);
  aclTensor* ty = make_tensor(y, {4, 4}, ACL_FLOAT8_E4M3FN);
  aclTensor* ta = make_tensor(amax, {1}, ACL_FLOAT);

  int64_t dst_type = 36;  // FLOAT8_E4M3FN
  char round_mode[] = "rint";
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnQuantMaxGetWorkspaceSize(tx, ts, round_mode, dst_type, ty, ta,
                                                  &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnQuantMaxGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnQuantMax(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnQuantMax failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  for (size_t i = 0; i < y.size(); ++i) printf("yOut[%zu] is: %d\n", i, y[i]);
  printf("amaxOut is: %f\n", amax[0]);

  for (aclTensor* t : {tx, ts, ty, ta}) aclDestroyTensor(t);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
