// aclnnDynamicMxQuant sample with a FLOAT4_E2M1 destination, written as CANN's samples are: x
// [2, 32] BFLOAT16 (row r: (i - 16) / 4 * 2^r), roundMode "floor", dstType 40, blocksize 32,
// scaleAlg 0. yOut holds two codes per byte (element 2i in the low nibble); prints the bytes and
// the E8M0 scale codes.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dynamic_mx_quant.h"

namespace {

template <class T>
aclTensor* make_tensor(std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType dt) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return aclCreateTensor(shape.data(), shape.size(), dt, strides.data(), 0, ACL_FORMAT_ND,
                         shape.data(), shape.size(), host.data());
}

// bf16 bits of a value that bf16 holds exactly.
uint16_t bf16_bits(float f) {
  uint32_t u;
  static_assert(sizeof u == sizeof f);
  __builtin_memcpy(&u, &f, sizeof u);
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace

int main() {
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  std::vector<uint16_t> x(64);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 32; ++i)
      x[r * 32 + i] = bf16_bits(static_cast<float>(i - 16) / 4.0f * (r + 1));
  }
  std::vector<uint8_t> y(32, 0);       // [2, 32] FLOAT4_E2M1: 64 codes in 32 bytes
  std::vector<uint8_t> mxscale(4, 0);  // [2, 1, 2]
  aclTensor* tx = make_tensor(x, {2, 32}, ACL_BF16);
  std::vector<int64_t> y_shape{2, 32}, y_strides{32, 1};
  aclTensor* ty = aclCreateTensor(y_shape.data(), 2, ACL_FLOAT4_E2M1, y_strides.data(), 0,
                                  ACL_FORMAT_ND, y_shape.data(), 2, y.data());
  aclTensor* ts = make_tensor(mxscale, {2, 1, 2}, ACL_FLOAT8_E8M0);

  char round_mode[] = "floor";
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus ret = aclnnDynamicMxQuantGetWorkspaceSize(tx, -1, round_mode, 40, 32, 0, ty, ts,
                                                        &workspace_size, &executor);
  if (ret != ACL_SUCCESS) {
    printf("aclnnDynamicMxQuantGetWorkspaceSize failed. ERROR: %d (%s)\n", ret,
           aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  ret = aclnnDynamicMxQuant(workspace, workspace_size, executor, nullptr);
  if (ret != ACL_SUCCESS) {
    printf("aclnnDynamicMxQuant failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
    return 1;
  }
  for (size_t i = 0; i < y.size(); ++i) printf("yOut byte[%zu] is: %d\n", i, y[i]);
  for (size_t i = 0; i < mxscale.size(); ++i) printf("mxscaleOut[%zu] is: %d\n", i, mxscale[i]);

  for (aclTensor* t : {tx, ty, ts}) aclDestroyTensor(t);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
