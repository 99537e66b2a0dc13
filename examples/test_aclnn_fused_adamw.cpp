// aclnnFusedAdamw sample: CANN's own sample's inputs (two parameters of shapes [2, 2, 2] and
// [2, 2], FLOAT, steps taken 3 and 4, gradScale 2, amsgrad, lr 0.001, weightDecay 0). CANN's
// sample gives its step tensors the parameters' shapes over one-element buffers; here each has
// shape [1]. Prints every updated tensor.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_fused_adamw.h"

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
  std::vector<float> exp_avgs1{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f};
  std::vector<float> exp_avg_sqs1{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f};
  std::vector<float> max_exp_avg_sqs1{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> steps1{3};
  std::vector<float> params2{9, 10, 11, 12};
  std::vector<float> grads2{0.9f, 1.0f, 1.1f, 1.2f};
  std::vector<float> exp_avgs2{-1, -2, -3, -4};
  std::vector<float> exp_avg_sqs2{1, 2, 3, 4};
  std::vector<float> max_exp_avg_sqs2{2, 2, 2, 2};
  std::vector<float> steps2{4};
  std::vector<float> grad_scale{2};
  const std::vector<int64_t> shape1{2, 2, 2}, shape2{2, 2}, one{1};

  std::vector<aclTensor*> params{make_tensor(params1, shape1), make_tensor(params2, shape2)};
  std::vector<aclTensor*> grads{make_tensor(grads1, shape1), make_tensor(grads2, shape2)};
  std::vector<aclTensor*> exp_avgs{make_tensor(exp_avgs1, shape1), make_tensor(exp_avgs2, shape2)};
  std::vector<aclTensor*> exp_avg_sqs{make_tensor(exp_avg_sqs1, shape1),
                                      make_tensor(exp_avg_sqs2, shape2)};
  std::vector<aclTensor*> max_exp_avg_sqs{make_tensor(max_exp_avg_sqs1, shape1),
                                          make_tensor(max_exp_avg_sqs2, shape2)};
  std::vector<aclTensor*> steps{make_tensor(steps1, one), make_tensor(steps2, one)};
  aclTensor* scale = make_tensor(grad_scale, one);
  aclTensorList* params_list = aclCreateTensorList(params.data(), params.size());
  aclTensorList* grads_list = aclCreateTensorList(grads.data(), grads.size());
  aclTensorList* exp_avgs_list = aclCreateTensorList(exp_avgs.data(), exp_avgs.size());
  aclTensorList* exp_avg_sqs_list = aclCreateTensorList(exp_avg_sqs.data(), exp_avg_sqs.size());
  aclTensorList* max_list = aclCreateTensorList(max_exp_avg_sqs.data(), max_exp_avg_sqs.size());
  aclTensorList* steps_list = aclCreateTensorList(steps.data(), steps.size());

  double lr = 0.001f;
  double beta1 = 0.9f;
  double beta2 = 0.999f;
  double weight_decay = 0.0f;
  double eps = 1e-8;
  bool amsgrad = true;
  bool maximize = false;
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnFusedAdamwGetWorkspaceSize(
      params_list, grads_list, exp_avgs_list, exp_avg_sqs_list, max_list, steps_list, scale,
      nullptr, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnFusedAdamwGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnFusedAdamw(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnFusedAdamw failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  print("paramsRef1", params1);
  print("expAvgsRef1", exp_avgs1);
  print("expAvgSqsRef1", exp_avg_sqs1);
  print("maxExpAvgSqsRef1", max_exp_avg_sqs1);
  print("paramsRef2", params2);
  print("expAvgsRef2", exp_avgs2);
  print("expAvgSqsRef2", exp_avg_sqs2);
  print("maxExpAvgSqsRef2", max_exp_avg_sqs2);

  for (aclTensorList* l :
       {params_list, grads_list, exp_avgs_list, exp_avg_sqs_list, max_list, steps_list}) {
    aclDestroyTensorList(l);
  }
  aclDestroyTensor(scale);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
