// aclnnRmsNormGrad sample: dy = x = 1..32 as [2, 1, 16], rstd [2] = {1, 2} (the normalised dims
// dropped, as CANN's own sample passes it), gamma = 1..16; prints dx, then dgamma.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_rms_norm_grad.h"

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
  std::vector<float> dy, x, rstd{1.0f, 2.0f}, gamma;
  for (int i = 1; i <= 32; ++i) {
    dy.push_back(static_cast<float>(i));
    x.push_back(static_cast<float>(i));
  }
  for (int i = 1; i <= 16; ++i) gamma.push_back(static_cast<float>(i));
  std::vector<float> dx(32, 0.0f), dgamma(16, 0.0f);
  aclTensor* tdy = make_tensor(dy, {2, 1, 16});
  aclTensor* tx = make_tensor(x, {2, 1, 16});
  aclTensor* tr = make_tensor(rstd, {2});
  aclTensor* tg = make_tensor(gamma, {16});
  aclTensor* tdx = make_tensor(dx, {2, 1, 16});
  aclTensor* tdg = make_tensor(dgamma, {16});

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret =
      aclnnRmsNormGradGetWorkspaceSize(tdy, tx, tr, tg, tdx, tdg, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnRmsNormGradGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnRmsNormGrad(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnRmsNormGrad failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  for (size_t i = 0; i < dx.size(); ++i) printf("result[%zu] is: %f\n", i, dx[i]);
  for (size_t i = 0; i < dgamma.size(); ++i) printf("dgamma[%zu] is: %f\n", i, dgamma[i]);

  for (aclTensor* t : {tdy, tx, tr, tg, tdx, tdg}) aclDestroyTensor(t);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
