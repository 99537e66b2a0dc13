// aclnnQuantize sample: x [4, 2] (fp32), per-channel scales {1, -3} and INT32 zero points
// {2, 10} along axis 1, dtype INT32 (the values of CANN's own sample); prints out.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quantize.h"

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
  std::vector<float> x{0.3382f, -0.0919f, 0.7564f, 0.0234f, 3.1024f, 1.0761f, 0.4228f, 1.4621f};
  std::vector<float> scales{1.0f, -3.0f};
  std::vector<int32_t> zero_points{2, 10};
  std::vector<int32_t> out(8, 0);
  aclTensor* tx = make_tensor(x, {4, 2}, ACL_FLOAT);
  aclTensor* ts = make_tensor(scales, {2}, ACL_FLOAT);
  aclTensor* tz = make_tensor(zero_points, {2}, ACL_INT32);
  aclTensor* to = make_tensor(out, {4, 2}, ACL_INT32);

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret =
      aclnnQuantizeGetWorkspaceSize(tx, ts, tz, ACL_INT32, 1, to, &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnQuantizeGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnQuantize(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnQuantize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  for (size_t i = 0; i < out.size(); ++i) printf("out[%zu] is: %d\n", i, out[i]);

  for (aclTensor* t : {tx, ts, tz, to}) aclDestroyTensor(t);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
