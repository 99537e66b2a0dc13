// aclnnLayerNorm sample with upstream's published inputs: x [1, 2, 32] all 2.0, normalizedShape
// {32}, weight 1, bias 0, eps 1e-5; prints out, then mean and rstd ([1, 2, 1]).
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_layer_norm.h"

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
  std::vector<float> x(64, 2.0f), weight(32, 1.0f), bias(32, 0.0f), out(64, 0.0f), mean(2, 0.0f),
      rstd(2, 0.0f);
  const std::vector<int64_t> norm{32};
  aclTensor* tx = make_tensor(x, {1, 2, 32});
  aclTensor* tw = make_tensor(weight, {32});
  aclTensor* tb = make_tensor(bias, {32});
  aclTensor* to = make_tensor(out, {1, 2, 32});
  aclTensor* tm = make_tensor(mean, {1, 2, 1});
  aclTensor* tr = make_tensor(rstd, {1, 2, 1});
  aclIntArray* ns = aclCreateIntArray(norm.data(), norm.size());

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret =
      aclnnLayerNormGetWorkspaceSize(tx, ns, tw, tb, 1e-5, to, tm, tr, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnLayerNormGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnLayerNorm(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnLayerNorm failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  for (size_t i = 0; i < out.size(); ++i) printf("out result[%zu] is: %f\n", i, out[i]);
  for (size_t i = 0; i < mean.size(); ++i) printf("mean result[%zu] is: %f\n", i, mean[i]);
  for (size_t i = 0; i < rstd.size(); ++i) printf("rstd result[%zu] is: %f\n", i, rstd[i]);

  for (aclTensor* t : {tx, tw, tb, to, tm, tr}) aclDestroyTensor(t);
  aclDestroyIntArray(ns);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
