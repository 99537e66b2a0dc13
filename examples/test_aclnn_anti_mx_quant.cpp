// aclnnAntiMxQuant sample: x [1, 4] FLOAT8_E4M3FN codes 0, 72, 96, 120 and mxscale [1, 1, 2]
// codes 128, 0 (the values of CANN's own sample: DynamicMxQuantV3's sample output), axis -1,
// dstType 27 (BFLOAT16); prints y's bf16 bits.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_anti_mx_quant.h"

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
  std::vector<uint8_t> x{0, 72, 96, 120};
  std::vector<uint8_t> mxscale{128, 0};
  std::vector<uint16_t> y(4, 0);
  aclTensor* tx = make_tensor(x, {1, 4}, ACL_FLOAT8_E4M3FN);
  aclTensor* ts = make_tensor(mxscale, {1, 1, 2}, ACL_FLOAT8_E8M0);
  aclTensor* ty = make_tensor(y, {1, 4}, ACL_BF16);

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret =
      aclnnAntiMxQuantGetWorkspaceSize(tx, ts, -1, 27, ty, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnAntiMxQuantGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnAntiMxQuant(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnAntiMxQuant failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  for (size_t i = 0; i < y.size(); ++i) printf("y[%zu] is: %u\n", i, y[i]);

  for (aclTensor* t : {tx, ts, ty}) aclDestroyTensor(t);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
