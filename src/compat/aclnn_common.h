// Checks shared by the aclnn entry points: null and foreign aclTensor pointers, formats.
#pragma once

#include <fmt/format.h>

#include <span>
#include <string>

#include "aclnn/acl_meta.h"
#include "compat/compat_internal.h"
#include "compat/tensor_internal.h"

namespace mantissa::compat {

// A tensor argument of an aclnn function, named as in the C signature.
struct TensorArg {
  const char* name;
  const aclTensor* tensor;
};

// Null pointers first (161001), then pointers that are not live aclTensors (161002, looked up
// without being dereferenced), then formats: operators accept ACL_FORMAT_ND only (161002).
// Returns ACLNN_SUCCESS or the failing code, with the reason recorded.
inline aclnnStatus check_tensor_args(const char* fn, std::span<const TensorArg> args) {
  for (const TensorArg& a : args) {
    if (a.tensor == nullptr) {
      set_recent_error(fmt::format("{}: {} is null", fn, a.name));
      return ACLNN_ERR_PARAM_NULLPTR;
    }
  }
  for (const TensorArg& a : args) {
    if (!tensor_is_live(a.tensor)) {
      set_recent_error(fmt::format("{}: {} ({}) is not a live aclTensor", fn, a.name,
                                   static_cast<const void*>(a.tensor)));
      return ACLNN_ERR_PARAM_INVALID;
    }
  }
  for (const TensorArg& a : args) {
    if (a.tensor->format != ACL_FORMAT_ND) {
      set_recent_error(fmt::format("{}: {} format {} is not supported (expected ND, {})", fn,
                                   a.name, a.tensor->format, static_cast<int>(ACL_FORMAT_ND)));
      return ACLNN_ERR_PARAM_INVALID;
    }
  }
  return ACLNN_SUCCESS;
}

// Null workspaceSize / executor out-pointers: 161001.
template <class A, class B>
aclnnStatus check_out_pointers(const char* fn, const A* workspace_size, const B* executor) {
  if (workspace_size == nullptr || executor == nullptr) {
    set_recent_error(fmt::format("{}: {} is null", fn,
                                 workspace_size == nullptr ? "workspaceSize" : "executor"));
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  return ACLNN_SUCCESS;
}

}  // namespace mantissa::compat
