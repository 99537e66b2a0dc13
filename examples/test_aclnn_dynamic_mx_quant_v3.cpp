// aclnnDynamicMxQuantV3 sample: x [1, 4] (bf16 0, 8, 64, 512: the values of CANN's own sample),
// axis -1, roundMode "rint", dstType 36 (FLOAT8_E4M3FN), blocksize 32, scaleAlg 1 (cuBLAS),
// dstTypeMax 0, maxLowBound 0.5; prints y's codes and mxscale's E8M0 codes ([1, 1, 2]).
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dynamic_mx_quant_v3.h"

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
  std::vector<uint16_t> x{0, 16640, 17024, 17408};  // bf16 0, 8, 64, 512
  std::vector<uint8_t> y(4, 0);
  std::vector<uint8_t> mxscale(2, 0);
  aclTensor* tx = make_tensor(x, {1, 4}, ACL_BF16);
  aclTensor* ty = make_tensor(y, {1, 4}, ACL_FLOAT8_E4M3FN);
  aclTensor* ts = make_tensor(mxscale, {1, 1, 2}, ACL_FLOAT8_E8M0);

  char round_mode[] = "rint";
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnDynamicMxQuantV3GetWorkspaceSize(tx, -1, round_mode, 36, 32, 1, 0.0, 0.5,
                                                          ty, ts, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnDynamicMxQuantV3GetWorkspaceSize failed. ERROR: %d (%s)\n", ret,
           aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnDynamicMxQuantV3(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnDynamicMxQuantV3 failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  for (size_t i = 0; i < y.size(); ++i) printf("yOut[%zu] is: %d\n", i, y[i]);
  for (size_t i = 0; i < mxscale.size(); ++i) printf("mxscaleOut[%zu] is: %d\n", i, mxscale[i]);

  for (aclTensor* t : {tx, ty, ts}) aclDestroyTensor(t);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
