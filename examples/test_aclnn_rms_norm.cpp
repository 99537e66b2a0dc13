// aclnnRmsNorm sample: x [2, 16] and gamma [16] (fp32, the values of CANN's own sample), epsilon
// 1e-6; prints y, then rstd (shape [2, 1]).
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_rms_norm.h"

namespace {

aclTensor* make_tensor(std::vector<float>& host, const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND,
                         shape.data(), shape.size(), host.data());
}

}  // namespace

int main() {
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  std::vector<float> x, gamma;
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 16; ++i) x.push_back(static_cast<float>(i % 8));
  }
  for (int i = 0; i < 16; ++i) gamma.push_back(static_cast<float>(i % 8));
  std::vector<float> y(32, 0.0f), rstd(2, 0.0f);
  aclTensor* tx = make_tensor(x, {2, 16});
  aclTensor* tg = make_tensor(gamma, {16});
  aclTensor* ty = make_tensor(y, {2, 16});
  aclTensor* tr = make_tensor(rstd, {2, 1});

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnRmsNormGetWorkspaceSize(tx, tg, 1e-6, ty, tr, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnRmsNormGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnRmsNorm(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnRmsNorm failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  for (size_t i = 0; i < y.size(); ++i) printf("result[%zu] is: %f\n", i, y[i]);
  for (size_t i = 0; i < rstd.size(); ++i) printf("rstd[%zu] is: %.9g\n", i, rstd[i]);

  for (aclTensor* t : {tx, tg, ty, tr}) aclDestroyTensor(t);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
