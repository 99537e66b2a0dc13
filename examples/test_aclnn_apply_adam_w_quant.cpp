// aclnnApplyAdamWQuant sample in CANN's style, with upstream's attributes (lr, beta1, beta2,
// weightDecay 0.1, eps 0.01, gnormScale 0.1, quantMode "BLOCKWISE", blockSize 256, step 0,
// absmax {5} and {3}, shape [1, 256]) but data that exercise the step: var and grad ramps, codes
// spread over the maps, and bitsandbytes' dynamic maps (signed for m, unsigned for v). Prints the
// updated var, the new codes and the new absmax.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_apply_adam_w_quant.h"
#include "mantissa/ops/apply_adam_w_quant.h"

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
  const int n = 256;
  std::vector<float> var(n), grad(n);
  std::vector<uint8_t> m(n), v(n);
  for (int i = 0; i < n; ++i) {
    var[i] = static_cast<float>(i - 128) / 64.0f;
    grad[i] = static_cast<float>((i * 37) % 101 - 50) / 16.0f;
    m[i] = static_cast<uint8_t>((i * 7) % 256);
    v[i] = static_cast<uint8_t>(128 + (i * 11) % 128);
  }
  const auto signed_map = mantissa::dynamic_quant_map(true);
  const auto unsigned_map = mantissa::dynamic_quant_map(false);
  std::vector<float> qmap_m(signed_map.begin(), signed_map.end());
  std::vector<float> qmap_v(unsigned_map.begin(), unsigned_map.end());
  std::vector<float> absmax_m{5}, absmax_v{3};
  std::vector<int64_t> step{0};
  aclTensor* t_var = make_tensor(var, {1, n}, ACL_FLOAT);
  aclTensor* t_grad = make_tensor(grad, {1, n}, ACL_FLOAT);
  aclTensor* t_m = make_tensor(m, {1, n}, ACL_UINT8);
  aclTensor* t_v = make_tensor(v, {1, n}, ACL_UINT8);
  aclTensor* t_qm = make_tensor(qmap_m, {256}, ACL_FLOAT);
  aclTensor* t_qv = make_tensor(qmap_v, {256}, ACL_FLOAT);
  aclTensor* t_am = make_tensor(absmax_m, {1}, ACL_FLOAT);
  aclTensor* t_av = make_tensor(absmax_v, {1}, ACL_FLOAT);
  aclTensor* t_step = make_tensor(step, {1}, ACL_INT64);

  const float lr = 0.1f, beta1 = 0.1f, beta2 = 0.1f, weight_decay = 0.1f, eps = 0.01f,
              gnorm_scale = 0.1f;
  const int64_t block_size = 256;
  char quant_mode[] = "BLOCKWISE";
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnApplyAdamWQuantGetWorkspaceSize(
      t_var, t_grad, t_m, t_v, t_qm, t_qv, t_am, t_av, t_step, lr, beta1, beta2, weight_decay, eps,
      gnorm_scale, quant_mode, block_size, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnApplyAdamWQuantGetWorkspaceSize failed. ERROR: %d (%s)\n", ret,
           aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnApplyAdamWQuant(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnApplyAdamWQuant failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  printf("var:");
  for (float x : var) printf(" %.9g", x);
  printf("\nm:");
  for (uint8_t c : m) printf(" %d", c);
  printf("\nv:");
  for (uint8_t c : v) printf(" %d", c);
  printf("\nabsmaxM: %.9g\nabsmaxV: %.9g\n", absmax_m[0], absmax_v[0]);

  for (aclTensor* t : {t_var, t_grad, t_m, t_v, t_qm, t_qv, t_am, t_av, t_step}) {
    aclDestroyTensor(t);
  }
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
