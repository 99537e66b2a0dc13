// The object behind the opaque aclTensor handle, the registry of live tensors, and the
// conversion to the C++ API's TensorView.
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/acl_meta.h"
#include "mantissa/tensor.h"

// The C handle is a plain struct in the global namespace (its tag is declared there by the C
// header). Dims, strides and offset are in elements, as the caller gave them.
struct aclTensor {
  std::vector<int64_t> view_dims;  // any rank
  std::vector<int64_t> strides;    // one per view dim
  int64_t offset = 0;              // elements from `data` to the view's first element
  // The caller's enum values as integers: C callers may pass values outside the C++ enums'
  // ranges, which must be rejected by operators, not loaded as enums.
  int32_t dtype = ACL_DT_UNDEFINED;
  int32_t format = ACL_FORMAT_ND;
  std::vector<int64_t> storage_dims;
  void* data = nullptr;
};

namespace mantissa::compat {

// Whether `tensor` came from aclCreateTensor and was not destroyed. Looked up, not dereferenced.
bool tensor_is_live(const aclTensor* tensor);
// The serial number the registry gave `tensor` (never reissued), or 0 when it is not live.
uint64_t tensor_serial(const aclTensor* tensor);
// Unregisters and deletes `tensor` if it is live and, when `serial` is non-zero, still the tensor
// registered under that serial number (not a later one at the same address). Returns whether it
// did. Never dereferences a handle that is not live.
bool destroy_tensor(const aclTensor* tensor, uint64_t serial);

// The tensor as a C++ view: data advanced by offset elements, dtype mapped one to one (unknown
// values stay unknown so operators reject them), the full rank kept (a rank above kMaxRank is
// visible as such; only the first kMaxRank dims are stored).
TensorView to_view(const aclTensor& tensor);

}  // namespace mantissa::compat
