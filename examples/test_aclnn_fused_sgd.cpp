// aclnnFusedSgd sample: CANN's own sample's inputs (two FLOAT parameters of shapes [2, 2, 2] and
// [2, 2], zero momentum buffers, gradScale 1, weightDecay 0.01, momentum 0.9, lr 0.001,
// isFirstStep), then a second step (isFirstStep false, gradScale 4) on the results. Prints the
// parameters, gradients and momentum buffers after each.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_fused_sgd.h"

namespace {

aclTensor* make_tensor(std::vector<float>& host, const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND,
                         shape.data(), shape.size(), host.data());
}

void print(const char* name, const std::vector<float>& v) {
  for (size_t i = 0; i < v.size(); ++i) printf("%s[%zu] is: %.9g\n", name, i, v[i]);
}

}  // namespace

int main() {
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  std::vector<float> params1{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> grads1{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f};
  std::vector<float> momentum1(8, 0.0f);
  std::vector<float> params2{9, 10, 11, 12};
  std::vector<float> grads2{0.9f, 1.0f, 1.1f, 1.2f};
  std::vector<float> momentum2(4, 0.0f);
  const std::vector<int64_t> shape1{2, 2, 2}, shape2{2, 2}, one{1};

  std::vector<aclTensor*> params{make_tensor(params1, shape1), make_tensor(params2, shape2)};
  std::vector<aclTensor*> grads{make_tensor(grads1, shape1), make_tensor(grads2, shape2)};
  std::vector<aclTensor*> momentum{make_tensor(momentum1, shape1), make_tensor(momentum2, shape2)};
  aclTensorList* params_list = aclCreateTensorList(params.data(), params.size());
  aclTensorList* grads_list = aclCreateTensorList(grads.data(), grads.size());
  aclTensorList* momentum_list = aclCreateTensorList(momentum.data(), momentum.size());

  const float scales[2] = {1.0f, 4.0f};
  for (int step = 0; step < 2; ++step) {
    std::vector<float> grad_scale{scales[step]};
    aclTensor* scale = make_tensor(grad_scale, one);
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;
    aclnnStatus ret = aclnnFusedSgdGetWorkspaceSize(
        params_list, grads_list, momentum_list, scale, /*weightDecay=*/0.01f, /*momentum=*/0.9f,
        /*lr=*/0.001f, /*dampening=*/0.0f, /*nesterov=*/false, /*maximize=*/false,
        /*isFirstStep=*/step == 0, &workspace_size, &executor);
    if (ret != ACL_SUCCESS) {
      printf("aclnnFusedSgdGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
      return 1;
    }
    void* workspace = nullptr;
    if (workspace_size > 0 &&
        aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
      return 1;
    }
    ret = aclnnFusedSgd(workspace, workspace_size, executor, nullptr);
    if (ret != ACL_SUCCESS) {
      printf("aclnnFusedSgd failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
      return 1;
    }
    printf("step %d\n", step + 1);
    print("paramsRef1", params1);
    print("gradsRef1", grads1);
    print("momentum1", momentum1);
    print("paramsRef2", params2);
    print("gradsRef2", grads2);
    print("momentum2", momentum2);
    aclDestroyTensor(scale);
    if (workspace != nullptr) aclrtFree(workspace);
  }

  for (aclTensorList* l : {params_list, grads_list, momentum_list}) aclDestroyTensorList(l);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
