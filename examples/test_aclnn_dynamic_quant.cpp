// aclnnDynamicQuant sample: x [4, 32] (fp16, x[i][j] = 32 i + j) and smooth scales [32] (fp16,
// 32 k + 1), the values of CANN's own sample; INT8 output. Prints y, then the per-row scale.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dynamic_quant.h"

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
  const int rows = 4, len = 32;
  std::vector<aclFloat16> x, smooth;
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < len; ++j) x.push_back(aclFloatToFloat16(static_cast<float>(i * len + j)));
  }
  for (int k = 0; k < len; ++k)
    smooth.push_back(aclFloatToFloat16(static_cast<float>(k * len + 1)));
  std::vector<int8_t> y(rows * len, 0);
  std::vector<float> scale(rows, 0.0f);
  aclTensor* tx = make_tensor(x, {rows, len}, ACL_FLOAT16);
  aclTensor* ts = make_tensor(smooth, {len}, ACL_FLOAT16);
  aclTensor* ty = make_tensor(y, {rows, len}, ACL_INT8);
  aclTensor* tc = make_tensor(scale, {rows}, ACL_FLOAT);

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnDynamicQuantGetWorkspaceSize(tx, ts, ty, tc, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnDynamicQuantGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnDynamicQuant(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnDynamicQuant failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  for (size_t i = 0; i < y.size(); ++i) printf("y result[%zu] is: %d\n", i, y[i]);
  for (size_t i = 0; i < scale.size(); ++i) printf("scale result[%zu] is: %.9g\n", i, scale[i]);

  for (aclTensor* t : {tx, ts, ty, tc}) aclDestroyTensor(t);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
