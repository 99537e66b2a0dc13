// aclnnAscendQuantV3 sample: x [4, 2] = 0..7 (fp32), per-channel scale {1, 2} and offset {1, 2}
// along axis -1, sqrtMode false, roundMode "round", dstType 2 (INT8) (the values of CANN's own
// sample); prints y.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_ascend_quant_v3.h"

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
  std::vector<float> x{0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<float> scale{1, 2}, offset{1, 2};
  std::vector<int8_t> y(8, 0);
  aclTensor* tx = make_tensor(x, {4, 2}, ACL_FLOAT);
  aclTensor* ts = make_tensor(scale, {2}, ACL_FLOAT);
  aclTensor* to = make_tensor(offset, {2}, ACL_FLOAT);
  aclTensor* ty = make_tensor(y, {4, 2}, ACL_INT8);

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnAscendQuantV3GetWorkspaceSize(tx, ts, to, false, "round", 2, -1, ty,
                                                       &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnAscendQuantV3GetWorkspaceSize failed. ERROR: %d (%s)\n", ret,
           aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnAscendQuantV3(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnAscendQuantV3 failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  for (size_t i = 0; i < y.size(); ++i) printf("result[%zu] is: %d\n", i, y[i]);

  for (aclTensor* t : {tx, ts, to, ty}) aclDestroyTensor(t);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
