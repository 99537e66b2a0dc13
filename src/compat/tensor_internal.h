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

// The tensor as a C++ view: data advanced by offset elements, dtype mapped one to one (unknown
// values stay unknown so operators reject them), the full rank kept (a rank above kMaxRank is
// visible as such; only the first kMaxRank dims are stored).
TensorView to_view(const aclTensor& tensor);

}  // namespace mantissa::compat
