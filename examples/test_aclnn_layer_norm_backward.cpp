// aclnnLayerNormBackward sample with upstream's published inputs: dy = x = {2, 3, 4, 5} as
// [2, 2], normalizedShape {2}, mean {2, 3} and rstd {4, 5} as [2, 1], weight 1, bias 0,
// outputMask all true; prints gradInput, gradWeight and gradBias.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_layer_norm_backward.h"

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
  std::vector<float> dy{2, 3, 4, 5}, x{2, 3, 4, 5}, mean{2, 3}, rstd{4, 5}, weight{1, 1},
      bias{0, 0}, dx(4, 0.0f), dw(2, 0.0f), db(2, 0.0f);
  const std::vector<int64_t> norm{2};
  bool mask[3] = {true, true, true};
  aclTensor* tdy = make_tensor(dy, {2, 2});
  aclTensor* tx = make_tensor(x, {2, 2});
  aclTensor* tm = make_tensor(mean, {2, 1});
  aclTensor* tr = make_tensor(rstd, {2, 1});
  aclTensor* tw = make_tensor(weight, {2});
  aclTensor* tb = make_tensor(bias, {2});
  aclTensor* tdx = make_tensor(dx, {2, 2});
  aclTensor* tdw = make_tensor(dw, {2});
  aclTensor* tdb = make_tensor(db, {2});
  aclIntArray* ns = aclCreateIntArray(norm.data(), norm.size());
  aclBoolArray* om = aclCreateBoolArray(mask, 3);

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnLayerNormBackwardGetWorkspaceSize(tdy, tx, ns, tm, tr, tw, tb, om, tdx,
                                                           tdw, tdb, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnLayerNormBackwardGetWorkspaceSize failed. ERROR: %d (%s)\n", ret,
           aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnLayerNormBackward(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnLayerNormBackward failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  for (size_t i = 0; i < dx.size(); ++i) printf("gradInput result[%zu] is: %f\n", i, dx[i]);
  for (size_t i = 0; i < dw.size(); ++i) printf("gradWeight result[%zu] is: %f\n", i, dw[i]);
  for (size_t i = 0; i < db.size(); ++i) printf("gradBias result[%zu] is: %f\n", i, db[i]);

  for (aclTensor* t : {tdy, tx, tm, tr, tw, tb, tdx, tdw, tdb}) aclDestroyTensor(t);
  aclDestroyIntArray(ns);
  aclDestroyBoolArray(om);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
