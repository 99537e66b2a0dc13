// aclnnMatmul, aclnnBatchMatMul and aclnnAddmm samples, written as a CANN user writes them:
//   Matmul       self [2, 3, 4] @ mat2 [4, 5], mat2 a transposed view of a [5, 4] buffer (strides
//                {1, 4}: read where it is), cubeMathType 0 (KEEP_DTYPE)
//   BatchMatMul  self [2, 3, 4] @ mat2 [1, 4, 2] (mat2's batch broadcast)
//   Addmm        0.5 * bias [5] + 2 * (mat1 [3, 4] @ mat2 [4, 5])
// The values are small multiples of 1/4, so every product and sum is exact in fp32 and the results
// can be checked against numpy's float64 products (tests/test_examples.sh).
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_addmm.h"
#include "aclnnop/aclnn_batch_matmul.h"
#include "aclnnop/aclnn_matmul.h"

namespace {

std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

aclTensor* make_tensor(std::vector<float>& host, const std::vector<int64_t>& shape,
                       std::vector<int64_t> strides = {}, std::vector<int64_t> storage = {}) {
  if (strides.empty()) strides = row_major(shape);
  if (storage.empty()) storage = shape;
  return aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND,
                         storage.data(), storage.size(), host.data());
}

// (i % 7 - 3) / 4 for i = seed, seed + 1, ...
std::vector<float> values(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((static_cast<int>(i) + seed) % 7 - 3) / 4;
  return v;
}

// Runs phase two (after phase one's status `one`) with a workspace of the size it asked for.
bool run(const char* name, aclnnStatus one, uint64_t workspace_size, aclOpExecutor* executor,
         aclnnStatus (*two)(void*, uint64_t, aclOpExecutor*, aclrtStream)) {
  if (one != ACL_SUCCESS) {
    printf("%sGetWorkspaceSize failed. ERROR: %d (%s)\n", name, one, aclGetRecentErrMsg());
    return false;
  }
  void* workspace = nullptr;
  if (workspace_size > 0 &&
      aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return false;
  }
  const aclnnStatus ret = two(workspace, workspace_size, executor, nullptr);
  if (workspace != nullptr) aclrtFree(workspace);
  if (ret != ACL_SUCCESS) {
    printf("%s failed. ERROR: %d (%s)\n", name, ret, aclGetRecentErrMsg());
    return false;
  }
  printf("%s workspace %llu bytes\n", name, static_cast<unsigned long long>(workspace_size));
  return true;
}

void print(const char* name, const std::vector<float>& v) {
  printf("%s:", name);
  for (float x : v) printf(" %g", x);
  printf("\n");
}

}  // namespace

int main() {
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;

  // Matmul: mat2 [4, 5] is the transpose of the [5, 4] buffer mat2t.
  std::vector<float> self = values(24, 0), mat2t = values(20, 2), out(30, 0.0f);
  aclTensor* ts = make_tensor(self, {2, 3, 4});
  aclTensor* tm = make_tensor(mat2t, {4, 5}, {1, 4}, {5, 4});
  aclTensor* to = make_tensor(out, {2, 3, 5});
  aclnnStatus ret = aclnnMatmulGetWorkspaceSize(ts, tm, to, 0, &size, &executor);
  if (!run("aclnnMatmul", ret, size, executor, aclnnMatmul)) return 1;
  print("matmul", out);

  // BatchMatMul: mat2's batch of 1 is broadcast.
  std::vector<float> b2 = values(8, 5), bout(12, 0.0f);
  aclTensor* tb = make_tensor(b2, {1, 4, 2});
  aclTensor* tbo = make_tensor(bout, {2, 3, 2});
  ret = aclnnBatchMatMulGetWorkspaceSize(ts, tb, tbo, 0, &size, &executor);
  if (!run("aclnnBatchMatMul", ret, size, executor, aclnnBatchMatMul)) return 1;
  print("batch_matmul", bout);

  // Addmm: out = 0.5 * bias + 2 * (mat1 @ mat2), bias broadcast over the rows.
  std::vector<float> bias = values(5, 1), mat1 = values(12, 3), mat2 = values(20, 4), aout(15);
  aclTensor* tbias = make_tensor(bias, {5});
  aclTensor* t1 = make_tensor(mat1, {3, 4});
  aclTensor* t2 = make_tensor(mat2, {4, 5});
  aclTensor* tao = make_tensor(aout, {3, 5});
  float beta_value = 0.5f, alpha_value = 2.0f;
  aclScalar* beta = aclCreateScalar(&beta_value, ACL_FLOAT);
  aclScalar* alpha = aclCreateScalar(&alpha_value, ACL_FLOAT);
  ret = aclnnAddmmGetWorkspaceSize(tbias, t1, t2, beta, alpha, tao, 0, &size, &executor);
  if (!run("aclnnAddmm", ret, size, executor, aclnnAddmm)) return 1;
  print("addmm", aout);

  for (aclTensor* t : {ts, tm, to, tb, tbo, tbias, t1, t2, tao}) aclDestroyTensor(t);
  aclDestroyScalar(beta);
  aclDestroyScalar(alpha);
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
