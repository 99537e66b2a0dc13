// Names of status codes.
#include "mantissa/status.h"

namespace mantissa {

const char* status_code_name(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kSuccess: return "ACLNN_SUCCESS";
    case StatusCode::kParamNullptr: return "ACLNN_ERR_PARAM_NULLPTR";
    case StatusCode::kParamInvalid: return "ACLNN_ERR_PARAM_INVALID";
    case StatusCode::kRuntimeError: return "ACLNN_ERR_RUNTIME_ERROR";
    case StatusCode::kInner: return "ACLNN_ERR_INNER";
    case StatusCode::kInferShape: return "ACLNN_ERR_INNER_INFERSHAPE_ERROR";
    case StatusCode::kTiling: return "ACLNN_ERR_INNER_TILING_ERROR";
    case StatusCode::kFindKernel: return "ACLNN_ERR_INNER_FIND_KERNEL_ERROR";
    case StatusCode::kCreateExecutor: return "ACLNN_ERR_INNER_CREATE_EXECUTOR";
    case StatusCode::kNotTransExecutor: return "ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR";
    case StatusCode::kInnerNullptr: return "ACLNN_ERR_INNER_NULLPTR";
  }
  return "UNKNOWN";
}

}  // namespace mantissa
